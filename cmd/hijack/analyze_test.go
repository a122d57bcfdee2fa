package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hijack/archive"
	"hijack/internal/testutil"
)

// TestAnalyzeJSON checks the --json contract: per function name, blocks
// (start, end, loop_depth, cycles, score, mem_ops, insns, succs) and calls.
func TestAnalyzeJSON(t *testing.T) {
	obj := testutil.Compile(t, t.TempDir(), "gcc", "../../testdata/src/loops.c", "-O1", "-fno-inline")
	var out, errb bytes.Buffer
	if st := run([]string{"analyze", "--json", obj}, &out, &errb); st != 0 {
		t.Fatalf("status %d: %s", st, errb.String())
	}
	var fns []map[string]any
	if err := json.Unmarshal(out.Bytes(), &fns); err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	for _, f := range fns {
		for _, k := range []string{"name", "blocks", "calls"} {
			if _, ok := f[k]; !ok {
				t.Fatalf("function without %q: %v", k, f)
			}
		}
		byName[f["name"].(string)] = f
		for _, b := range f["blocks"].([]any) {
			blk := b.(map[string]any)
			for _, k := range []string{"start", "end", "loop_depth", "cycles", "score", "mem_ops", "insns", "succs"} {
				if _, ok := blk[k]; !ok {
					t.Fatalf("%s: block without %q", f["name"], k)
				}
			}
			if s := blk["score"].(float64); s < 0 || s > 1 {
				t.Fatalf("score %v", s)
			}
		}
	}
	maxDepth := func(name string) float64 {
		d := 0.0
		for _, b := range byName[name]["blocks"].([]any) {
			d = max(d, b.(map[string]any)["loop_depth"].(float64))
		}
		return d
	}
	if maxDepth("nested3") != 3 || maxDepth("straight") != 0 {
		t.Errorf("loop depths: nested3 %v straight %v", maxDepth("nested3"), maxDepth("straight"))
	}
	calls := byName["caller_depth2"]["calls"].([]any)
	if len(calls) == 0 || calls[0] != "deep_callee" {
		t.Errorf("caller_depth2 calls %v", calls)
	}
	// The callee of a depth-2 loop inherits 2 cycles.
	for _, b := range byName["deep_callee"]["blocks"].([]any) {
		if c := b.(map[string]any)["cycles"].(float64); c != 2 {
			t.Errorf("deep_callee block cycles %v, want 2", c)
		}
	}

	out.Reset()
	if st := run([]string{"analyze", "--dot", "nested2", obj}, &out, &errb); st != 0 || !strings.HasPrefix(out.String(), "digraph") {
		t.Fatalf("--dot: status %d: %s", st, out.String())
	}
	out.Reset()
	if st := run([]string{"dump", "--func", "single", obj}, &out, &errb); st != 0 || !strings.Contains(out.String(), "<single>:") || strings.Contains(out.String(), "<nested2>") {
		t.Fatalf("dump --func: status %d\n%s", st, out.String())
	}
}

// Archives, regular and thin, for dump, analyze and the rewrite: every
// member under its name; a thin archive comes out of the rewrite as a
// regular one whose members are rewritten, and the program linked with it
// still works.
func TestArchiveInputs(t *testing.T) {
	testutil.Need(t, "gcc", "ar")
	dir := t.TempDir()
	loops, kitchen := testObjects(t, dir)
	for _, kind := range []string{"rcs", "rcT"} {
		lib := filepath.Join(dir, "lib"+kind+".a")
		makeArchive(t, kind, lib, loops, kitchen)
		var out, errb bytes.Buffer
		if st := run([]string{"analyze", "--json", lib}, &out, &errb); st != 0 {
			t.Fatalf("%s: analyze: status %d: %s", kind, st, errb.String())
		}
		var fns []map[string]any
		if err := json.Unmarshal(out.Bytes(), &fns); err != nil {
			t.Fatal(err)
		}
		objects := map[string]int{}
		for _, f := range fns {
			objects[f["object"].(string)]++
		}
		for _, m := range []string{loops, kitchen} {
			if name := lib + "(" + filepath.Base(m) + ")"; objects[name] == 0 {
				t.Errorf("%s: analyze --json has no functions of %s: %v", kind, name, objects)
			}
		}
		out.Reset()
		if st := run([]string{"dump", "--member", filepath.Base(loops), "--func", "nested3", lib}, &out, &errb); st != 0 ||
			!strings.Contains(out.String(), "("+filepath.Base(loops)+"):\n") || !strings.Contains(out.String(), "<nested3>:") || strings.Contains(out.String(), filepath.Base(kitchen)) {
			t.Errorf("%s: dump --member: status %d\n%s%s", kind, st, out.String(), errb.String())
		}
		// The rewrite: a regular archive with every member rewritten.
		rewritten := filepath.Join(dir, "out-"+kind+".a")
		if st := run([]string{"-p", "pad", lib, rewritten}, &out, &errb); st != 0 {
			t.Fatalf("%s: rewrite: status %d: %s", kind, st, errb.String())
		}
		data, _ := os.ReadFile(rewritten)
		ms, err := archive.Read(data)
		if err != nil || archive.IsThin(data) || len(ms) != 2 {
			t.Fatalf("%s: rewritten archive: %v, thin %v, %d members", kind, err, archive.IsThin(data), len(ms))
		}
		for i, orig := range []string{loops, kitchen} {
			o, _ := os.ReadFile(orig)
			if ms[i].Name != filepath.Base(orig) || len(ms[i].Data) <= len(o) {
				t.Errorf("%s: member %d %s (%d bytes) is not %s rewritten (%d bytes)", kind, i, ms[i].Name, len(ms[i].Data), orig, len(o))
			}
		}
	}
}

// An archive member that is LTO IR fails the rewrite (linked, it would be
// code without instrumentation); a member that is no object at all is kept
// with a warning.
func TestArchiveOddMembers(t *testing.T) {
	testutil.Need(t, "clang", "ar")
	dir := t.TempDir()
	plain := testutil.Compile(t, dir, "clang", "../../testdata/src/loops.c", "-O1")
	bitcode := testutil.Compile(t, dir, "clang", "../../testdata/src/kitchen.c", "-O2", "-flto")
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("not an object\n"), 0o644)
	for _, tt := range []struct {
		members []string
		status  int
		stderr  string
	}{
		{[]string{plain, bitcode}, 1, "member " + filepath.Base(bitcode) + ": LTO object (LLVM bitcode): compile with -fno-lto"},
		{[]string{notes, plain}, 0, "(notes.txt): warning: not an ELF object"},
	} {
		lib := filepath.Join(dir, "lib.a")
		os.Remove(lib)
		makeArchive(t, "rcs", lib, tt.members...)
		var out, errb bytes.Buffer
		st := run([]string{"-p", "pad", lib, filepath.Join(dir, "out.a")}, &out, &errb)
		if st != tt.status || !strings.Contains(errb.String(), tt.stderr) {
			t.Errorf("%v: status %d, stderr %q; want %d and %q", tt.members, st, errb.String(), tt.status, tt.stderr)
		}
	}
}

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Fat LTO: an object compiled with -flto -ffat-lto-objects carries machine
// code and GIMPLE. hijack rewrites the code and removes the IR (with a
// warning), so that a program linked with -flto runs the instrumented
// code: with vptrace, it writes a trace that names the rewritten
// functions. Before, the linker plugin compiled the IR again and the
// program ran without instrumentation and wrote no trace.
func TestFatLTO(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	if cfg.fake {
		t.Skipf("HIJACK=%s is the copy-through stand-in", rel(cfg.hijack))
	}
	lib := vptLib(t)
	dir := workDir(t)
	flags := []string{"-O2", "-flto", "-ffat-lto-objects"}
	var objs, insts []string
	for _, src := range []string{"main.c", "hashtab.c", "text.c"} {
		obj := filepath.Join(dir, strings.TrimSuffix(src, ".c")+".o")
		copyFile(t, compile(t, "gcc", flags, testdata("demo", src)), obj)
		objs = append(objs, obj)
		if src == "main.c" {
			insts = append(insts, obj) // main stays plain
			continue
		}
		inst := strings.TrimSuffix(obj, ".o") + ".inst.o"
		args := []string{"-rules", filepath.Join(cfg.root, "testdata", "rules", "vptrace.yaml"), obj, inst}
		r := mustRun(t, spec{Dir: dir, Timeout: 5 * time.Minute}, cfg.hijack, args...)
		if r.Exit != 0 {
			t.Fatalf("%s: %s\n%s", cmdline("hijack", args...), r.status(), r.Stderr)
		}
		if !bytes.Contains(r.Stderr, []byte("fat LTO object: LTO IR removed, so that the link uses the instrumented code")) {
			t.Errorf("%s: no fat LTO warning; stderr:\n%s", src, r.Stderr)
		}
		insts = append(insts, inst)
	}
	input := testdata("demo", "input.txt")
	plain, app := filepath.Join(dir, "plain"), filepath.Join(dir, "app")
	link(t, "gcc", plain, objs, flags...)
	link(t, "gcc", app, insts, append(flags, lib, "-lpthread")...)
	in, err := os.ReadFile(input)
	if err != nil {
		t.Fatal(err)
	}
	a := mustRun(t, spec{Dir: dir, Stdin: in, Timeout: time.Minute}, plain)
	trace := filepath.Join(dir, "app.vpt")
	b := mustRun(t, spec{Dir: dir, Stdin: in, Timeout: time.Minute, Env: []string{"VPTRACE_OUT=" + trace}}, app)
	if !compareRuns(t, dir, "fat LTO program", a, b) {
		return
	}
	if _, err := os.Stat(trace); err != nil {
		t.Fatalf("the program linked with -flto wrote no trace (the instrumentation is not live): %v", err)
	}
	rr := mustRun(t, spec{Dir: dir, Timeout: time.Minute}, cfg.hijack, "report", "--csv", trace)
	// The trace names the rewritten object and its functions.
	if rr.Exit != 0 || !bytes.Contains(rr.Stdout, []byte(",table_add,")) || !bytes.Contains(rr.Stdout, []byte(",hashtab.o,")) {
		t.Errorf("hijack report --csv %s: %s\n%s\n%s", rel(trace), rr.status(), tail(rr.Stdout, 1500), tail(rr.Stderr, 1000))
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hijack/internal/testutil"
	"hijack/preset"
	"hijack/preset/all"
)

// TestCommandLine: the exit-status scheme (0 ok, 1 bad input, 2 usage),
// one-line errors starting "hijack: ", help topics, --version, and options
// that used to be ignored (--param with --rules, -j < 1, help TOPIC).
func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	obj := testutil.Compile(t, dir, "gcc", "../../testdata/src/loops.c", "-O1")
	rulesFile := filepath.Join(dir, "r.yaml")
	os.WriteFile(rulesFile, []byte("version: 1\nrules:\n  - preset: pad\n"), 0o644)
	badRules := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badRules, []byte("version: 1\nrules:\n  - preset: pad\n    params: {sed: 1}\n"), 0o644)
	out := filepath.Join(dir, "out.o")
	// A sparse 5 GiB file: refused before it is read into memory.
	huge := filepath.Join(dir, "huge.o")
	if f, err := os.Create(huge); err == nil {
		f.Truncate(5 << 30)
		f.Close()
	}
	for _, tt := range []struct {
		args   []string
		status int
		stdout string // substring
		stderr string // substring of the one error line
	}{
		{[]string{"--version"}, 0, "rules file version 1, trace format", ""},
		{[]string{"version"}, 0, "hijack ", ""},
		{[]string{"help"}, 0, "Exit status", ""},
		{[]string{"help", "cc"}, 0, "Usage: hijack cc", ""},
		{[]string{"help", "presets"}, 0, "threshold", ""},
		{[]string{"help", "files"}, 0, "written into, never", ""},
		{[]string{"help", "rules"}, 0, "version: 1", ""},
		{[]string{"help", "bogus"}, 2, "", `hijack: help: unknown topic "bogus"`},
		{[]string{"help", "cc", "dump"}, 2, "", "hijack: help: want at most one topic"},
		{[]string{"-p", "pad", "-j", "0", obj, out}, 2, "", "--jobs 0: want a number of parallel jobs >= 1"},
		{[]string{"-p", "pad", "-j", "-3", obj, out}, 2, "", "--jobs -3"},
		{[]string{"-p", "pad", "--jobs=x", obj, out}, 2, "", "hijack: invalid argument"},
		{[]string{"--rules", rulesFile, "--param", "bogus=1", obj, out}, 2, "", `no rule's preset has a parameter "bogus"`},
		{[]string{"--rules", rulesFile, "--param", "maxlen=99", obj, out}, 2, "", "maxlen"},
		{[]string{"--rules", rulesFile, "--param", "maxlen=1", obj, out}, 0, "", ""},
		{[]string{"--rules", badRules, obj, out}, 1, "", `bad.yaml:4: rule 1: unknown key "sed"`},
		{[]string{"--rules", filepath.Join(dir, "none.yaml"), obj, out}, 1, "", "none.yaml: no such file"},
		{[]string{"--rules", rulesFile, "-p", "pad", obj, out}, 2, "", "either --rules or --preset"},
		{[]string{"-p", "pad", obj}, 2, "", "want IN and OUT, got 1"},
		{[]string{"-p", "pad", filepath.Join(dir, "missing.o"), out}, 1, "", "missing.o: no such file or directory"},
		{[]string{"-p", "pad", huge, out}, 1, "", "huge.o: 5368709120 bytes: larger than any object or archive hijack reads"},
		{[]string{"dump", huge}, 1, "", "huge.o: 5368709120 bytes"},
		{[]string{"-p", "pad", dir, out}, 1, "", ": is a directory"},
		{[]string{"dump"}, 2, "", "hijack: dump: want one IN.o or IN.a"},
		{[]string{"dump", "--bogus", obj}, 2, "", "hijack: dump: unknown flag: --bogus (see hijack help dump)"},
		{[]string{"analyze", "--json", "--dot", "f", obj}, 2, "", "exclude each other"},
		{[]string{"analyze", filepath.Join(dir, "missing.o")}, 1, "", "missing.o: no such file"},
		{[]string{"cc"}, 2, "", "hijack: cc: no compiler command"},
		{[]string{"cc", "--bogus", "--", "gcc"}, 2, "", "hijack: cc: unknown flag"},
	} {
		var o, e bytes.Buffer
		st := run(tt.args, &o, &e)
		lines := strings.Split(strings.TrimSuffix(e.String(), "\n"), "\n")
		switch {
		case st != tt.status:
			t.Errorf("%q: status %d, want %d (stderr %q)", tt.args, st, tt.status, e.String())
		case !strings.Contains(o.String(), tt.stdout):
			t.Errorf("%q: stdout lacks %q:\n%s", tt.args, tt.stdout, o.String())
		case tt.stderr == "" && e.Len() != 0:
			t.Errorf("%q: unexpected stderr %q", tt.args, e.String())
		case tt.stderr != "" && (len(lines) != 1 || !strings.HasPrefix(lines[0], "hijack: ") || !strings.Contains(lines[0], tt.stderr)):
			t.Errorf("%q: stderr %q, want one line \"hijack: ...%s...\"", tt.args, e.String(), tt.stderr)
		}
	}
}

// --param on top of --rules really changes what is done.
func TestParamOverRules(t *testing.T) {
	dir := t.TempDir()
	obj := testutil.Compile(t, dir, "gcc", "../../testdata/src/loops.c", "-O1")
	rulesFile := filepath.Join(dir, "r.yaml")
	os.WriteFile(rulesFile, []byte("version: 1\nrules:\n  - preset: pad\n    params: {seed: 1}\n"), 0o644)
	outs := map[string][]byte{}
	for name, args := range map[string][]string{
		"file":     {"--rules", rulesFile},
		"override": {"--rules", rulesFile, "--param", "seed=2"},
		"preset":   {"-p", "pad", "--param", "seed=2"},
	} {
		out := filepath.Join(dir, name+".o")
		var o, e bytes.Buffer
		if st := run(append(args, obj, out), &o, &e); st != 0 {
			t.Fatalf("%s: status %d: %s", name, st, e.String())
		}
		outs[name], _ = os.ReadFile(out)
	}
	if bytes.Equal(outs["file"], outs["override"]) || !bytes.Equal(outs["override"], outs["preset"]) {
		t.Errorf("--param seed=2 over a rules file with seed 1 was not applied (file==override %v, override==preset %v)",
			bytes.Equal(outs["file"], outs["override"]), bytes.Equal(outs["override"], outs["preset"]))
	}
}

// TestHelpPresets: `hijack help presets` is generated from the presets of
// the build: every preset with its doc, every parameter key, and the
// runtime hijack cc links for the presets that have one.
func TestHelpPresets(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if st := run([]string{"help", "presets"}, &stdout, &stderr); st != 0 {
		t.Fatalf("help presets: status %d: %s", st, stderr.String())
	}
	help := stdout.String()
	for _, p := range all.Presets() {
		spec := p.Spec()
		if !strings.Contains(help, "\n"+spec.Name+": "+spec.Doc+"\n") {
			t.Errorf("no entry for preset %s", spec.Name)
		}
		for _, ps := range spec.Params {
			if !strings.Contains(help, "\n  "+ps.Name) || !strings.Contains(help, ps.Doc) {
				t.Errorf("preset %s: parameter %s missing", spec.Name, ps.Name)
			}
		}
		if wr, ok := p.(preset.WithRuntime); ok && !strings.Contains(help, "runtime: "+wr.Runtime().Shared+" ("+wr.Runtime().Static) {
			t.Errorf("preset %s: runtime %s not shown", spec.Name, wr.Runtime().Shared)
		}
	}
}

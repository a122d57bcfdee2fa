package rewrite_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hijack/elfobj"
	"hijack/internal/testutil"
	"hijack/preset/all"
	"hijack/rewrite"
	"hijack/rules"
)

// TestMarker: every rewritten object names hijack and its presets in
// .note.hijack; an object that carries it (or, from before the marker,
// vptrace's .vptrace section) is refused, also after ld -r; the note
// survives linking (readelf -n shows it) and changes nothing else.
func TestMarker(t *testing.T) {
	testutil.Need(t, "gcc", "ld", "readelf")
	dir := t.TempDir()
	src := "../testdata/src/kitchen.c"
	obj := testutil.Compile(t, dir, "gcc", src, "-O2")
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	two, err := rules.Parse("two.yaml", []byte("version: 1\nrules:\n  - preset: vptrace\n    functions: [\"main\"]\n  - preset: pad\n"), all.Presets().Registry())
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rw := make(map[string][]byte)
	for _, c := range []struct {
		name string
		rf   *rules.File
		want string
	}{
		{"vptrace", presetRules(t, "vptrace"), "vptrace"},
		{"pad", padRules(t), "pad"},
		{"clobber", presetRules(t, "clobber"), "clobber"},
		{"two", two, "vptrace, pad"},
	} {
		out, _, err := rewrite.Rewrite("k.o", data, c.rf, allPresets(), nil)
		if err != nil {
			t.Fatal(err)
		}
		rw[c.name] = out
		f, err := elfobj.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		if ps, ok := rewrite.Marker(f); !ok || strings.Join(ps, ", ") != c.want {
			t.Errorf("%s: marker %v %v, want %s", c.name, ps, ok, c.want)
		}
		// A second pass, with any rules, is refused.
		_, _, err = rewrite.Rewrite("k.inst.o", out, padRules(t), allPresets(), nil)
		want := "already rewritten by hijack (presets: " + c.want + "); rewrite the original object"
		if err == nil || err.Error() != want || !errors.Is(err, rewrite.ErrAlreadyRewritten) {
			t.Errorf("%s: second pass: %v, want %q", c.name, err, want)
		}
	}
	// An object vptrace rewrote before the marker existed has .vptrace.
	f, _ := elfobj.Read(rw["vptrace"])
	if err := f.RemoveSections(func(s *elfobj.Section) bool { return s.Name == rewrite.MarkerSection }, nil); err != nil {
		t.Fatal(err)
	}
	old, _ := f.Write()
	if _, _, err := rewrite.Rewrite("old.o", old, padRules(t), allPresets(), nil); err == nil || !strings.Contains(err.Error(), "already rewritten by hijack (presets: vptrace)") {
		t.Errorf("object without the marker but with .vptrace: %v", err)
	}
	// Rules that select nothing change nothing: no marker, and the object
	// may be rewritten later.
	none, _ := rules.Parse("none.yaml", []byte("version: 1\nrules:\n  - preset: pad\n    functions: [nothing]\n"), all.Presets().Registry())
	same, _, err := rewrite.Rewrite("k.o", data, none, allPresets(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := elfobj.Read(same); g == nil {
		t.Fatal("identity output does not read")
	} else if _, ok := rewrite.Marker(g); ok {
		t.Error("identity rewrite has a marker")
	}

	// ld -r keeps one note per object; the result is refused with the
	// presets of all.
	idioms, err := os.ReadFile(testutil.Compile(t, dir, "gcc", "../testdata/src/idioms.s"))
	if err != nil {
		t.Fatal(err)
	}
	idiomsRW, _, err := rewrite.Rewrite("idioms.o", idioms, presetRules(t, "clobber"), allPresets(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pad, clobber := write("pad.o", rw["pad"]), write("clobber.o", idiomsRW)
	other := testutil.CompileString(t, dir, "gcc", "other.c", "int other(int x) { return x * 3; }\n", "-O2")
	merged := filepath.Join(dir, "merged.o")
	if out, err := exec.Command("ld", "-r", pad, clobber, other, "-o", merged).CombinedOutput(); err != nil {
		t.Fatalf("ld -r: %v\n%s", err, out)
	}
	md, _ := os.ReadFile(merged)
	if _, _, err := rewrite.Rewrite("merged.o", md, padRules(t), allPresets(), nil); err == nil || !strings.Contains(err.Error(), "(presets: pad, clobber)") {
		t.Errorf("ld -r of two rewritten objects: %v", err)
	}
	// readelf -n shows the notes, in the object and in linked programs
	// (also from the ld -r output), which run as before.
	prog, progMerged := filepath.Join(dir, "prog"), filepath.Join(dir, "prog-merged")
	testutil.Link(t, "gcc", prog, pad)
	testutil.Link(t, "gcc", progMerged, merged)
	testutil.Link(t, "gcc", prog+"-orig", obj)
	if a, b := testutil.Run(10*time.Second, prog+"-orig"), testutil.Run(10*time.Second, progMerged); a != b || a.Exit != 0 {
		t.Errorf("program linked from the ld -r output: %+v, want %+v", b, a)
	}
	for _, p := range []string{merged, prog, progMerged} {
		out, err := exec.Command("readelf", "-nW", p).CombinedOutput()
		if err != nil || strings.Count(string(out), "hijack ") < 1 || strings.Contains(string(out), "readelf:") {
			t.Errorf("readelf -n %s: %v\n%s", filepath.Base(p), err, out)
		}
	}
	if a, b := testutil.Run(10*time.Second, prog+"-orig"), testutil.Run(10*time.Second, prog); a != b || a.Exit != 0 {
		t.Errorf("program with the marker: %+v, want %+v", b, a)
	}
}

package all

import (
	"flag"
	"os"
	"strings"
	"testing"

	"hijack/preset"
)

// TestPresets: the built-in set is consistent (unique names, specs the
// rules parser accepts), and every runtime a preset names is complete.
func TestPresets(t *testing.T) {
	ps := Presets()
	if err := ps.Check(); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		name := p.Spec().Name
		if wr, ok := p.(preset.WithRuntime); ok {
			rt := wr.Runtime()
			if rt.Shared == "" || rt.Static == "" {
				t.Errorf("preset %s: runtime %+v lacks a shared or a static library", name, rt)
			}
		}
		if _, ok := ps.Lookup(name); !ok {
			t.Errorf("Lookup(%q) failed", name)
		}
	}
	if _, ok := ps.Lookup("nosuch"); ok {
		t.Error("Lookup found a preset that is not there")
	}
}

var update = flag.Bool("update", false, "rewrite the README's table of presets")

// The README's table of presets and parameters, between these lines, is
// Registry.Markdown of the built-in presets.
const (
	tableBegin = "<!-- presets table: generated from the presets' specs by `go test ./preset/all -update` -->\n"
	tableEnd   = "<!-- end of presets table -->\n"
)

// TestREADMETable fails when the README's table of presets drifts from
// the specs the presets declare; -update rewrites it.
func TestREADMETable(t *testing.T) {
	const path = "../../README.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i, j := strings.Index(s, tableBegin), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no table between %q and %q", path, tableBegin, tableEnd)
	}
	ps := Presets()
	want := ps.Registry().Markdown(ps.Names()...)
	got := s[i+len(tableBegin) : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(s[:i+len(tableBegin)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the presets table differs from the presets' specs (go test ./preset/all -update rewrites it):\ngot:\n%s\nwant:\n%s", path, got, want)
}

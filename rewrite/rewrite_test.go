package rewrite_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hijack/elfobj"
	"hijack/internal/testutil"
	"hijack/preset"
	"hijack/preset/all"
	"hijack/preset/clobber"
	"hijack/preset/pad"
	"hijack/rewrite"
	"hijack/rules"
)

func padRules(t testing.TB, settings ...string) *rules.File {
	return presetRules(t, "pad", settings...)
}

var presets = preset.Set{pad.Preset{}, clobber.Preset{}}

func presetRules(t testing.TB, preset string, settings ...string) *rules.File {
	rf, err := rules.Default(all.Presets().Registry(), preset, settings...)
	if err != nil {
		t.Fatal(err)
	}
	return rf
}

// rewriteFile rewrites obj into a new file and returns its path.
func rewriteFile(t *testing.T, obj string, rf *rules.File) string {
	t.Helper()
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	out, _, err := rewrite.Rewrite(obj, data, rf, presets, func(w string) { warnings = append(warnings, w) })
	if err != nil {
		t.Fatalf("%s: %v", obj, err)
	}
	for _, w := range warnings {
		t.Logf("%s: warning: %s", filepath.Base(obj), w)
	}
	p := strings.TrimSuffix(obj, ".o") + ".rw.o"
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDifferential rewrites programs with the pad preset (code moves; with
// cold, out of line too) and the clobber preset (liveness is right) and
// checks that they print exactly what the originals print.
func TestDifferential(t *testing.T) {
	type prog struct {
		name, cc string
		srcs     []string
		flags    []string
		ldflags  []string
	}
	var progs []prog
	for _, fl := range [][]string{{"-O0"}, {"-O2"}, {"-O3", "-march=x86-64-v3"}, {"-Os", "-fomit-frame-pointer", "-fcf-protection"}, {"-O2", "-fno-pie"}, {"-O2", "-ffunction-sections", "-g"}} {
		ld := []string{}
		if fl[len(fl)-1] == "-fno-pie" {
			ld = []string{"-no-pie"}
		}
		progs = append(progs,
			prog{"kitchen", "gcc", []string{"kitchen.c"}, fl, ld},
			prog{"kitchen", "clang", []string{"kitchen.c"}, fl, ld},
			prog{"cxx", "g++", []string{"cxx.cpp"}, fl, ld},
			prog{"cxx", "clang++", []string{"cxx.cpp"}, fl, ld},
			prog{"idioms", "gcc", []string{"idioms.s", "idioms_main.c"}, fl, ld},
		)
	}
	for _, preset := range []string{"pad", "pad-after", "pad-cold", "clobber"} {
		for _, p := range progs {
			t.Run(preset+"/"+p.name+"/"+p.cc+strings.Join(p.flags, ""), func(t *testing.T) {
				t.Parallel()
				if strings.Contains(strings.Join(p.flags, " "), "x86-64-v3") && !testutil.HasAVX2() {
					t.Skip("CPU lacks AVX2")
				}
				dir := t.TempDir()
				var orig, padded []string
				for _, src := range p.srcs {
					obj := testutil.Compile(t, dir, p.cc, "../testdata/src/"+src, p.flags...)
					orig = append(orig, obj)
					var rf *rules.File
					switch preset {
					case "pad-after":
						rf = presetRules(t, "pad", "seed=5", "after=true")
					case "pad-cold":
						// (after too: cold parts of code on edges)
						rf = presetRules(t, "pad", "seed=9", "after=true", "cold=true")
					default:
						rf = presetRules(t, preset, "seed=3")
					}
					padded = append(padded, rewriteFile(t, obj, rf))
				}
				testutil.Link(t, p.cc, filepath.Join(dir, "a"), append(orig, p.ldflags...)...)
				testutil.Link(t, p.cc, filepath.Join(dir, "b"), append(padded, p.ldflags...)...)
				a := testutil.Run(10*time.Second, filepath.Join(dir, "a"))
				b := testutil.Run(10*time.Second, filepath.Join(dir, "b"))
				if a != b {
					t.Fatalf("outputs differ:\noriginal: %+v\nrewritten: %+v", a, b)
				}
				if a.Exit != 0 || a.Stdout == "" {
					t.Fatalf("original program failed: %+v", a)
				}
			})
		}
	}
}

// TestIdentity: rules that select no function leave every section as it was.
func TestIdentity(t *testing.T) {
	dir := t.TempDir()
	rf, err := rules.Parse("none.yaml", []byte("version: 1\nrules:\n  - preset: pad\n    functions: [\"__no_such_function__\"]\n"), all.Presets().Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"kitchen.c", "idioms.s"} {
		obj := testutil.Compile(t, dir, "gcc", "../testdata/src/"+src, "-O2")
		data, _ := os.ReadFile(obj)
		out, st, err := rewrite.Rewrite("test.o", data, rf, presets, nil)
		if err != nil {
			t.Fatal(err)
		}
		if st.Insertions != 0 {
			t.Fatalf("%d insertions", st.Insertions)
		}
		a, _ := elfobj.Read(data)
		b, err := elfobj.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range a.Sections {
			if !bytes.Equal(s.Data, b.Sections[i].Data) && s.Type != 8 {
				t.Errorf("%s: section %s changed", src, s.Name)
			}
		}
	}
}

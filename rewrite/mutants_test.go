package rewrite_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"hijack/elfobj"
	"hijack/internal/objmut"
	"hijack/internal/testutil"
	"hijack/preset"
	"hijack/preset/all"
	"hijack/rewrite"
	"hijack/rules"
)

// allPresets returns every preset of hijack.
func allPresets() preset.Set { return all.Presets() }

// presetConfigs are the rules the robustness tests and fuzz targets run:
// every preset, pad with insertions on fall-through edges and out of line
// too.
var presetConfigs = []struct{ preset, settings string }{
	{"pad", "after=true,cold=true"},
	{"clobber", ""},
	{"vptrace", "usestack=true"},
}

func configRules(t testing.TB, preset, settings string) *rules.File {
	var s []string
	if settings != "" {
		s = strings.Split(settings, ",")
	}
	return presetRules(t, preset, s...)
}

// checkRewrite runs the whole pipeline on data and checks the contract for
// bad input: no panic, a one-line error or an object that reads back, and
// no allocation out of proportion to the input (allocLimit, if not 0). It
// returns the output (nil on error) and whether the contract held.
func checkRewrite(t *testing.T, what string, data []byte, rf *rules.File, allocLimit uint64) (out []byte, ok bool) {
	t.Helper()
	var ms0, ms1 runtime.MemStats
	if allocLimit > 0 {
		runtime.ReadMemStats(&ms0)
	}
	var err error
	ok = true
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: %s", what, fmt.Sprintf(format, args...))
		ok = false
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
				fail("panic: %v\n%s", r, debug.Stack())
			}
		}()
		out, _, err = rewrite.Rewrite("mutant.o", data, rf, allPresets(), func(w string) {
			if strings.ContainsAny(w, "\n\r\x1b") {
				fail("warning with control characters %q", w)
			}
		})
	}()
	if allocLimit > 0 {
		runtime.ReadMemStats(&ms1)
		if a := ms1.TotalAlloc - ms0.TotalAlloc; a > allocLimit {
			fail("allocated %d bytes (limit %d)", a, allocLimit)
		}
	}
	if err != nil {
		if strings.ContainsAny(err.Error(), "\n\r\x1b") {
			fail("error with control characters %q", err)
		}
		return nil, ok
	}
	if _, err := elfobj.Read(out); err != nil {
		fail("output does not read back: %v", err)
		return nil, false
	}
	return out, ok
}

// TestMutants runs structured mutants of compiled objects (alignments,
// sizes, offsets, links, relocation and symbol indices, .eh_frame records,
// DWARF headers, ...; see package objmut) through the whole pipeline with
// every preset. A failure names the object, the preset and the mutation;
// HIJACK_MUTANTS=n runs n mutants per object and preset instead of 24,
// HIJACK_MUTANTS_SEED=s draws other ones;
// HIJACK_MUTANTS_DIR=dir keeps the failing mutants there.
func TestMutants(t *testing.T) {
	perObject := 24
	if testing.Short() {
		perObject = 6
	}
	if v, err := strconv.Atoi(os.Getenv("HIJACK_MUTANTS")); err == nil && v > 0 {
		perObject = v
	}
	seed, _ := strconv.ParseUint(os.Getenv("HIJACK_MUTANTS_SEED"), 10, 64)
	start := time.Now()
	objs := corpus(t)
	keep := os.Getenv("HIJACK_MUTANTS_DIR")
	var n, failed, accepted, checked int
	for _, pc := range presetConfigs {
		rf := configRules(t, pc.preset, pc.settings)
		for i, obj := range objs {
			// What rewriting the original allocates bounds what a mutant
			// of it may allocate.
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			if out, _ := checkRewrite(t, obj.Name, obj.Data, rf, 0); out == nil {
				t.Fatalf("%s: the unmutated object does not rewrite with %s", obj.Name, pc.preset)
			}
			runtime.ReadMemStats(&ms1)
			limit := 4*(ms1.TotalAlloc-ms0.TotalAlloc) + 64<<20
			for k, m := range objmut.Mutate(obj.Data, seed+uint64(i+1), perObject) {
				what := fmt.Sprintf("%s/%s mutant %d (%s)", pc.preset, obj.Name, k, m.Name)
				out, ok := checkRewrite(t, what, m.Data, rf, limit)
				if out != nil {
					accepted++
					if accepted%oracleEvery == 0 && ok {
						ok = checkTools(t, what, m.Data, out)
						checked++
					}
				}
				if !ok {
					failed++
					if keep != "" {
						os.MkdirAll(keep, 0o755)
						p := filepath.Join(keep, fmt.Sprintf("%s-%d-%d.o", pc.preset, i, k))
						os.WriteFile(p, m.Data, 0o644)
						t.Logf("%s: kept as %s", what, p)
					}
				}
				n++
			}
		}
	}
	t.Logf("%d mutants of %d objects with %d presets in %v: %d rewritten (%d checked with readelf and objdump), the rest refused",
		n, len(objs), len(presetConfigs), time.Since(start).Round(time.Millisecond), accepted, checked)
}

// oracleEvery: every so many rewritten mutants go through readelf -a and
// objdump -dr as well.
const oracleEvery = 8

// toolComplaint matches what readelf and objdump say about broken input.
var toolComplaint = regexp.MustCompile(`(?m)^(readelf|objdump): (Warning|Error|error)?:? ?.*$`)

// checkTools runs readelf -aW and objdump -dr on a mutant and on what
// hijack made of it: the output must not draw complaints the input did not
// (numbers aside: offsets move), and objdump must not fail on it if it did
// not fail on the input.
func checkTools(t *testing.T, what string, in, out []byte) bool {
	t.Helper()
	if _, err := exec.LookPath("readelf"); err != nil {
		return true
	}
	dir := t.TempDir()
	pin, pout := filepath.Join(dir, "in.o"), filepath.Join(dir, "out.o")
	os.WriteFile(pin, in, 0o644)
	os.WriteFile(pout, out, 0o644)
	digits := regexp.MustCompile(`0x[0-9a-fA-F]+|[0-9]+`)
	complaints := func(tool string, args ...string) (map[string]bool, bool, string) {
		m := make(map[string]bool)
		var failed bool
		var text string
		for _, p := range []string{pin, pout} {
			b, err := exec.Command(tool, append(args, p)...).CombinedOutput()
			for _, c := range toolComplaint.FindAllString(strings.ReplaceAll(string(b), p, "FILE"), -1) {
				c = digits.ReplaceAllString(c, "N")
				if p == pin {
					m[c] = true
				} else if !m[c] {
					text += c + "\n"
				}
			}
			if p == pin {
				failed = err != nil
			} else if err != nil && !failed {
				text += fmt.Sprintf("%s fails on the output only: %v\n", tool, err)
			}
		}
		return m, failed, text
	}
	ok := true
	for _, c := range [][]string{{"readelf", "-aW"}, {"objdump", "-dr"}} {
		if _, _, text := complaints(c[0], c[1:]...); text != "" {
			t.Errorf("%s: %s %s complains about the output only:\n%s", what, c[0], c[1], text)
			ok = false
		}
	}
	return ok
}

// TestGrowth: real instrumentation stays far below the output size bound
// (elfobj.MaxGrowth times the input plus what the presets add): every
// member of libz.a and the corpus objects, with every preset.
func TestGrowth(t *testing.T) {
	if testing.Short() {
		t.Skip("rewrites libz.a three times")
	}
	objs := append([]objmut.Object(nil), corpus(t)...)
	lib := "/usr/lib/x86_64-linux-gnu/libz.a"
	testutil.NeedFile(t, lib)
	for _, p := range testutil.Extract(t, lib, t.TempDir()) {
		d, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, objmut.Object{Name: filepath.Base(p), Data: d})
	}
	var worst float64
	var worstWhat string
	for _, pc := range presetConfigs {
		rf := configRules(t, pc.preset, pc.settings)
		for _, obj := range objs {
			out, st, err := rewrite.Rewrite(obj.Name, obj.Data, rf, allPresets(), nil)
			if err != nil {
				t.Fatalf("%s with %s: %v", obj.Name, pc.preset, err)
			}
			g := float64(uint64(len(out))-min(st.Added, uint64(len(out)))) / float64(len(obj.Data))
			if g > worst {
				worst, worstWhat = g, obj.Name+" with "+pc.preset
			}
		}
	}
	t.Logf("largest growth besides the added code: %.2fx (%s); bound %dx", worst, worstWhat, elfobj.MaxGrowth)
	if worst > elfobj.MaxGrowth/4 {
		t.Errorf("growth %.2fx (%s) is within 4x of the bound %dx", worst, worstWhat, elfobj.MaxGrowth)
	}
}

package vptrace_test

import (
	"regexp"
	"strings"
	"testing"

	"hijack/internal/testutil"
)

// TestStackSpill checks registers saved once around a loop that keeps
// variables in stack slots (spill.go, ibr.Section.ShiftStack): ss_walk
// (testdata/stackspill.S) has no dead register at its two sites, five it
// never references in the loop, and stack operands in every encoding the
// shift must handle. Its loop must be spilled around (registers pushed
// once, before it, not at each site), its stack operands rewritten to
// the lowered rsp (none of the original red-zone displacements left
// inside it), and a run must return what the driver's C copy returns,
// with a trace of exactly the pages that copy read. With usestack the
// loops' stack operands are sites whose code computes from rsp: neither
// ss_walk's loop (whose stack sites are sweeps, with code on its edges)
// nor ss_hist's (a counter the data indexes, testdata/stackspill.S) may
// be spilled around, and both must still compute the same.
func TestStackSpill(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	rt := runtimeArchive(t)
	dir := t.TempDir()
	obj := testutil.Compile(t, dir, "gcc", "testdata/stackspill.S")
	redZone := regexp.MustCompile(`-0x(10|18|20|78)\(%rsp\)|[ ,]\(%rsp\)`)
	for _, c := range []struct {
		name     string
		settings []string
		spilled  bool
	}{
		{"local-exec", []string{"tls=local-exec"}, true},
		{"initial-exec", []string{"tls=initial-exec"}, true},
		{"indirect", []string{"tls=indirect"}, true},
		{"usestack", []string{"tls=initial-exec", "usestack=true"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sub := t.TempDir()
			inst := instrument(t, obj, c.settings...)
			lines := disasm(t, inst, "ss_walk")
			loop := loopBody(lines)
			if len(loop) == 0 {
				t.Fatalf("no loop (a backward jb) in ss_walk:\n%s", strings.Join(lines, "\n"))
			}
			pushes := countOp(loop, "push")
			var left []string
			for _, l := range loop {
				if redZone.MatchString(l) {
					left = append(left, l)
				}
			}
			if c.spilled {
				// (pushes in the loop: only those of probes' miss paths,
				// which go out of line, after the function)
				if pushes > 0 {
					t.Errorf("%d pushes in the loop: registers saved at the sites:\n%s", pushes, strings.Join(loop, "\n"))
				}
				if len(left) > 0 {
					t.Errorf("stack operands not shifted in the spilled loop:\n%s", strings.Join(left, "\n"))
				}
			} else {
				if pushes == 0 {
					t.Errorf("loop with rsp-based sites spilled around:\n%s", strings.Join(loop, "\n"))
				}
				// ss_hist's loop: its only slot site is the counters'
				// increment, rsp-based, whose code computes from rsp
				// (stackSafe): the increment must keep its operand
				hist := disasm(t, inst, "ss_hist")
				kept := false
				for _, l := range hist {
					kept = kept || strings.Contains(l, "incq") && strings.Contains(l, "-0x40(%rsp,%rax,8)")
				}
				if !kept {
					t.Errorf("ss_hist's loop spilled around with a site computing from rsp in it:\n%s", strings.Join(hist, "\n"))
				}
			}
			span, want, got, out := runDriver(t, sub, "testdata/stackspill_main.c", inst, rt)
			if !strings.HasPrefix(string(out), "ss ") {
				t.Fatalf("driver output: %s", out)
			}
			if f := strings.Fields(strings.SplitN(string(out), "\n", 2)[0]); len(f) != 3 || f[1] != f[2] {
				t.Errorf("ss_walk and its C copy differ: %s", f)
			}
			if len(span) != 10 || len(want) != 8 {
				t.Fatalf("the driver printed %d pages of %d:\n%s", len(want), len(span), out)
			}
			if wrong := wrongKinds(span, want, got); len(wrong) > 0 {
				t.Errorf("%d of %d pages wrong: %v", len(wrong), len(span), head(wrong))
			}
		})
	}
}

// loopBody returns the lines of lines (disasm) from the target of the
// last backward jb to that jb: the loop of ss_walk.
func loopBody(lines []string) []string {
	addr := func(l string) string { return strings.TrimSuffix(strings.Fields(l)[0], ":") }
	for k := len(lines) - 1; k >= 0; k-- {
		f := strings.Fields(lines[k])
		if len(f) < 3 || f[1] != "jb" {
			continue
		}
		for j := 0; j < k; j++ {
			if len(strings.Fields(lines[j])) > 0 && addr(lines[j]) == f[2] {
				return lines[j : k+1]
			}
		}
	}
	return nil
}

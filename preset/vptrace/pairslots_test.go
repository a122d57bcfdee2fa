package vptrace_test

import (
	"strings"
	"testing"

	"hijack/internal/testutil"
)

// TestPairSlots checks the look-ups in a two-page table by a byte of the
// data (testdata/pairslots.c: a byte loaded from memory, a loaded word's
// low byte): their sites check both pages with one branch (by address,
// where 8-byte entries may cross a page boundary: the run of pages their
// two slots hold, one subtraction and one compare; by page number for a
// table of bytes: a cmove between the compares with the two slots), and
// the trace of a run over tables that straddle a page boundary (one of
// them with an entry across it) has both pages of each with their kinds,
// and nothing else of the mapping around them.
func TestPairSlots(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	rt := runtimeArchive(t)
	for _, tc := range []struct{ opt, tls string }{{"-O1", "tls=local-exec"}, {"-O2", "tls=local-exec"}, {"-O2", "tls=initial-exec"}, {"-O2", "tls=indirect"}} {
		t.Run(tc.opt+"/"+tc.tls, func(t *testing.T) {
			dir := t.TempDir()
			inst := instrument(t, testutil.Compile(t, dir, "gcc", "testdata/pairslots.c", tc.opt), tc.tls)
			for fn, op := range map[string]string{"hist_bytes": "run", "sum_low": "run", "sum_bytes": "run", "hist_spread": "run", "sum_spread": "run"} {
				lines := disasm(t, inst, fn)
				if op == "run" && !hasRunCheck(lines) || op != "run" && !hasOp(lines, op) {
					t.Errorf("%s: no pair (%s):\n%s", fn, op, strings.Join(lines, "\n"))
				}
			}
			span, want, got, out := runDriver(t, dir, "testdata/pairslots_main.c", inst, rt)
			if len(span) != 32 || len(want) != 29 {
				t.Fatalf("the driver printed %d pages of %d:\n%s", len(want), len(span), out)
			}
			if wrong := wrongKinds(span, want, got); len(wrong) > 0 {
				t.Errorf("%d of %d pages wrong: %v", len(wrong), len(span), head(wrong))
			}
		})
	}
}

// hasRunCheck reports whether a function's lines (disasm) check an
// address against a run of pages (ABI.md "Runs of pages"): a register
// less one slot, compared with another, then ja.
func hasRunCheck(lines []string) bool {
	mem := func(op string) bool { return !strings.HasPrefix(op, "$") && !strings.HasPrefix(op, "%r") }
	var insns []string // (no relocation lines)
	for _, line := range lines {
		if f := strings.Fields(line); len(f) >= 2 && !strings.HasPrefix(f[1], "R_X86_64") {
			insns = append(insns, line)
		}
	}
	for i := 0; i+2 < len(insns); i++ {
		a, c, j := strings.Fields(insns[i]), strings.Fields(insns[i+1]), strings.Fields(insns[i+2])
		if len(a) < 3 || len(c) < 3 || len(j) < 2 || a[1] != "sub" || c[1] != "cmp" || j[1] != "ja" {
			continue
		}
		src, dst, _ := strings.Cut(a[2], ",%")
		csrc, cdst, _ := strings.Cut(c[2], ",%")
		if mem(src) && mem(csrc) && dst == cdst {
			return true
		}
	}
	return false
}

// hasOp reports whether a function's lines (disasm) have an instruction
// with mnemonic op.
func hasOp(lines []string, op string) bool { return countOp(lines, op) > 0 }

// countOp counts the instructions with mnemonic op in a function's lines
// (disasm).
func countOp(lines []string, op string) int {
	n := 0
	for _, line := range lines {
		if f := strings.Fields(line); len(f) >= 2 && strings.HasSuffix(f[0], ":") && f[1] == op {
			n++
		}
	}
	return n
}

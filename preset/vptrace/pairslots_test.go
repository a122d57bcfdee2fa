package vptrace_test

import (
	"strings"
	"testing"

	"hijack/internal/testutil"
)

// TestPairSlots checks the look-ups in a two-page table by a byte of the
// data (testdata/pairslots.c: a byte loaded from memory, a loaded word's
// low byte): their sites compare the page with both slots and branch once
// (a cmov between the two compares: cmova by address where 8-byte entries
// may cross a page boundary, cmove by page number for a table of bytes),
// and the trace of a run over tables that straddle a page boundary (one
// of them with an entry across it) has both pages of each with their
// kinds, and nothing else of the mapping around them.
func TestPairSlots(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	rt := runtimeArchive(t)
	for _, tc := range []struct{ opt, tls string }{{"-O1", "tls=local-exec"}, {"-O2", "tls=local-exec"}, {"-O2", "tls=initial-exec"}, {"-O2", "tls=indirect"}} {
		t.Run(tc.opt+"/"+tc.tls, func(t *testing.T) {
			dir := t.TempDir()
			inst := instrument(t, testutil.Compile(t, dir, "gcc", "testdata/pairslots.c", tc.opt), tc.tls)
			for fn, op := range map[string]string{"hist_bytes": "cmova", "sum_low": "cmova", "sum_bytes": "cmove"} {
				if lines := disasm(t, inst, fn); !hasOp(lines, op) {
					t.Errorf("%s: no pair (%s):\n%s", fn, op, strings.Join(lines, "\n"))
				}
			}
			span, want, got, out := runDriver(t, dir, "testdata/pairslots_main.c", inst, rt)
			if len(span) != 12 || len(want) != 12 {
				t.Fatalf("the driver printed %d pages of %d:\n%s", len(want), len(span), out)
			}
			if wrong := wrongKinds(span, want, got); len(wrong) > 0 {
				t.Errorf("%d of %d pages wrong: %v", len(wrong), len(span), head(wrong))
			}
		})
	}
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

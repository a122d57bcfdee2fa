package vptrace_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"hijack/internal/testutil"
	"hijack/vptrace/trace"
)

// TestPairSlots checks the look-ups in a two-page table by a byte of the
// data (testdata/pairslots.c: a byte loaded from memory, a loaded word's
// low byte): their sites compare the page with both slots and branch once
// (a cmove between the two compares), and the trace of a run over tables
// that straddle a page boundary has both pages of each with their kinds,
// and nothing else of the mapping around them.
func TestPairSlots(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	rt := runtimeArchive(t)
	for _, tc := range []struct{ opt, tls string }{{"-O1", "tls=local-exec"}, {"-O2", "tls=local-exec"}, {"-O2", "tls=initial-exec"}, {"-O2", "tls=indirect"}} {
		t.Run(tc.opt+"/"+tc.tls, func(t *testing.T) {
			dir := t.TempDir()
			inst := instrument(t, testutil.Compile(t, dir, "gcc", "testdata/pairslots.c", tc.opt), tc.tls)
			for _, fn := range []string{"hist_bytes", "sum_low"} {
				if lines := disasm(t, inst, fn); !hasOp(lines, "cmove") {
					t.Errorf("%s: no pair (cmove):\n%s", fn, strings.Join(lines, "\n"))
				}
			}
			drv := testutil.Compile(t, dir, "gcc", "testdata/pairslots_main.c", "-O2")
			exe := filepath.Join(dir, "app")
			testutil.Link(t, "gcc", exe, drv, inst, rt, "-lpthread")
			out, vpt := runTraced(t, exe)
			want := printedKinds(out)
			var span []uint64
			for _, line := range strings.Split(string(out), "\n") {
				var at, n uint64
				if _, err := fmt.Sscanf(line, "span 0x%x %d", &at, &n); err == nil {
					for p := at >> 12; p < at>>12+n; p++ {
						span = append(span, p)
					}
				}
			}
			if len(span) != 8 || len(want) != 8 {
				t.Fatalf("the driver printed %d pages of %d:\n%s", len(want), len(span), out)
			}
			tr, err := trace.Load(vpt)
			if err != nil {
				t.Fatal(err)
			}
			if wrong := wrongKinds(span, want, tracedKinds(tr.Threads)); len(wrong) > 0 {
				t.Errorf("%d of %d pages wrong: %v", len(wrong), len(span), head(wrong))
			}
		})
	}
}

// hasOp reports whether a function's lines (disasm) have an instruction
// with mnemonic op.
func hasOp(lines []string, op string) bool {
	for _, line := range lines {
		if f := strings.Fields(line); len(f) >= 2 && strings.HasSuffix(f[0], ":") && f[1] == op {
			return true
		}
	}
	return false
}

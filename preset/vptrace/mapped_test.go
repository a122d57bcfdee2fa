package vptrace_test

import (
	"path/filepath"
	"strings"
	"testing"

	"hijack/internal/testutil"
)

// TestArrayTests: with tls indirect, only code that no other inserted code
// of the same call ran before tests the thread's slot array (arrayTests):
// diamond's first site, whose block dominates the others, both of cond's,
// whose first runs on one path only, after's loop entry (a sweep's), not
// the read after the loop, before's read, not the loop entry after it,
// and spun's loop entry (registers saved once a run with the slot base),
// not the read after the loop. A new thread whose first call takes cond's
// other path still records every page it reads, once.
func TestArrayTests(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	rt := runtimeArchive(t)
	for _, opt := range []string{"-O1", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			dir := t.TempDir()
			inst := instrument(t, testutil.Compile(t, dir, "gcc", "testdata/mapped.c", opt, "-fPIC"), "tls=indirect")
			for fn, want := range map[string]int{"diamond": 1, "cond": 2, "after": 1, "before": 1, "spun": 1} {
				n := 0
				for _, line := range disasm(t, inst, fn) {
					if strings.Contains(line, "__vpt_slotsetup") {
						n++
					}
				}
				if n != want {
					t.Errorf("%s: %d tests of the slot array (calls of the set-up), want %d", fn, n, want)
				}
			}
			drv := testutil.Compile(t, dir, "gcc", "testdata/mapped_main.c", "-O2")
			exe := filepath.Join(dir, "app")
			testutil.Link(t, "gcc", exe, drv, inst, rt, "-lpthread")
			out, vpt := runTraced(t, exe)
			if _, n := exactPages(t, out, vpt, nil); n != 6 {
				t.Errorf("the driver printed %d pages, want 6:\n%s", n, out)
			}
		})
	}
}

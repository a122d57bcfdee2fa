package vptrace_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"hijack/internal/testutil"
	"hijack/vptrace/trace"
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
			want := map[uint64]bool{}
			for _, line := range strings.Split(string(out), "\n") {
				var p uint64
				if _, err := fmt.Sscanf(line, "page 0x%x", &p); err == nil {
					want[p>>12] = true
				}
			}
			tr, err := trace.Load(vpt)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			same := len(want) == 6
			for _, th := range tr.Threads {
				for p := range th.Pages {
					got = append(got, hex(p))
					same = same && want[p]
				}
			}
			sort.Strings(got)
			if !same || len(got) != len(want) {
				t.Errorf("traced pages %v, want the 6 the driver printed:\n%s", got, out)
			}
		})
	}
}

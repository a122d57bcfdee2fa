package vptrace_test

import (
	"strings"
	"testing"

	"hijack/internal/testutil"
)

// TestRegions checks registers saved once around straight-line code
// (region.go) and around a loop whose exits are conditional jumps taken
// out of it (spill.go, kit.EdgeToOrTaken): gt_run (testdata/regions.h)
// compares two runs of bytes as bzip2's suffix sort does, eight bytes in
// eight blocks before its loop, each able to return, with no register to
// spare at its 32 sites. Its code must save registers at its start (the
// region) and once more before its loop, not at every site; and a run of
// it over bytes and tags across page boundaries, every exit taken, must
// return what the driver's own copy returns, with a trace that has the
// pages that copy read and no other of the mapping.
func TestRegions(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	rt := runtimeArchive(t)
	for _, opt := range []string{"-O1", "-O2", "-O3"} {
		for _, tls := range []string{"local-exec", "initial-exec", "indirect"} {
			t.Run(opt+"/"+tls, func(t *testing.T) {
				dir := t.TempDir()
				inst := instrument(t, testutil.Compile(t, dir, "gcc", "testdata/regions.c", opt), "tls="+tls)
				lines := disasm(t, inst, "gt_run")
				pushes := countOp(lines, "push")
				// (without regions: a push or two at each of the 32 sites;
				// with them 4 at the start, 2 of the program's and 4 before
				// the loop, and those of probes' miss paths)
				if pushes > 16 {
					t.Errorf("%d pushes: registers saved at the sites, not around them:\n%s", pushes, strings.Join(lines, "\n"))
				}
				if f := strings.Fields(lines[0]); len(f) < 3 || f[1] != "lea" || f[2] != "-0x80(%rsp),%rsp" {
					t.Errorf("gt_run does not start by saving registers (a region): %q", lines[0])
				}
				span, want, got, out := runDriver(t, dir, "testdata/regions_main.c", inst, rt)
				if len(span) != 6 || len(want) != 4 {
					t.Fatalf("the driver printed %d pages of %d:\n%s", len(want), len(span), out)
				}
				if wrong := wrongKinds(span, want, got); len(wrong) > 0 {
					t.Errorf("%d of %d pages wrong: %v", len(wrong), len(span), head(wrong))
				}
			})
		}
	}
}

package vptrace_test

import (
	"strconv"
	"strings"
	"testing"

	"hijack/internal/testutil"
)

// TestNoJumpToJump: a slot hit jumps straight past the site's code. A
// straddle-checked access's first-page hit used to land on the `jmp` that
// skips the second page's code: two taken jumps on the fast path of most
// sites. No jump of the instrumented objects may target a jmp unless the
// compiler's code had such jumps already.
func TestNoJumpToJump(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	for _, opt := range []string{"-O1", "-O2", "-O3"} {
		t.Run(opt, func(t *testing.T) {
			dir := t.TempDir()
			obj := testutil.Compile(t, dir, "gcc", "testdata/sweeps.c", opt)
			plain := jumpsToJumps(t, obj)
			for _, tls := range []string{"tls=local-exec", "tls=indirect"} {
				if got := jumpsToJumps(t, instrument(t, obj, tls)); got > plain {
					t.Errorf("%s: %d jumps to a jmp, the compiler's code has %d", tls, got, plain)
				}
			}
		})
	}
}

// jumpsToJumps counts the direct jumps in obj's .text whose target is a jmp
// (objdump -d, section by section).
func jumpsToJumps(t *testing.T, obj string) int {
	t.Helper()
	n := 0
	for _, sec := range strings.Split(string(disassembly(t, obj)), "Disassembly of section ") {
		op := map[uint64]string{}
		var jumps []uint64
		for _, line := range strings.Split(sec, "\n") {
			addr, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
			a, err := strconv.ParseUint(addr, 16, 64)
			f := strings.Fields(rest)
			if !ok || err != nil || len(f) == 0 {
				continue
			}
			op[a] = f[0]
			if strings.HasPrefix(f[0], "j") && len(f) >= 2 {
				if to, err := strconv.ParseUint(f[1], 16, 64); err == nil {
					jumps = append(jumps, to)
				}
			}
		}
		for _, to := range jumps {
			if op[to] == "jmp" {
				n++
			}
		}
	}
	return n
}

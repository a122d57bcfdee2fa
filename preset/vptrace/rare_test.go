package vptrace_test

import (
	"regexp"
	"strings"
	"testing"

	"hijack/internal/testutil"
)

// byAddress matches the compare of a site checked by address (ABI.md
// "Checked by address", tls local-exec): the slot's page base taken from
// the address the lea before it computed.
var byAddress = regexp.MustCompile(`^\s*[0-9a-f]+:\s+sub\s+%fs:`)

// byAddressSites returns the address operands of the lea before each
// by-address compare in a function's lines (disasm).
func byAddressSites(lines []string) []string {
	var eas []string
	for i := 1; i < len(lines); i++ {
		if !byAddress.MatchString(lines[i]) {
			continue
		}
		if f := strings.Fields(lines[i-1]); len(f) >= 3 && f[1] == "lea" {
			ea, _, _ := strings.Cut(f[2], "),")
			eas = append(eas, ea+")")
		}
	}
	return eas
}

// TestConditionalOnce: a register that a loop writes in one block only,
// one that not every iteration runs (conditionalOnce), keeps the page of
// an address through it across the iterations in between: best's read at
// ip + ml - 3, where the best length ml changes only when a candidate
// beats it (zstd's match loop), is checked by address; alternate's read at
// p + l, where l is set in every iteration, is not. (TestSweepsExact runs
// both against the pages their driver computes, at every -O.)
func TestConditionalOnce(t *testing.T) {
	eachCompiler(t, "testdata/sweeps.c", func(t *testing.T, inst string) {
		ip, sites := false, byAddressSites(disasm(t, inst, "best"))
		for _, ea := range sites {
			ip = ip || strings.HasPrefix(ea, "-0x3(%rdi,") // (ip: the first argument)
		}
		if !ip {
			t.Errorf("best: by-address sites %v, want one at -0x3(%%rdi,...) (ip + ml - 3)", sites)
		}
		for _, ea := range byAddressSites(disasm(t, inst, "alternate")) {
			if strings.Contains(ea, "(%rdi,") {
				t.Errorf("alternate: p + l checked by address (%s), though l changes in every iteration", ea)
			}
		}
	})
}

// eachCompiler compiles src with gcc and clang (-O2, one access a
// look-up: clang unrolls the loops otherwise), instruments it with tls
// local-exec and runs check on the object, a subtest each.
func eachCompiler(t *testing.T, src string, check func(t *testing.T, inst string)) {
	testutil.Need(t, "gcc", "objdump")
	for _, cc := range []string{"gcc", "clang"} {
		t.Run(cc, func(t *testing.T) {
			testutil.Need(t, cc)
			dir := t.TempDir()
			check(t, instrument(t, testutil.Compile(t, dir, cc, src, "-O2", "-fno-unroll-loops"), "tls=local-exec"))
		})
	}
}

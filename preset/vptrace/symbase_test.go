package vptrace_test

import (
	"strings"
	"testing"

	"hijack/internal/testutil"
)

// TestSymbolBase checks the crossing checks of look-ups through a register
// that holds a static array's address (testdata/symbase.c): none for the
// aligned table, whose register every path loads with the same lea; kept
// at one byte into the char array, and where the register holds one of two
// arrays (a cmov; paths that meet). Then it runs them: the trace has every page the driver touched,
// with its kinds, the char array's third page (touched only by the last
// byte of a crossing read) among them, and nothing else of the arrays.
func TestSymbolBase(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	rt := runtimeArchive(t)
	for _, opt := range []string{"-O1", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			dir := t.TempDir()
			inst := instrument(t, testutil.Compile(t, dir, "gcc", "testdata/symbase.c", opt), "tls=local-exec")
			for fn, want := range map[string]bool{"sum_table": false, "sum_bytes": true, "sum_either": true, "sum_joined": true} {
				if got := straddleChecks(disasm(t, inst, fn)) > 0; got != want {
					t.Errorf("%s: crossing check %v, want %v:\n%s", fn, got, want, strings.Join(disasm(t, inst, fn), "\n"))
				}
			}
			arrays, want, got, out := runDriver(t, dir, "testdata/symbase_main.c", inst, rt)
			if len(arrays) != 12 || len(want) != 11 {
				t.Fatalf("the driver printed %d pages of %d:\n%s", len(want), len(arrays), out)
			}
			if wrong := wrongKinds(arrays, want, got); len(wrong) > 0 {
				t.Errorf("%d of %d pages wrong: %v", len(wrong), len(arrays), head(wrong))
			}
		})
	}
}

// straddleChecks counts the crossing checks in a function's lines (disasm):
// a jb right after an add to a 16-bit register (straddleCheck's carry).
func straddleChecks(lines []string) int {
	n := 0
	add16 := false
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasSuffix(f[0], ":") {
			continue // (a relocation line)
		}
		if f[1] == "jb" && add16 {
			n++
		}
		add16 = false
		if f[1] == "add" && len(f) >= 3 {
			_, dst, _ := strings.Cut(f[2], ",")
			switch strings.TrimPrefix(dst, "%") {
			case "ax", "bx", "cx", "dx", "si", "di", "bp", "r8w", "r9w", "r10w", "r11w", "r12w", "r13w", "r14w", "r15w":
				add16 = true
			}
		}
	}
	return n
}

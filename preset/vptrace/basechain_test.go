package vptrace_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"hijack/internal/testutil"
)

// TestBaseChain: with tls initial-exec or indirect, the second access of
// each of gtu's steps (two loads in one block) reads its slot through the
// base the first one loaded (basechain.go): one load of the slots' GOT
// entry per step, not per access. TestSweepsExact runs gtu (indirect in
// its shared builds) across page boundaries.
func TestBaseChain(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	dir := t.TempDir()
	obj := testutil.Compile(t, dir, "gcc", "testdata/sweeps.c", "-O2")
	for _, tls := range []string{"tls=initial-exec", "tls=indirect"} {
		loads := 0
		for _, line := range disasm(t, instrument(t, obj, tls), "gtu") {
			if strings.Contains(line, "R_X86_64_GOTTPOFF") && strings.Contains(line, "__vpt_slots_") {
				loads++
			}
		}
		if loads != 8 {
			t.Errorf("%s: gtu loads the slot base %d times, want 8 (once per step of two accesses)", tls, loads)
		}
	}
}

// TestBaseChainOrder: chain.s has a block whose sites' code does not run
// in the sites' order: its red-zone store is placed before the compare
// (where the flags are dead), between the first load's code and the
// second's. The second load may take the first's slot base only if the
// store's code leaves it alone: a base passed over it (its cache probe
// reused the register) made the program crash on its first call. Run
// with the slots indirect and initial-exec, it prints what it printed
// uninstrumented.
func TestBaseChainOrder(t *testing.T) {
	testutil.Need(t, "gcc")
	rt := runtimeArchive(t)
	dir := t.TempDir()
	obj := testutil.Compile(t, dir, "gcc", "testdata/chain.s")
	drv := testutil.Compile(t, dir, "gcc", "testdata/chain_main.c", "-O2")
	for _, tls := range []string{"tls=indirect", "tls=initial-exec"} {
		exe := filepath.Join(dir, "app")
		testutil.Link(t, "gcc", exe, drv, instrument(t, obj, tls, "usestack=true"), rt, "-lpthread")
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "VPTRACE_OUT="+filepath.Join(dir, "app.%p.vpt"))
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != "105" {
			t.Errorf("%s: %q, %v; want 105", tls, out, err)
		}
	}
}

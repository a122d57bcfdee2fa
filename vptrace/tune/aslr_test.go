package tune

import (
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// childPersonality runs cat (a grandchild, through sh: the setting must
// survive fork and exec) and returns the personality it reports.
func childPersonality(t *testing.T, noASLR bool) uint64 {
	t.Helper()
	cmd := exec.Command("sh", "-c", "cat /proc/self/personality")
	var out strings.Builder
	cmd.Stdout = &out
	var err error
	if noASLR {
		if err = startNoASLR(cmd); err == nil {
			err = cmd.Wait()
		}
	} else {
		err = cmd.Run()
	}
	if err != nil {
		t.Fatalf("running cat: %v", err)
	}
	p, err := strconv.ParseUint(strings.TrimSpace(out.String()), 16, 32)
	if err != nil {
		t.Fatalf("personality %q: %v", out.String(), err)
	}
	return p
}

// TestStartNoASLR: a program started by startNoASLR runs with
// ADDR_NO_RANDOMIZE (and so do its children); programs started the
// ordinary way afterwards do not (the setting stays with the discarded
// thread).
func TestStartNoASLR(t *testing.T) {
	// Can this process set the flag at all (seccomp filters may refuse)?
	// Probed on a thread of its own that is then discarded.
	probe := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		old, err := personality(0xffffffff)
		if err == nil {
			_, err = personality(old | addrNoRandomize)
		}
		probe <- err
	}()
	if err := <-probe; err != nil {
		t.Skipf("personality(ADDR_NO_RANDOMIZE): %v", err)
	}
	if err := checkNoASLR(); err != nil {
		t.Fatalf("checkNoASLR: %v", err)
	}
	for i := 0; i < 20; i++ {
		if p := childPersonality(t, true); p&addrNoRandomize == 0 {
			t.Fatalf("run %d: personality %#x without ADDR_NO_RANDOMIZE", i, p)
		}
		// the next ordinary start may run on any thread, the locked one
		// included had it been returned to the pool
		if p := childPersonality(t, false); p&addrNoRandomize != 0 {
			t.Fatalf("run %d: an ordinary child has ADDR_NO_RANDOMIZE (%#x): the setting leaked", i, p)
		}
	}
	// without randomisation the stack is at the same place every run
	stack := func() string {
		cmd := exec.Command("sh", "-c", "grep '\\[stack\\]' /proc/self/maps")
		var out strings.Builder
		cmd.Stdout = &out
		if err := startNoASLR(cmd); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		return strings.Fields(out.String())[0]
	}
	if a, b := stack(), stack(); a != b {
		t.Errorf("the stack moved between two runs: %s, %s", a, b)
	}
}

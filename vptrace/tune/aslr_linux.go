package tune

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// addrNoRandomize is ADDR_NO_RANDOMIZE of <linux/personality.h>, what
// setarch -R sets.
const addrNoRandomize = 0x0040000

// personality calls personality(2); 0xffffffff queries without changing.
func personality(p uint64) (uint64, error) {
	old, _, errno := syscall.RawSyscall(syscall.SYS_PERSONALITY, uintptr(p), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return uint64(old), nil
}

// startNoASLR starts cmd with address-space randomisation off.
//
// The personality is a property of a thread (a task), copied at clone and
// kept across execve, and os/exec forks from the thread of the goroutine
// that calls Start. So Start runs on a goroutine locked to its own thread
// whose personality has ADDR_NO_RANDOMIZE; the goroutine ends without
// unlocking, so the Go runtime discards that thread and no other process
// this program starts inherits the setting. Unlike setarch, this needs no
// external tool and works in a test binary as in hijack.
func startNoASLR(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		old, err := personality(0xffffffff)
		if err == nil {
			_, err = personality(old | addrNoRandomize)
		}
		if err != nil {
			done <- fmt.Errorf("personality(ADDR_NO_RANDOMIZE): %w", err)
			return
		}
		done <- cmd.Start()
	}()
	return <-done
}

// checkNoASLR runs a shell through startNoASLR and reads its personality
// from /proc: the proof that programs started that way run without
// address-space randomisation. It returns nil if they do, or if the
// system has randomisation off altogether.
func checkNoASLR() error {
	cmd := exec.Command("sh", "-c", "read p < /proc/self/personality && echo \"$p\"")
	var out strings.Builder
	cmd.Stdout = &out
	err := startNoASLR(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	if err == nil {
		var p uint64
		if p, err = strconv.ParseUint(strings.TrimSpace(out.String()), 16, 32); err == nil && p&addrNoRandomize == 0 {
			err = fmt.Errorf("the child's personality is %#x, without ADDR_NO_RANDOMIZE", p)
		}
	}
	if err != nil && systemNoASLR() {
		return nil
	}
	return err
}

// systemNoASLR reports whether the kernel randomises no address space
// (kernel.randomize_va_space = 0).
func systemNoASLR() bool {
	b, err := os.ReadFile("/proc/sys/kernel/randomize_va_space")
	return err == nil && strings.TrimSpace(string(b)) == "0"
}

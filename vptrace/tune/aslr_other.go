//go:build !linux

package tune

import (
	"errors"
	"os/exec"
)

// startNoASLR: only Linux has personality(2); hijack's programs are
// Linux programs.
func startNoASLR(cmd *exec.Cmd) error {
	return errors.New("cannot turn address-space randomisation off on this system (Linux only)")
}

func checkNoASLR() error { return startNoASLR(nil) }

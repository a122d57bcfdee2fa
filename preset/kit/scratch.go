package kit

import (
	"errors"
	"slices"

	"hijack/cfg/effect"
)

// ErrNoScratch is returned by Scratch when it cannot find enough registers.
var ErrNoScratch = errors.New("no register to spare")

// Scratch chooses need scratch registers for code inserted where the
// registers in live are live (cfg.Liveness): dead ones first, from rax
// up; when too few are dead, live ones from r15 down, which the code must
// save and restore (borrowed, a subset of free, to pass to Builder.Save
// and Restore). It never chooses a register of reserved (rsp, say, or one
// the code reads for its own purpose), nor borrows one of uses: registers
// whose program values the code reads (those of an address it computes),
// which it may already have overwritten as a scratch register by then. The
// error is ErrNoScratch.
func Scratch(need int, live, reserved, uses effect.RegSet) (free, borrowed []effect.Reg, err error) {
	for r := effect.Reg(0); r < 16 && len(free) < need; r++ {
		if !reserved.Has(r) && !live.Has(r) {
			free = append(free, r)
		}
	}
	for r := effect.Reg(16); len(free) < need; {
		if r == 0 {
			return nil, nil, ErrNoScratch
		}
		r--
		if !reserved.Has(r) && !uses.Has(r) && !slices.Contains(free, r) {
			free = append(free, r)
			borrowed = append(borrowed, r)
		}
	}
	return free, borrowed, nil
}

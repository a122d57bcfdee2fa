// Package clobber implements the clobber preset, the proof of hijack's
// liveness analysis: before every instruction of the selected functions it
// inserts code that destroys every general register and status flag that
// liveness claims is dead there, with different garbage each time. If
// liveness is wrong anywhere, the rewritten program computes something else
// or crashes; if programs keep behaving exactly as before, liveness is
// right on them. The stack pointer and the direction flag are never
// touched, and no memory is written.
package clobber

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/ibr"
	"hijack/preset"
	"hijack/preset/kit"
	"hijack/rules"
)

// Preset is the clobber preset.
type Preset struct{}

// Spec declares clobber's parameters.
func (Preset) Spec() rules.PresetSpec {
	return rules.PresetSpec{
		Name: "clobber",
		Doc:  "overwrite registers and flags that liveness says are dead, to expose liveness bugs",
		Params: []rules.ParamSpec{
			rules.IntParam("seed", 1, math.MinInt64, math.MaxInt64,
				"seeds the pseudo-random choice of clobbered registers and values"),
		},
	}
}

// Begin analyses o: its liveness, before any code is inserted.
func (Preset) Begin(o *ibr.Object, params []rules.Params) (preset.Session, error) {
	return &session{kit.Analyze(o)}, nil
}

// session is the liveness of one object, computed once for all its rules.
type session struct {
	an *kit.Analysis
}

func (*session) Finish() error { return nil }

// Apply inserts clobbering code before every instruction of funcs.
func (ss *session) Apply(funcs []*ibr.Func, params rules.Params, warn func(string)) error {
	seed := uint64(params.Int("seed"))
	rng := rand.New(rand.NewPCG(seed, seed^0xc10bbe4))
	for _, fn := range funcs {
		_, live := ss.an.Func(fn)
		s := fn.Section
		for i := fn.Start; i < fn.End; i++ {
			if !s.CanInsertBefore(i) {
				continue
			}
			code := Code(live.Before(i), rng)
			if len(code) == 0 {
				continue
			}
			if err := s.InsertBefore(i, &ibr.Snippet{Code: code}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Code returns machine code that overwrites every register and flag not in
// live with pseudo-random values, without touching anything live, the
// stack, memory or DF.
func Code(live cfg.Live, rng *rand.Rand) []byte {
	var b []byte
	var scratch = -1
	for r := effect.Reg(0); r < 16; r++ {
		if r == effect.RSP || live.Regs.Has(r) {
			continue
		}
		scratch = int(r)
		// movabs $imm64, %r
		rex := byte(0x48)
		if r >= 8 {
			rex |= 1
		}
		b = append(b, rex, 0xb8+byte(r&7))
		b = binary.LittleEndian.AppendUint64(b, rng.Uint64())
	}
	dead := effect.Status &^ live.Flags
	switch {
	case dead == effect.Status:
		// cmp $imm32, %rsp: reads rsp, writes all six status flags.
		b = append(b, 0x48, 0x81, 0xfc)
		b = binary.LittleEndian.AppendUint32(b, rng.Uint32())
	case dead&^effect.CF == effect.Status&^effect.CF && scratch >= 0:
		// inc %r writes OF SF ZF AF PF and keeps CF (r was just
		// randomised).
		rex := byte(0x48)
		if scratch >= 8 {
			rex |= 1
		}
		b = append(b, rex, 0xff, 0xc0+byte(scratch&7))
		if dead&effect.CF != 0 {
			b = append(b, 0xf5) // cmc
		}
	case dead&effect.CF != 0:
		// stc or clc: only CF.
		b = append(b, 0xf8|byte(rng.IntN(2)))
	}
	return b
}

// Package pad implements the pad preset: before every instruction of the
// selected functions it inserts semantically neutral code (multi-byte NOPs)
// of pseudo-random length, so that every branch, jump table, FDE, symbol and
// relocation moves. A rewritten program that still behaves exactly like the
// original shows that code moving is right; pad is hijack's stress test.
package pad

import (
	"math/rand/v2"

	"hijack/cfg/effect"
	"hijack/emit"
	"hijack/ibr"
	"hijack/rules"
)

// Preset is the pad preset. Parameters: seed (pseudo-random lengths),
// maxlen (longest insertion, 1..15 bytes).
type Preset struct{}

// Apply inserts NOPs before every instruction of funcs.
func (Preset) Apply(o *ibr.Object, funcs []*ibr.Func, params rules.Params, warn func(string)) error {
	seed := uint64(params.Int("seed"))
	maxlen := int(params.Int("maxlen"))
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	// One snippet per length, shared: snippets are never modified.
	snips := make([]*ibr.Snippet, maxlen+1)
	for n := 1; n <= maxlen; n++ {
		code := make([]byte, n)
		emit.FillNops(code)
		snips[n] = &ibr.Snippet{Code: code}
	}
	after := params.Bool("after")
	for _, fn := range funcs {
		s := fn.Section
		for i := fn.Start; i < fn.End; i++ {
			if s.CanInsertBefore(i) {
				if err := s.InsertBefore(i, snips[1+rng.IntN(maxlen)]); err != nil {
					return err
				}
			}
			if after && i+1 < fn.End && s.CanInsertAfter(i) && fallsThrough(s, i) {
				if err := s.InsertAfter(i, snips[1+rng.IntN(maxlen)]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// fallsThrough reports whether instruction i may continue with the next
// one (and is not a prefix glued to it).
func fallsThrough(s *ibr.Section, i int) bool {
	in := &s.Insts[i]
	if in.Kind != ibr.Code || in.Flags&ibr.Prefix != 0 {
		return false
	}
	return effect.Of(s.Asm(i), &in.Layout, s.Bytes(i)).Ctrl.FallsThrough()
}

// Package pad implements the pad preset: before every instruction of the
// selected functions it inserts semantically neutral code (multi-byte NOPs)
// of pseudo-random length, so that every branch, jump table, FDE, symbol and
// relocation moves. A rewritten program that still behaves exactly like the
// original shows that code moving is right; pad is hijack's stress test.
package pad

import (
	"math"
	"math/rand/v2"

	"hijack/ibr"
	"hijack/preset"
	"hijack/preset/kit"
	"hijack/rules"
)

// Preset is the pad preset.
type Preset struct{}

// Spec declares pad's parameters.
func (Preset) Spec() rules.PresetSpec {
	return rules.PresetSpec{
		Name: "pad",
		Doc:  "insert NOPs of pseudo-random lengths before instructions, to exercise code moving",
		Params: []rules.ParamSpec{
			rules.IntParam("seed", 1, math.MinInt64, math.MaxInt64,
				"seeds the pseudo-random choice of NOP lengths"),
			rules.IntParam("maxlen", 15, 1, 15,
				"longest NOP to insert, in bytes"),
			rules.BoolParam("after", false,
				"also insert NOPs after every instruction that can fall through, on the fall-through path only (exercises code on edges)"),
			rules.BoolParam("cold", false,
				"at half the places (pseudo-randomly), insert a jump to the NOPs placed out of line, after the function, and a jump back (exercises code out of line)"),
		},
	}
}

// Begin starts padding o: pad has nothing to settle per object.
func (Preset) Begin(o *ibr.Object, params []rules.Params) (preset.Session, error) {
	return session{}, nil
}

type session struct{}

func (session) Finish() error { return nil }

// Apply inserts NOPs before every instruction of funcs.
func (session) Apply(funcs []*ibr.Func, params rules.Params, warn func(string)) error {
	seed := uint64(params.Int("seed"))
	maxlen := int(params.Int("maxlen"))
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	// One snippet per length, shared: snippets are never modified.
	snips := make([]*ibr.Snippet, maxlen+1)
	var colds []*ibr.Snippet
	cold := params.Bool("cold")
	if cold {
		colds = make([]*ibr.Snippet, maxlen+1)
	}
	for n := 1; n <= maxlen; n++ {
		snips[n] = &ibr.Snippet{Code: kit.Nops(n)}
		if cold {
			colds[n] = outOfLine(n)
		}
	}
	pick := func() *ibr.Snippet {
		n := 1 + rng.IntN(maxlen)
		if cold && rng.IntN(2) == 0 {
			return colds[n]
		}
		return snips[n]
	}
	after := params.Bool("after")
	for _, fn := range funcs {
		s := fn.Section
		for i := fn.Start; i < fn.End; i++ {
			if s.CanInsertBefore(i) {
				if err := s.InsertBefore(i, pick()); err != nil {
					return err
				}
			}
			if after && i+1 < fn.End && kit.FallThrough(s, i) {
				if err := s.InsertAfter(i, pick()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// outOfLine returns a snippet that jumps to n bytes of NOPs in its cold
// part, which jumps back to the end of the jump.
func outOfLine(n int) *ibr.Snippet {
	jmp := []byte{0xe9, 0, 0, 0, 0}
	return &ibr.Snippet{
		Code:  jmp,
		Links: []ibr.SnippetLink{{Off: 1, End: 5, To: ibr.LinkCold}},
		Cold: &ibr.Snippet{
			Code:  append(kit.Nops(n), jmp...),
			Links: []ibr.SnippetLink{{Off: n + 1, End: n + 5, To: ibr.LinkHot, Delta: 5}},
		},
	}
}

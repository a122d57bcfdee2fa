package kit

import (
	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/ibr"
)

// Before returns where code that must run right before instruction i of
// g's function can go: before i, or, when i is glued to the prefix
// instruction before it (a prefix ibr split off, which must stay with
// it), before that prefix (a branch that enters between the prefix and
// the instruction skips code there). ok is false when neither takes code:
// an instruction glued to the one before it (the call of a TLS
// general- or local-dynamic sequence) or not in a rewritable section.
func Before(g *cfg.Graph, i int) (at int, ok bool) {
	s := g.Sec
	switch {
	case s.CanInsertBefore(i):
		return i, true
	case i > g.Func.Start && s.Insts[i-1].Flags&ibr.Prefix != 0 && s.CanInsertBefore(i-1):
		return i - 1, true
	}
	return 0, false
}

// Place returns where code that must run before instruction i and that
// reads the registers keep (the registers of an address it computes, say)
// can go with the least saving: Before(g, i), or, when the status flags
// are live there, the nearest earlier point of i's block where they are
// dead, so that the code may change them freely. It never moves code
// across a branch, a call, an instruction liveness cannot model, or one
// that writes a register of keep: whenever the code runs, i follows, and
// keep's registers hold what i will use. lv is g's liveness.
func Place(g *cfg.Graph, lv *cfg.Liveness, i int, keep effect.RegSet) (at int, ok bool) {
	at, ok = Before(g, i)
	if !ok || lv.Before(at).Flags&effect.Status == 0 {
		return at, ok
	}
	s := g.Sec
	b := g.BlockOf(i)
	for j := at - 1; j >= b.Start; j-- {
		e := lv.Effect(j)
		if !e.Known || e.Ctrl != effect.None || (e.Def|e.Partial)&keep != 0 {
			break
		}
		if s.CanInsertBefore(j) && lv.Before(j).Flags&effect.Status == 0 {
			return j, true
		}
	}
	return at, true
}

// FallThrough reports whether code inserted after instruction i of s
// (ibr.Section.InsertAfter) can go there and runs whenever i continues
// with the next instruction: i is code that may fall through, and not a
// prefix the next instruction is glued to. (Branches to the next
// instruction skip such code: it is code on the fall-through edge.)
func FallThrough(s *ibr.Section, i int) bool {
	if !s.CanInsertAfter(i) {
		return false
	}
	in := &s.Insts[i]
	return effect.Of(s.Asm(i), &in.Layout, s.Bytes(i)).Ctrl.FallsThrough()
}

// Analysis is what placing code into an object rests on: the control flow
// graph and the liveness of registers and flags of each function, computed
// once, before any code goes in. They describe the original instructions,
// and stay true while inserted code keeps what is live.
type Analysis struct {
	Prog *cfg.Program
	Live map[*cfg.Graph]*cfg.Liveness
}

// Analyze analyses o.
func Analyze(o *ibr.Object) *Analysis {
	p := cfg.Build(o)
	return &Analysis{Prog: p, Live: p.Liveness()}
}

// Func returns the graph and the liveness of fn.
func (a *Analysis) Func(fn *ibr.Func) (*cfg.Graph, *cfg.Liveness) {
	g := a.Prog.ByFunc[fn]
	return g, a.Live[g]
}

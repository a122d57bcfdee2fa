package kit

import (
	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/ibr"
)

// Edge says where code for a control-flow edge goes: after instruction
// Inst, on its fall-through path (After), or before it (Inst is an
// unconditional jump along the edge).
type Edge struct {
	Inst  int
	After bool
}

// EdgeTo returns where code for the edge from block p to block t of g
// goes: on p's fall-through into t, or before p's unconditional jump to
// t. A conditional jump taken to t would need a block of its own: such
// edges are refused, as is a fall-through from a conditional jump whose
// taken target is t too.
func EdgeTo(g *cfg.Graph, p *cfg.Block, t int) (Edge, bool) {
	last := p.End - 1
	s := g.Sec
	tb := g.Blocks[t]
	in := &s.Insts[last]
	if in.Kind != ibr.Code || in.Flags&ibr.Prefix != 0 {
		return Edge{}, false
	}
	ctl := effect.Of(s.Asm(last), &in.Layout, s.Bytes(last)).Ctrl
	switch {
	case p.End == tb.Start && ctl.FallsThrough() && ctl != effect.Call:
		if in.Link != nil && in.Link.Kind == ibr.LinkBranch && in.Link.Target == tb.Start {
			return Edge{}, false
		}
		return Edge{Inst: last, After: true}, true
	case ctl == effect.Jump && in.Link != nil && in.Link.Kind == ibr.LinkBranch && in.Link.Target == tb.Start && s.CanInsertBefore(last):
		return Edge{Inst: last}, true
	}
	return Edge{}, false
}

// Live returns what is live where code for the edge runs (lv is the
// function's liveness): after the instruction, everything live on any of
// its paths.
func (e Edge) Live(lv *cfg.Liveness) cfg.Live {
	if e.After {
		return lv.After(e.Inst)
	}
	return lv.Before(e.Inst)
}

// Insert inserts sn on the edge.
func (e Edge) Insert(s *ibr.Section, sn *ibr.Snippet) error {
	if e.After {
		return s.InsertAfter(e.Inst, sn)
	}
	return s.InsertBefore(e.Inst, sn)
}

// IVStep returns the constant instruction i adds to the 64-bit register
// r, when it is an induction-variable step: add or sub $imm, lea imm(r),
// inc, dec.
func IVStep(s *ibr.Section, i int, r effect.Reg) (int64, bool) {
	a := s.Asm(i)
	reg := x86asm.RAX + x86asm.Reg(r)
	imm := func(k int) (int64, bool) {
		v, ok := a.Args[k].(x86asm.Imm)
		return int64(v), ok
	}
	switch a.Op {
	case x86asm.ADD, x86asm.SUB:
		if a.Args[0] != reg {
			return 0, false
		}
		v, ok := imm(1)
		if a.Op == x86asm.SUB {
			v = -v
		}
		return v, ok
	case x86asm.INC, x86asm.DEC:
		if a.Args[0] != reg {
			return 0, false
		}
		if a.Op == x86asm.DEC {
			return -1, true
		}
		return 1, true
	case x86asm.LEA:
		m, ok := a.Args[1].(x86asm.Mem)
		if a.Args[0] != reg || !ok || m.Base != reg || m.Index != 0 || m.Segment != 0 {
			return 0, false
		}
		return m.Disp, true
	}
	return 0, false
}

package kit

import (
	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/ibr"
	"hijack/snippet"
)

// Edge says where code for a control-flow edge goes: after instruction
// Inst, on its fall-through path (After), before it (Inst is an
// unconditional jump along the edge), or out of line on the taken path
// of the conditional jump Inst (Taken; see EdgeToOrTaken).
type Edge struct {
	Inst  int
	After bool
	Taken bool
	// To is, on a taken path, the instruction the jump goes to.
	To int
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

// EdgeToOrTaken is EdgeTo, and also finds a place for code on the taken
// path of a conditional jump from p to t (jcc, not jrcxz or loop): the
// code goes out of line, after the function, where the jump now branches,
// and jumps on to t (Edge.Taken, ibr.Section.InsertTaken). Codes put on
// the same path run in the order they were put there.
func EdgeToOrTaken(g *cfg.Graph, p *cfg.Block, t int) (Edge, bool) {
	if e, ok := EdgeTo(g, p, t); ok {
		return e, true
	}
	last := p.End - 1
	s := g.Sec
	in := &s.Insts[last]
	if in.Kind != ibr.Code || in.Flags&ibr.Prefix != 0 || in.Link == nil || in.Link.Kind != ibr.LinkBranch || in.Link.Target != g.Blocks[t].Start {
		return Edge{}, false
	}
	if _, ok := jccCond(s.Asm(last).Op); !ok || !s.CanInsertBefore(last) {
		return Edge{}, false
	}
	if p.End == g.Blocks[t].Start {
		return Edge{}, false // (taken and fall-through both reach t)
	}
	return Edge{Inst: last, Taken: true, To: in.Link.Target}, true
}

// jccCond returns the condition code of a jcc (its opcode's low nibble,
// as snippet.Cond numbers them).
func jccCond(op x86asm.Op) (snippet.Cond, bool) {
	for c, j := range [...]x86asm.Op{x86asm.JO, x86asm.JNO, x86asm.JB, x86asm.JAE, x86asm.JE, x86asm.JNE, x86asm.JBE, x86asm.JA,
		x86asm.JS, x86asm.JNS, x86asm.JP, x86asm.JNP, x86asm.JL, x86asm.JGE, x86asm.JLE, x86asm.JG} {
		if op == j {
			return snippet.Cond(c), true
		}
	}
	return 0, false
}

// Live returns what is live where code for the edge runs (lv is the
// function's liveness): after the instruction, everything live on any of
// its paths; before an unconditional jump, what the jump needs too; on a
// taken path, the registers live before the jump (on either of its
// paths) and the flags live where it goes (the jump, re-targeted to the
// code, has tested its own). Registers live on the other path too, not
// just at the target: code put on the same edge later may read them (a
// loop's sweeps each read their address registers at its exits, and the
// first must not take the second's as scratch where the target no longer
// needs them).
func (e Edge) Live(lv *cfg.Liveness) cfg.Live {
	switch {
	case e.After:
		return lv.After(e.Inst)
	case e.Taken:
		return cfg.Live{Regs: lv.Before(e.Inst).Regs, Flags: lv.Before(e.To).Flags}
	}
	return lv.Before(e.Inst)
}

// Insert inserts sn on the edge.
func (e Edge) Insert(s *ibr.Section, sn *ibr.Snippet) error {
	switch {
	case e.After:
		return s.InsertAfter(e.Inst, sn)
	case e.Taken:
		return s.InsertTaken(e.Inst, sn)
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

package blockcount

import (
	"math/bits"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/ibr"
	"hijack/preset/kit"
	"hijack/snippet"
)

// A selfLoop is a block that is a loop by itself (its conditional branch
// jumps back to its start, it falls through when the loop ends) and that
// steps an induction register by a constant power of two once per
// iteration. Its count is not kept by an add per iteration (a memory
// increment in a tight loop is a store-to-load dependency of several
// cycles) but from the register: on each entry edge the counter loses
// iv>>k, at the exit it gains iv>>k, k = log2 |step| (the other way round
// for a negative step). With n iterations iv grows by n*step, so
// (iv_exit>>k) - (iv_entry>>k) = n exactly (an arithmetic shift is floor
// division, and the two differ by a multiple of 2^k). A signal handler
// that runs the same loop in between adds its own iterations the same
// way. A loop left other than through its exit (a longjmp out of a signal
// handler) leaves its count wrong; no other way out exists, as the block
// neither calls nor jumps elsewhere.
type selfLoop struct {
	iv      effect.Reg
	shift   int  // k
	neg     bool // the step is negative
	entries []kit.Edge
	exit    kit.Edge
}

// findSelfLoop recognises b as a selfLoop.
func findSelfLoop(g *cfg.Graph, lv *cfg.Liveness, b *cfg.Block) (*selfLoop, bool) {
	if b.Index == 0 || b.External || len(b.Succs) != 2 || b.End-b.Start < 2 {
		return nil, false
	}
	s := g.Sec
	last := b.End - 1
	in := &s.Insts[last]
	if in.Kind != ibr.Code || in.Link == nil || in.Link.Kind != ibr.LinkBranch || in.Link.Target != b.Start {
		return nil, false
	}
	if e := lv.Effect(last); !e.Known || e.Ctrl != effect.CondJump {
		return nil, false
	}
	var exit *cfg.Block
	for _, x := range b.Succs {
		if x != b {
			exit = x
		}
	}
	if exit == nil || exit.Start != b.End || !kit.FallThrough(s, last) {
		return nil, false
	}
	// Straight-line code: nothing leaves the block before its branch.
	var defs [16]int
	for i := b.Start; i < last; i++ {
		e := lv.Effect(i)
		if !e.Known || e.Ctrl != effect.None || s.Insts[i].Kind != ibr.Code {
			return nil, false
		}
		for r := effect.Reg(0); r < 16; r++ {
			if (e.Def | e.Partial).Has(r) {
				defs[r]++
			}
		}
	}
	if e := lv.Effect(last); (e.Def | e.Partial) != 0 {
		return nil, false // loop, jrcxz-like branches: keep it simple
	}
	l := &selfLoop{}
	found := false
	for r := effect.Reg(0); r < 16 && !found; r++ {
		if r == effect.RSP || defs[r] != 1 {
			continue
		}
		for i := b.Start; i < last; i++ {
			if !(lv.Effect(i).Def | lv.Effect(i).Partial).Has(r) {
				continue
			}
			step, ok := kit.IVStep(s, i, r)
			if !ok || step == 0 {
				break
			}
			mag := uint64(step)
			if step < 0 {
				mag = uint64(-step)
			}
			if mag&(mag-1) != 0 || mag > 1<<30 {
				break
			}
			l.iv, l.shift, l.neg, found = r, bits.TrailingZeros64(mag), step < 0, true
		}
	}
	if !found {
		return nil, false
	}
	for _, p := range b.Preds {
		if p == b {
			continue
		}
		e, ok := kit.EdgeTo(g, p, b.Index)
		if !ok {
			return nil, false
		}
		l.entries = append(l.entries, e)
	}
	if len(l.entries) == 0 {
		return nil, false
	}
	l.exit = kit.Edge{Inst: last, After: true}
	return l, true
}

// countLoop inserts the entry and exit code of a selfLoop counted by
// counter k.
func (ss *session) countLoop(g *cfg.Graph, lv *cfg.Liveness, l *selfLoop, k int) error {
	for _, e := range l.entries {
		if err := ss.ivAdd(g, lv, e, l, k, l.neg); err != nil {
			return err
		}
	}
	return ss.ivAdd(g, lv, l.exit, l, k, !l.neg)
}

// ivAdd inserts at edge e the code that adds (or subtracts) iv>>shift to
// counter k, keeping every register and the flags:
//
//	mov %iv,T; sar $shift,T; add T,%fs:counters+8(k+1)
//
// with T (when shifting) and the initial-exec base from Scratch, and the
// flags saved where they are live. It runs once per loop entry or exit,
// so saving is cheap.
func (ss *session) ivAdd(g *cfg.Graph, lv *cfg.Liveness, e kit.Edge, l *selfLoop, k int, add bool) error {
	live := e.Live(lv)
	flagsLive := live.Flags&effect.Status != 0
	need := 0
	if l.shift > 0 {
		need++
	}
	if ss.slots.Model == kit.InitialExec {
		need++
	}
	bb := ss.b
	var free, borrowed []effect.Reg
	if need > 0 {
		var err error
		free, borrowed, err = kit.Scratch(need, live.Regs, effect.RSP.Set()|l.iv.Set(), l.iv.Set())
		if err != nil {
			return err
		}
	}
	stepped := flagsLive || len(borrowed) > 0
	if stepped {
		bb.Save(borrowed...)
		if flagsLive {
			bb.Bytes(0x9c) // pushfq
		}
	}
	u := snippet.NoReg
	if ss.slots.Model == kit.InitialExec {
		u = kit.Reg(free[len(free)-1])
	}
	ctr := ss.slots.At(bb, k+1, u, true, stepped)
	src := kit.Reg(l.iv)
	if l.shift > 0 {
		t := kit.Reg(free[0])
		bb.MovQ(src, t)
		bb.SarQ(snippet.Imm(int64(l.shift)), t)
		src = t
	}
	if add {
		bb.AddQ(src, ctr)
	} else {
		bb.SubQ(src, ctr)
	}
	if stepped {
		if flagsLive {
			bb.Bytes(0x9d) // popfq
		}
		bb.Restore(borrowed...)
	}
	sn, err := bb.Assemble()
	if err != nil {
		return err
	}
	return e.Insert(g.Sec, sn)
}

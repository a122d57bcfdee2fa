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
// cycles) but from the register: each entry edge stores iv>>k into a
// per-thread slot of the loop (a plain store: no flags, no register when
// the shift is 0 and the TLS model local-exec), and the exit adds
// (iv>>k) - slot to the block's counter, k = log2 |step| (negated for a
// negative step). With n iterations iv grows by n*step, so the difference
// is n exactly (an arithmetic shift is floor division, and the two values
// differ by a multiple of 2^k). The counter itself only ever grows by
// completed loop runs: read while a thread is inside the loop (a process
// exiting with its threads running), it lacks the run in progress, as a
// per-iteration count would lack the rest of it. A loop run left other
// than through its exit (a longjmp out of a signal handler; the block
// neither calls nor jumps elsewhere) is not counted; the next entry
// stores the slot afresh. One case makes a count wrong: a signal handler
// that runs the same loop in the same thread while it is in progress
// (the handler's entry overwrites the slot).
type selfLoop struct {
	iv      effect.Reg
	slot    int  // the loop's per-thread slot (kit.Slots index)
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
	l.slot = ss.nloops
	ss.nloops++
	for _, e := range l.entries {
		if err := ss.loopEntry(g, lv, e, l); err != nil {
			return err
		}
	}
	return ss.loopExit(g, lv, l, k)
}

// loopEntry stores iv>>shift into the loop's slot at entry edge e:
//
//	mov %iv,%fs:loops+8j          (shift 0, local-exec: nothing else)
//	mov %iv,T; sar $shift,T; mov T,%fs:loops+8j
func (ss *session) loopEntry(g *cfg.Graph, lv *cfg.Liveness, e kit.Edge, l *selfLoop) error {
	need := 0
	if l.shift > 0 {
		need++ // T; sar changes the flags
	}
	if ss.loopSlots.Model == kit.InitialExec {
		need++
	}
	gd, err := ss.open(e.Live(lv), effect.RSP.Set()|l.iv.Set(), l.iv.Set(), need, l.shift > 0)
	if err != nil {
		return err
	}
	regs := gd.regs
	bb := ss.b
	u := snippet.NoReg
	if ss.loopSlots.Model == kit.InitialExec {
		u = regs[len(regs)-1]
	}
	src := kit.Reg(l.iv)
	if l.shift > 0 {
		bb.MovQ(src, regs[0])
		bb.SarQ(snippet.Imm(int64(l.shift)), regs[0])
		src = regs[0]
	}
	bb.MovQ(src, ss.loopSlots.At(bb, l.slot, u, true, false))
	ss.close(gd)
	sn, err := bb.Assemble()
	if err != nil {
		return err
	}
	return e.Insert(g.Sec, sn)
}

// loopExit adds the loop run's iterations to counter k on the exit:
//
//	mov %iv,T; sar $shift,T; sub %fs:loops+8j,T; add T,%fs:counters+8(k+1)
//
// or, for a negative step, sub T,%fs:loops+8j; mov %fs:loops+8j,T; add
// T,%fs:counters+8(k+1); the flags saved where they are live: it runs
// once per loop run.
func (ss *session) loopExit(g *cfg.Graph, lv *cfg.Liveness, l *selfLoop, k int) error {
	need := 1
	if ss.slots.Model == kit.InitialExec {
		need++
	}
	gd, err := ss.open(l.exit.Live(lv), effect.RSP.Set()|l.iv.Set(), l.iv.Set(), need, true)
	if err != nil {
		return err
	}
	regs := gd.regs
	bb := ss.b
	t := regs[0]
	u := snippet.NoReg
	if ss.slots.Model == kit.InitialExec {
		u = regs[1]
	}
	bb.MovQ(kit.Reg(l.iv), t)
	if l.shift > 0 {
		bb.SarQ(snippet.Imm(int64(l.shift)), t)
	}
	if l.neg {
		slot := ss.loopSlots.At(bb, l.slot, u, true, false)
		bb.SubQ(t, slot)
		bb.MovQ(slot, t)
	} else {
		bb.SubQ(ss.loopSlots.At(bb, l.slot, u, false, false), t)
	}
	bb.AddQ(t, ss.slots.At(bb, k+1, u, true, false))
	ss.close(gd)
	sn, err := bb.Assemble()
	if err != nil {
		return err
	}
	return l.exit.Insert(g.Sec, sn)
}

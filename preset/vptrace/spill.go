package vptrace

import (
	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/loops"
	"hijack/preset/kit"
)

// Loop spills: fewer saves in register-starved loops. A site whose
// snippet finds too few dead registers borrows live ones, pushing and
// popping them (and stepping over the red zone) at every access; in a
// loop that is every iteration, twice when the cache probe runs. Most
// such registers are not even used by the loop: callee-saved registers
// the function never touches, values live after the loop, registers a
// caller keeps across a call (IPA-RA). Those are saved once per loop run
// instead: at every entry edge the code steps over the red zone and
// pushes them, at every exit edge pops them and steps back; inside the
// loop they are free for the snippets.
//
// Only loops where that cannot change what the program computes: no
// instruction of the loop reads or writes rsp (so no stack operand, push,
// pop or call sees the lower stack pointer; no calls at all, nor system
// calls, interrupts, indirect jumps, instructions liveness cannot model,
// function exits), one header (reducible), no block other code may enter
// (External: a label taken, a landing pad), every entry and exit edge one
// that takes code (kit.EdgeTo), none shared with another spilled loop.
// The saved registers are not referenced by any instruction of the loop,
// so the values they are popped with at an exit are those they had at the
// entry, as without the spill. (While a run lasts, rsp is lower than the
// unwind tables say, as it is while any snippet has pushed: a debugger's
// backtrace from inside such a loop is off; no exception can be thrown
// there, as the loop has no call.)

// With tls initial-exec or indirect, one of the saved registers holds the
// slot array's address (indirect: this thread's array, mapped at the
// entry if it is not yet; initial-exec: its TLS offset) for the whole
// run: the sites of the loop find their slots through it instead of
// loading it at every access (4 instructions, 2 loads). Nothing in the
// loop writes it (the program does not reference it; snippets reserve
// it, and the code of other sites borrows it only to push and pop it);
// the array stays where it is while the thread runs code of the object.

// Where the loop has sites that probe the recent-page cache, two more of
// the saved registers, if the loop has them to spare, hold the address of
// the thread's table (loaded again after each call of a probe's miss
// path: the runtime maps the cache at the thread's first event) and of
// the runtime's hot line (the epoch): each probe then loads neither (3
// instructions, 3 loads) and needs one register fewer (probe.go). Not a
// reason to spill around a loop on its own: a short loop entered often
// would pay more for the saves than its probes save.

// loopRegs is what a block of a spilled loop has: registers free there,
// the register holding the slot base (base, when hasBase), and those of
// the cache probes (probeHoist: cache and hot, when hasCache and hasHot).
type loopRegs struct {
	free     effect.RegSet
	base     effect.Reg
	cache    effect.Reg
	hot      effect.Reg
	hasBase  bool
	hasCache bool
	hasHot   bool
}

// held returns the registers lr holds for the whole run (not free for
// the sites' code): the slot base and the cache probe's.
func (lr loopRegs) held() effect.RegSet {
	var h effect.RegSet
	if lr.hasBase {
		h |= 1 << lr.base
	}
	if lr.hasCache {
		h |= 1 << lr.cache
	}
	if lr.hasHot {
		h |= 1 << lr.hot
	}
	return h
}

// hoist returns the registers of lr that the cache probes read
// (probeHoist).
func (lr loopRegs) hoist() probeHoist {
	h := noHoist
	if lr.hasCache {
		h.cache = kit.Reg(lr.cache)
		if lr.hasHot {
			h.hot = kit.Reg(lr.hot)
		}
	}
	return h
}

// spillLoops chooses the loops of g to spill around and inserts their
// entry and exit code. cands are the sites that will get slot code
// (instrument), for which the registers are wanted; taken are edges that
// no spill code may share (stackSweepEdges). It returns, per block index,
// what a spilled loop provides there.
func (st *objState) spillLoops(g *cfg.Graph, cands []*site, taken map[kit.Edge]bool) (map[int]loopRegs, error) {
	lv := st.live[g]
	ls := st.analysis.Loops[g]
	if len(ls) == 0 || len(cands) == 0 {
		return nil, nil
	}
	// The deficit of each block: the most registers a site of it would
	// borrow (deficitC: with the cache's address in a register).
	deficit, deficitC := make(map[int]int), make(map[int]int)
	slotted := make(map[int]bool) // blocks with a site that reads its slot
	probing := make(map[int]bool) // blocks with a site that probes the cache
	for _, s := range cands {
		at, ok := st.placement(s, g)
		if !ok {
			continue
		}
		live := lv.Before(at)
		flags := live.Flags&effect.Status != 0
		want := st.regsWanted(s, flags, st.tls != kit.LocalExec, false)
		wantC := st.regsWanted(s, flags, st.tls != kit.LocalExec, true)
		dead := 0
		for r := effect.Reg(0); r < 16; r++ {
			if r != effect.RSP && !live.Regs.Has(r) && !(flags && r == effect.RAX) {
				dead++
			}
		}
		x := g.BlockOf(at).Index
		slotted[x] = slotted[x] || !s.exact
		probing[x] = probing[x] || (!s.exact && kindBits(s.kind) != 0)
		if d, ok := deficit[x]; !ok || want-dead > d {
			deficit[x] = want - dead
		}
		if d, ok := deficitC[x]; !ok || wantC-dead > d {
			deficitC[x] = wantC - dead
		}
	}
	free := make(map[int]loopRegs)
	used := taken
	// blocks control reaches: from the entry and every block entered
	// from outside (External)
	reach := g.Reachable(func(b *cfg.Block) bool { return b.External || b.Index == 0 })
	var visit func(l *loops.Loop) error
	visit = func(l *loops.Loop) error {
		// The registers to save: what the sites lack, and with the
		// slot base hoisted (not local-exec) one more, wherever the
		// loop has a site with slot code (hoisting saves a load of it at
		// every access); the cache's and the hot line's addresses where
		// a site probes (below).
		need, needC, slot, probes := 0, 0, false, false
		for _, x := range l.Nodes {
			if d, ok := deficit[x]; ok {
				need, slot = max(need, d), slot || slotted[x]
				needC, probes = max(needC, deficitC[x]), probes || probing[x]
			}
		}
		hasBase := st.tls != kit.LocalExec && slot
		if need == 0 && !hasBase {
			// (not for the cache's address alone: a short loop run
			// often would pay more for the saves than it saves)
			return nil
		}
		regs, entries, exits, ok := st.spillable(g, lv, l, used, reach)
		if !ok {
			for _, c := range l.Children {
				if err := visit(c); err != nil {
					return err
				}
			}
			return nil
		}
		// The order of regs: the slot base, the cache's and the hot
		// line's addresses, then the registers the sites lack. The
		// cache's only where the sites then lack nothing (what they
		// lack costs them a push and a pop at every access).
		held := 0
		if hasBase {
			held++
		}
		hasCache := probes && len(regs) >= held+needC+1
		hasHot := false
		if hasCache {
			need = needC
			held++
			hasHot = len(regs) >= held+need+1
			if hasHot {
				held++
			}
		}
		if len(regs) > held+need {
			regs = regs[:held+need]
		}
		var lr loopRegs
		for _, r := range regs {
			lr.free |= 1 << r
		}
		take := func(x int) effect.Reg {
			lr.free &^= 1 << regs[x]
			return regs[x]
		}
		if hasBase {
			lr.base, lr.hasBase = take(0), true
		}
		switch {
		case hasHot:
			lr.cache, lr.hot, lr.hasCache, lr.hasHot = take(held-2), take(held-1), true, true
		case hasCache:
			lr.cache, lr.hasCache = take(held-1), true
		}
		hoist := lr.hoist()
		b := st.b
		slots := st.slots()
		// insert puts what b holds on edge e
		insert := func(e kit.Edge) error {
			sn, err := b.Assemble()
			if err != nil {
				return err
			}
			used[e] = true
			return e.Insert(g.Sec, sn)
		}
		for _, e := range entries {
			b.Save(regs...)
			if hasBase {
				// The indirect array's address is tested (flags).
				flags := st.tls == kit.Indirect && e.Live(lv).Flags&effect.Status != 0
				if flags {
					b.Pushfq()
				}
				slots.At(b, 0, kit.Reg(regs[0]), true, true)
				if flags {
					b.Popfq()
				}
			}
			if hasCache {
				loadProbeTable(b, hoist.cache)
			}
			if hasHot {
				loadProbeHot(b, hoist.hot)
			}
			if err := insert(e); err != nil {
				return err
			}
		}
		for _, e := range exits {
			b.Restore(regs...)
			if err := insert(e); err != nil {
				return err
			}
		}
		for _, x := range l.Nodes {
			free[x] = lr
		}
		return nil
	}
	for _, l := range ls {
		if l.Depth == 1 {
			if err := visit(l); err != nil {
				return nil, err
			}
		}
	}
	return free, nil
}

// regsWanted is how many registers the slot code of s takes with the cache
// probe (code, probeScratch), rax for the flags included; hoisted: the
// slot base is a spilled loop's (not counted); cached: so is the cache's
// address (the probe takes one register fewer).
func (st *objState) regsWanted(s *site, flagsLive, hoisted, cached bool) int {
	need := s.addrRegs()
	probe := probeTakes(cached)
	switch {
	case s.exact:
	case st.tls == kit.LocalExec || hoisted:
		need += probe - 1 // the page register serves the probe
	default:
		need += probe // one of them the slot base
	}
	if flagsLive {
		need++
	}
	return need
}

// spillable reports whether registers can be saved around the runs of
// loop l (see above), and which: those no instruction of the loop
// references and that are live in it (a dead one is free already), in
// the order Scratch borrows them (r15 down). It returns the edges too.
func (st *objState) spillable(g *cfg.Graph, lv *cfg.Liveness, l *loops.Loop, used map[kit.Edge]bool, reach []bool) (regs []effect.Reg, entries, exits []kit.Edge, ok bool) {
	if l.Irreducible() {
		return nil, nil, nil, false
	}
	header := l.Headers[0]
	member := make(map[int]bool, len(l.Nodes))
	for _, x := range l.Nodes {
		member[x] = true
	}
	var refs effect.RegSet
	for _, x := range l.Nodes {
		b := g.Blocks[x]
		if b.External || b.Exits != 0 || b.Table {
			return nil, nil, nil, false
		}
		for i := b.Start; i < b.End; i++ {
			e := lv.Effect(i)
			if !e.Known {
				return nil, nil, nil, false
			}
			switch e.Ctrl {
			case effect.Call, effect.IndirectCall, effect.Syscall, effect.Interrupt, effect.IndirectJump:
				return nil, nil, nil, false
			}
			all := e.Use | e.Def | e.Partial
			for k := 0; k < e.NMem; k++ {
				all |= kit.AddrRegs(e.Mem[k].Mem)
			}
			if all.Has(effect.RSP) {
				return nil, nil, nil, false
			}
			refs |= all
		}
		for _, p := range b.Preds {
			if member[p.Index] || !reach[p.Index] {
				continue // (padding between blocks falls through, never runs)
			}
			if x != header {
				return nil, nil, nil, false
			}
			e, ok := kit.EdgeTo(g, p, header)
			if !ok || used[e] {
				return nil, nil, nil, false
			}
			entries = append(entries, e)
		}
		for _, s := range b.Succs {
			if member[s.Index] {
				continue
			}
			e, ok := kit.EdgeTo(g, b, s.Index)
			if !ok || used[e] {
				return nil, nil, nil, false
			}
			exits = append(exits, e)
		}
	}
	if len(entries) == 0 || len(exits) == 0 {
		return nil, nil, nil, false
	}
	live := lv.Before(g.Blocks[header].Start).Regs
	for r := effect.Reg(15); r < 16; r-- {
		// (never rax: a site whose flags are live keeps them there)
		if r != effect.RSP && r != effect.RAX && !refs.Has(r) && live.Has(r) {
			regs = append(regs, r)
		}
	}
	if len(regs) == 0 {
		return nil, nil, nil, false
	}
	return regs, entries, exits, true
}

// stackSweepEdges returns the edges where the code of a sweep whose
// address is rsp-relative (usestack) goes: it computes the address from
// rsp, so it must not run between a spilled loop's save and restore,
// which code on a shared edge would (a sibling loop's exit into a spilled
// loop's header, say). Other sweeps' code does not mind: their addresses
// use registers the program keeps, and they pick registers by the
// program's liveness (a saved register, live, is only borrowed).
func stackSweepEdges(sweeps []*sweep) map[kit.Edge]bool {
	m := make(map[kit.Edge]bool)
	for _, sw := range sweeps {
		if sw == nil || !kit.AddrRegs(sw.site.acc.Mem).Has(effect.RSP) {
			continue
		}
		for _, e := range sw.entries {
			m[e] = true
		}
		for _, e := range sw.exits {
			m[e.Edge] = true
		}
	}
	return m
}

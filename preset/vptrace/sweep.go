package vptrace

import (
	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/ibr"
	"hijack/loops"
	"hijack/preset/kit"
)

// A sweep is a site inside a loop whose address moves by a constant step
// per iteration (or not at all): base + iv*scale + disp, where iv is the
// loop's only induction register and every other register of the address
// is loop-invariant. Instead of checking its page at every access, hijack
// records the address of its first access when the loop is entered and, on
// every exit, the range from it to the last access (Spindle's idea of
// summarising affine loop accesses). With a step of at most a page every
// page in between is touched; with a larger step the runtime steps through
// the accesses (site.stride). Either way the trace is exact and the
// per-iteration cost disappears.
//
// The step may also be a loop-invariant register times a constant (a
// column walk down a matrix whose row length is known at run time): then
// the runtime reads the register when the loop exits and the adjustments
// of the first and last addresses by one step are made there (dynStep).
//
// A register of the address that the loop writes may still be invariant:
// a pointer the compiler spilled and reloads from its stack slot every
// iteration (a loop over more arrays than there are registers). It is,
// where the site's block loads it from the slot before the site, the loop
// keeps rsp and writes no memory that could be the slot (stackReload);
// the entry and exit code load it from the slot too (site.reload).
type sweep struct {
	site  *site
	step  int64 // bytes per iteration (may be negative or zero)
	first int64 // added to the address computed at entry to get the first access
	// firstStep: with a register step, the first access is one step after
	// the address computed at entry.
	firstStep bool
	// entries and exits are the edges where code goes; header is the
	// loop's header block, which every run enters through an entry.
	entries []kit.Edge
	exits   []exitPoint
	header  int
}

type exitPoint struct {
	kit.Edge
	last int64 // added to the address computed at the exit to get the last access
	// backStep: with a register step, the last access is one step before
	// the address computed at the exit.
	backStep bool
}

// loopInfo is what sweep detection needs of one loop.
type loopInfo struct {
	l      *loops.Loop
	header int
	member map[int]bool
	// defs counts, per register, the instructions of the loop that write it.
	defs [16]int
	// defAt is the instruction of the single definition, when there is one.
	defAt [16]int
	ok    bool // no calls, unknown instructions or function exits inside
	idom  []int
	index map[int]int // block -> node in the acyclic body graph
}

// takenExitSize is the least access size of a sweep whose loop may leave
// through a conditional jump's taken path (code re-targeted there,
// kit.EdgeToOrTaken). Such a loop is mostly a search, whose runs end
// where the data says: over words (a B-tree node's keys, a table's
// entries) a run reads several, where the sweep's entry and exit code
// (some 20 instructions where the run stays on a page the thread
// recorded lately) cost less than a check per access (4): the btree
// workload ran 0.82x the instructions and 0.92x the CPU time. Byte loops
// that stop on a byte they read are mostly parsers stopping after a byte
// or two (sqlite's varints: with them, a sqlite program ran 1.020x the
// instructions, its sqlite3BtreeTableMoveto 1.14x): they keep their
// checks.
const takenExitSize = 4

// findSweep decides whether a site can be summarised per loop run and
// where its code goes.
func (sel *selector) findSweep(st *site, infos map[*loops.Loop]*loopInfo) *sweep {
	if sel.exact || st.rep || st.vec != 0 || st.size <= 0 || st.hi-st.lo > 4096 || st.acc.Mem.Segment != 0 || st.acc.Masked {
		return nil
	}
	g := sel.g
	b := g.BlockOf(st.inst)
	l := sel.a.Info(b).Loop
	if l == nil || l.Irreducible() {
		return nil
	}
	li := infos[l]
	if li == nil {
		li = sel.loopInfo(l)
		infos[l] = li
	}
	if !li.ok {
		return nil
	}
	// Registers of the address: exactly one may change in the loop (one
	// more may be reloaded from the stack).
	m := st.acc.Mem
	var iv effect.Reg = 0xff
	var scale int64 = 1
	var reload *stackReload
	for k, r := range []x86asm.Reg{m.Base, m.Index} {
		if r == 0 || r == x86asm.RIP {
			continue
		}
		n, _, ok := effect.GPR(r)
		if !ok || r < x86asm.RAX || r > x86asm.R15 {
			return nil // 32-bit addressing: wraps
		}
		if li.defs[n] == 0 {
			continue
		}
		if reload == nil {
			if reload = sel.stackReload(st, n, li); reload != nil {
				continue
			}
		}
		if iv != 0xff || li.defs[n] != 1 {
			return nil
		}
		iv = n
		if k == 1 {
			scale = int64(m.Scale)
		}
	}
	if reload != nil && reload.reg == iv {
		return nil // (base and index the same register)
	}
	sw := &sweep{site: st, header: li.header}
	siteNode := li.index[b.Index]
	// Every iteration runs the site exactly once, and every exit follows
	// it in its iteration.
	for _, x := range l.Nodes {
		if sel.depthIn(l, x) {
			continue
		}
		for _, s := range g.Blocks[x].Succs {
			if s.Index == li.header && !loops.Dominates(li.idom, siteNode, li.index[x]) {
				return nil // a latch the site does not dominate
			}
		}
	}
	if sel.depthIn(l, b.Index) {
		return nil // in a nested loop
	}
	var def int
	var siteBeforeDef bool
	var dyn *dynStep
	if iv != 0xff {
		def = li.defAt[iv]
		c, ok := kit.IVStep(g.Sec, def, iv)
		if ok {
			sw.step = c * scale
		} else {
			inv, mult, ok := ivRegStep(g.Sec, def, iv)
			if !ok || li.defs[inv] != 0 || inv == iv {
				return nil
			}
			dyn = &dynStep{reg: inv, mult: mult * scale}
		}
		db := g.BlockOf(def)
		if sel.depthIn(l, db.Index) {
			return nil
		}
		defNode := li.index[db.Index]
		switch {
		case db == b:
			siteBeforeDef = st.inst < def
		case loops.Dominates(li.idom, siteNode, defNode):
			siteBeforeDef = true
		case loops.Dominates(li.idom, defNode, siteNode):
		default:
			return nil
		}
		// The definition must run every iteration too.
		for _, x := range l.Nodes {
			for _, s := range g.Blocks[x].Succs {
				if s.Index == li.header && li.member[x] && !loops.Dominates(li.idom, defNode, li.index[x]) {
					return nil
				}
			}
		}
		if sw.step > 4096 || sw.step < -4096 {
			// Pages in between are skipped: the runtime records each
			// access's page, stepping from the first to the last.
			if sw.step != int64(int32(sw.step)) {
				return nil
			}
			st.stride = sw.step
		}
		if !siteBeforeDef {
			sw.first = sw.step
			sw.firstStep = dyn != nil
		}
	}
	// Entries: edges into the header from outside.
	for _, p := range g.Blocks[li.header].Preds {
		if li.member[p.Index] {
			continue
		}
		pt, ok := kit.EdgeToOrTaken(g, p, li.header)
		if !ok {
			return nil
		}
		sw.entries = append(sw.entries, pt)
	}
	// Exits: edges from the loop to outside, each after the site ran in
	// its iteration.
	for _, x := range l.Nodes {
		xb := g.Blocks[x]
		for _, s := range xb.Succs {
			if li.member[s.Index] {
				continue
			}
			if !loops.Dominates(li.idom, siteNode, li.index[x]) {
				return nil
			}
			pt, ok := kit.EdgeTo(g, xb, s.Index)
			if !ok && st.size >= takenExitSize {
				pt, ok = kit.EdgeToOrTaken(g, xb, s.Index)
			}
			if !ok {
				return nil
			}
			e := exitPoint{Edge: pt}
			if iv != 0xff && siteBeforeDef {
				// Did the definition run after the site in the exit's
				// iteration? Then the register is one step ahead.
				db := g.BlockOf(def)
				if db == xb || loops.Dominates(li.idom, li.index[db.Index], li.index[x]) {
					e.last = -sw.step
					e.backStep = dyn != nil
				}
			}
			sw.exits = append(sw.exits, e)
		}
	}
	if len(sw.entries) == 0 || len(sw.exits) == 0 {
		return nil
	}
	st.dynStep = dyn
	st.reload = reload
	return sw
}

// stackReload returns, when register r of sweep site st is loaded from a
// stack slot in st's block before st (`mov off(%rsp), r`, 64 bits, and r
// not written between) and loop li keeps rsp and writes no memory but
// other stack slots (it makes no calls: li.ok), where r's value is: the
// same slot's at every access, at the loop's entries and at its exits.
// Only a store of the loop could change the slot while it runs: a store
// through a pointer too (the slot may be a local whose address was
// taken: that is why the compiler reloads it), so the loop has none.
func (sel *selector) stackReload(st *site, r effect.Reg, li *loopInfo) *stackReload {
	if li.defs[effect.RSP] != 0 {
		return nil
	}
	g := sel.g
	b := g.BlockOf(st.inst)
	var off int64
	found := false
	for i := st.inst - 1; i >= b.Start && !found; i-- {
		e := sel.live.Effect(i)
		if !(e.Def | e.Partial).Has(r) {
			continue
		}
		a := g.Sec.Asm(i)
		mem, isMem := a.Args[1].(x86asm.Mem)
		if a.Op != x86asm.MOV || a.Args[0] != x86asm.RAX+x86asm.Reg(r) || !isMem || e.Partial.Has(r) ||
			mem.Base != x86asm.RSP || mem.Index != 0 || mem.Segment != 0 {
			return nil
		}
		off, found = mem.Disp, true
	}
	if !found {
		return nil
	}
	for _, x := range li.l.Nodes {
		xb := g.Blocks[x]
		for i := xb.Start; i < xb.End; i++ {
			e := sel.live.Effect(i)
			for _, acc := range e.Mem[:e.NMem] {
				if !acc.Write {
					continue
				}
				am := acc.Mem
				if am.Base != x86asm.RSP || am.Index != 0 || am.Segment != 0 || acc.Size <= 0 || acc.Rep || acc.VSIB ||
					am.Disp < off+8 && off < am.Disp+int64(acc.Size) {
					return nil
				}
			}
		}
	}
	return &stackReload{reg: r, off: off}
}

// depthIn reports whether block bi of g lies in a loop nested in l.
func (sel *selector) depthIn(l *loops.Loop, bi int) bool {
	inner := sel.a.Info(sel.g.Blocks[bi]).Loop
	return inner != nil && inner.Within(l)
}

// loopInfo gathers the facts about loop l that sweeps need.
func (sel *selector) loopInfo(l *loops.Loop) *loopInfo {
	g := sel.g
	li := &loopInfo{l: l, header: l.Headers[0], member: make(map[int]bool), ok: true}
	for _, x := range l.Nodes {
		li.member[x] = true
	}
	for _, x := range l.Nodes {
		b := g.Blocks[x]
		if b.Exits != 0 {
			li.ok = false
		}
		for i := b.Start; i < b.End; i++ {
			e := sel.live.Effect(i)
			switch {
			case !e.Known:
				li.ok = false
			case e.Ctrl == effect.Call || e.Ctrl == effect.IndirectCall || e.Ctrl == effect.Syscall || e.Ctrl == effect.Interrupt || e.Ctrl == effect.IndirectJump:
				li.ok = false
			}
			for r := effect.Reg(0); r < 16; r++ {
				if (e.Def | e.Partial).Has(r) {
					li.defs[r]++
					li.defAt[r] = i
				}
			}
		}
	}
	li.index, li.idom, _ = acyclicBody(g, l)
	return li
}

// acyclicBody numbers the blocks of loop l (reducible) as the nodes of its
// acyclic body, the loop without the edges back to its header, rooted at
// the header (node 0); it returns each block's node, the body's immediate
// dominators (loops.Dominators) and the latches, the nodes with an edge
// back to the header.
func acyclicBody(g *cfg.Graph, l *loops.Loop) (index map[int]int, idom []int, latches []int) {
	header := l.Headers[0]
	index = make(map[int]int, len(l.Nodes))
	index[header] = 0
	order := []int{header}
	for _, x := range l.Nodes {
		if x != header {
			index[x] = len(order)
			order = append(order, x)
		}
	}
	succs := make([][]int, len(order))
	for k, x := range order {
		for _, s := range g.Blocks[x].Succs {
			j, in := index[s.Index]
			switch {
			case !in:
			case s.Index == header:
				latches = append(latches, k)
			default:
				succs[k] = append(succs[k], j)
			}
		}
	}
	return index, loops.Dominators(succs), latches
}

// ivRegStep recognises a definition of r that adds a register times a
// constant: add/sub %inv, %r, or lea (%r,%inv,s), %r (64-bit registers).
func ivRegStep(s *ibr.Section, i int, r effect.Reg) (inv effect.Reg, mult int64, ok bool) {
	a := s.Asm(i)
	reg := x86asm.RAX + x86asm.Reg(r)
	gpr64 := func(x x86asm.Reg) (effect.Reg, bool) {
		if x < x86asm.RAX || x > x86asm.R15 || x == x86asm.RSP {
			return 0, false
		}
		return effect.Reg(x - x86asm.RAX), true
	}
	switch a.Op {
	case x86asm.ADD, x86asm.SUB:
		src, isReg := a.Args[1].(x86asm.Reg)
		if a.Args[0] != reg || !isReg {
			return 0, 0, false
		}
		n, ok := gpr64(src)
		if !ok {
			return 0, 0, false
		}
		if a.Op == x86asm.SUB {
			return n, -1, true
		}
		return n, 1, true
	case x86asm.LEA:
		m, isMem := a.Args[1].(x86asm.Mem)
		if a.Args[0] != reg || !isMem || m.Segment != 0 || m.Disp != 0 {
			return 0, 0, false
		}
		switch {
		case m.Base == reg && m.Index != 0:
			n, ok := gpr64(m.Index)
			return n, int64(m.Scale), ok
		case m.Index == reg && m.Scale == 1 && m.Base != 0:
			n, ok := gpr64(m.Base)
			return n, 1, ok
		}
	}
	return 0, 0, false
}

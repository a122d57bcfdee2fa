package vptrace

import (
	"debug/elf"
	"fmt"
	"slices"

	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/ibr"
	"hijack/loops"
	"hijack/preset/kit"
	"hijack/snippet"
	"hijack/vptrace/abi"
)

// instrument inserts the tracing code of one site before its instruction
// (before the prefix the instruction is glued to, if any).
func (st *objState) instrument(s *site, exact bool) error {
	sec := s.fn.Section
	g := st.prog.ByFunc[s.fn]
	at, ok := st.placement(s, g)
	if !ok {
		return fmt.Errorf("cannot insert code before the instruction")
	}
	live := st.live[g].Before(at)
	lr := st.loopRegs[g.BlockOf(at).Index]
	live.Regs &^= lr.free
	// A slot base the block's previous site left in a register
	// (basechain.go): read the slot through it, as in a spilled loop.
	keep := false
	if l, ok := st.chain[s]; ok && !exact && !s.rep && !lr.hasBase && lr.free == 0 {
		if r, ok := st.chainedBase(g, s, at, live.Regs); ok {
			lr.base, lr.hasBase = r, true
		}
		keep = l.keep
	}
	e := st.live[g].Effect(at)
	// A second slot for a site outside loops: such code runs once per
	// call, and its callers may hand it two objects in turn (an
	// accessor called for x, then y), on two pages a single slot would
	// trade back and forth, each time through the cache probe. In a
	// loop, for a look-up in a table whose entries the data chooses
	// (table: an index bounded to two pages, smallTable, or computed
	// from a byte or word of the data, symbolIndexed), whose accesses
	// fall on up to three pages at random: such a site compares its
	// page with two slots and branches once (s.pair), where a branch per
	// slot would be mispredicted about every other access.
	inLoop := st.analysis.Info(g.BlockOf(s.inst)).LoopDepth > 0
	small := inLoop && st.smallTable(s, g)
	table := !exact && (small || st.dataTable(s, g))
	second := !exact && !s.rep && kindBits(s.kind) != 0 && (!inLoop || small || table && s.partner == 0)
	k := st.addSite(s, second)
	s.scattered = !second && st.scattered(s, g)
	s.pair = table && s.pairable()
	// (tls indirect: the thread's slot array tested by code that ran
	// before in the same call, arrayTests)
	mapped := st.arrays.mapped(g, at)
	sn, base, err := st.code(s, k, live.Regs, live.Flags&effect.Status != 0, e.Use, exact, lr, keep, mapped)
	if err != nil {
		return err
	}
	if base >= 0 {
		st.bases[s] = effect.Reg(base)
	}
	if err := sec.InsertBefore(at, sn); err != nil {
		return err
	}
	if !mapped && !exact && !s.rep && !lr.hasBase {
		st.arrays.tests(at) // (code's slots.At with write)
	}
	return nil
}

// dataTable reports whether s is a look-up in a table whose entries the data
// chooses, in a loop (smallTable, symbolIndexed): its accesses fall on up
// to three pages, which its slots (a second, or a partner's) hold.
func (st *objState) dataTable(s *site, g *cfg.Graph) bool {
	return st.analysis.Info(g.BlockOf(s.inst)).LoopDepth > 0 && (st.smallTable(s, g) || st.symbolIndexed(s, g))
}

// pairable reports whether s can check its two slots with one branch
// (s.pair): those of a partner that is not chained and its own, or its
// own and its second. The pair leaves the page register changed on a
// hit, so a span over a page (its last byte's page checked apart) cannot.
func (s *site) pairable() bool {
	if s.rep || kindBits(s.kind) == 0 || (s.twoPages && !s.carry()) {
		return false
	}
	return s.partner != 0 && !s.chained || s.second >= 0 && s.partner == 0
}

// symbolIndexed reports whether a register of s's address is computed,
// in s's block, by shifts and additions from a zero-extended byte or word
// of the data (movzbl, movzwl: one the code loads, or a register's low
// byte or word): a look-up in a table by a symbol of the data (bzip2's
// code lengths by MTF value, a decoder's tables by input byte, a
// histogram). Such a table usually spans a page or two, and the data
// chooses which page each access is on: two slots checked with one
// branch (s.pair) hold both pages, where a branch per slot would be
// mispredicted about every other time (1.7 million times per MB in
// bzip2's sendMTFValues). A site whose address is just loaded (a pointer
// chase) or hashed spreads over many pages; the pair would cost it four
// instructions and mispredict as often.
func (st *objState) symbolIndexed(s *site, g *cfg.Graph) bool {
	b := g.BlockOf(s.inst)
	lv := st.live[g]
	var from func(r effect.Reg, at, depth int) bool
	from = func(r effect.Reg, at, depth int) bool {
		if depth > 4 {
			return false
		}
		for i := at - 1; i >= b.Start; i-- {
			e := lv.Effect(i)
			if !(e.Def | e.Partial).Has(r) {
				continue
			}
			if !e.Known || e.Partial.Has(r) {
				return false
			}
			a := g.Sec.Asm(i)
			switch a.Op {
			case x86asm.MOVZX:
				// (a byte or word: what bounds an index)
				_, ok := indexBound(a, r)
				return ok
			case x86asm.SHL:
				if _, ok := a.Args[1].(x86asm.Imm); ok {
					return from(r, i, depth+1)
				}
			case x86asm.ADD, x86asm.LEA, x86asm.MOV:
				for q := effect.Reg(0); q < 16; q++ {
					if e.Use.Has(q) && q != effect.RSP && from(q, i, depth+1) {
						return true
					}
				}
			}
			return false
		}
		return false
	}
	for _, r := range []x86asm.Reg{s.acc.Mem.Index, s.acc.Mem.Base} {
		if n, _, ok := effect.GPR(r); ok && r != x86asm.RIP && from(n, s.inst, 0) {
			return true
		}
	}
	return false
}

// addSite numbers s, its record in the site table, and gives it its
// last-page slot and, if second, a second slot (ABI.md "Second slots"):
// slots are numbered apart from sites, in the order sites are added.
func (st *objState) addSite(s *site, second bool) int {
	k := len(st.sites)
	st.sites = append(st.sites, s)
	s.slot, s.second = st.nslots, -1
	st.nslots++
	if second {
		s.second = st.nslots
		st.nslots++
	}
	return k
}

// smallTable reports whether s indexes a table of at most two pages: the
// definition of its index register nearest before it in its block bounds
// the index (indexBound) so that index times scale stays within 8 KiB. It
// only chooses who gets a second slot: what any slot holds is right
// whatever the answer.
func (st *objState) smallTable(s *site, g *cfg.Graph) bool {
	m := s.acc.Mem
	idx, width, ok := effect.GPR(m.Index)
	if m.Index == 0 || !ok || width != 8 {
		return false
	}
	b := g.BlockOf(s.inst)
	for i := s.inst - 1; i >= b.Start; i-- {
		e := st.live[g].Effect(i)
		if !(e.Def | e.Partial).Has(idx) {
			continue
		}
		bound, ok := indexBound(g.Sec.Asm(i), idx)
		// (bound first: bound+1 times the scale may overflow)
		return ok && e.Partial&(1<<idx) == 0 && bound < 2*abi.PageSize && (bound+1)*uint64(m.Scale) <= 2*abi.PageSize
	}
	return false
}

// scattered reports whether a register of s's address comes, in the
// innermost loop around s, from a value the loop loads (loadedRegs). It
// only chooses where the site's code after a slot miss goes.
func (st *objState) scattered(s *site, g *cfg.Graph) bool {
	return kit.AddrRegs(s.acc.Mem)&st.ofLoop(s, g, st.loaded, st.loadedRegs) != 0
}

// ofLoop returns what of returns for the innermost loop around s (none:
// outside loops), once per loop (kept in seen).
func (st *objState) ofLoop(s *site, g *cfg.Graph, seen map[*loops.Loop]effect.RegSet, of func(*cfg.Graph, *loops.Loop) effect.RegSet) effect.RegSet {
	l := st.analysis.Info(g.BlockOf(s.inst)).Loop
	if l == nil {
		return 0
	}
	r, ok := seen[l]
	if !ok {
		r = of(g, l)
		seen[l] = r
	}
	return r
}

// loadedRegs returns the registers some instruction of loop l defines
// from memory other than a stack slot (a spilled variable: not
// followed), or computes (a hash, a scaled index, a pointer's field)
// from registers that are such, to a fixed point over the loop's
// instructions in any order: a look-up keyed by data, a pointer chase.
func (st *objState) loadedRegs(g *cfg.Graph, l *loops.Loop) effect.RegSet {
	return st.spread(g, l, func(i int, e *effect.Effect, def, loaded effect.RegSet) bool {
		for _, a := range e.Mem[:e.NMem] {
			if a.Arg >= 0 { // (its memory operand)
				// (a stack slot: neither loaded nor followed)
				return a.Mem.Base != x86asm.RSP && a.Mem.Base != x86asm.RBP
			}
		}
		return e.Use&loaded != 0
	})
}

// spread grows a set of registers to a fixed point over the instructions
// of loop l, in any order: an instruction that writes registers outside
// the set (def) adds them where adds says so, given the set so far. rsp
// is never in the result.
func (st *objState) spread(g *cfg.Graph, l *loops.Loop, adds func(i int, e *effect.Effect, def, set effect.RegSet) bool) effect.RegSet {
	var set effect.RegSet
	for grown := true; grown; {
		grown = false
		for _, bi := range l.Nodes {
			b := g.Blocks[bi]
			for i := b.Start; i < b.End; i++ {
				e := st.live[g].Effect(i)
				def := (e.Def | e.Partial) &^ set
				if def != 0 && adds(i, e, def, set) {
					set |= def
					grown = true
				}
			}
		}
	}
	return set &^ (1 << effect.RSP)
}

// steady reports whether s's bytes are likely on the page its slot holds
// (s.byAddr: its slot holds the page's base, and a hit costs three
// instructions fewer than with the page number, a miss three more):
// outside loops, or in a loop where every register of its address moves
// by constant steps or not at all (regularAt). An index a loop hashes,
// draws at random or loads (a look-up keyed by data, a pointer chase)
// changes page at most accesses. Only the cost depends on the answer:
// either way the site records what it touches.
func (st *objState) steady(s *site, g *cfg.Graph) bool {
	b := g.BlockOf(s.inst)
	if st.analysis.Info(b).Loop == nil {
		return true
	}
	bad := st.ofLoop(s, g, st.irregular, st.irregularRegs)
	regs := kit.AddrRegs(s.acc.Mem)
	for r := effect.Reg(0); r < 16; r++ {
		if regs.Has(r) && !st.regularAt(g, b, s.inst, r, bad, regularDepth) {
			return false
		}
	}
	return true
}

// irregularRegs returns the registers that loop l changes other than by
// adding constants or other such registers to them (add, sub, inc, dec,
// lea, a register copied or extended, a shift left by a constant, a
// multiplication by a constant, a conditional move of such a register),
// to a fixed point over the loop's instructions: any other write (a
// load, a multiply, an and, a call) makes a register irregular, and so
// does a computation from an irregular one. A register's value within a
// block is judged by the block's own definition of it, where there is one
// (regularAt): compiled code reuses a register for a loaded byte and, a
// few instructions on, for an index's wrapped value.
//
// A register the loop writes in one block only, one that not every
// iteration runs (conditionalOnce: a best match so far, a position
// found), keeps its page across the iterations that leave it alone: it
// stays regular (zstd's match loop reads ip[ml-3] with the best length
// ml, which a longer match changes: 4 instructions a candidate, not 7).
func (st *objState) irregularRegs(g *cfg.Graph, l *loops.Loop) effect.RegSet {
	rare := st.conditionalOnce(g, l)
	return st.spread(g, l, func(i int, e *effect.Effect, def, bad effect.RegSet) bool {
		if !e.Known {
			return true
		}
		if def&^rare[i] == 0 {
			return false
		}
		b := g.BlockOf(i)
		return !stepDef(g.Sec.Asm(i), def, func(r effect.Reg) bool {
			return st.regularAt(g, b, i, r, bad, regularDepth)
		})
	})
}

// conditionalOnce returns, by instruction, the registers it writes that
// no other block of loop l writes, where its block lies in l itself (not
// in a loop nested in it) and does not dominate every latch of l (an
// edge back to its header): writes on a conditional path of the body.
// None for an irreducible loop.
func (st *objState) conditionalOnce(g *cfg.Graph, l *loops.Loop) map[int]effect.RegSet {
	if l.Irreducible() {
		return nil
	}
	index, idom, latches := acyclicBody(g, l)
	// the blocks that write each register (-1: none; -2: more than one)
	var writer [16]int
	for r := range writer {
		writer[r] = -1
	}
	for _, x := range l.Nodes {
		b := g.Blocks[x]
		for i := b.Start; i < b.End; i++ {
			e := st.live[g].Effect(i)
			for r := effect.Reg(0); r < 16; r++ {
				if !(e.Def | e.Partial).Has(r) {
					continue
				}
				switch writer[r] {
				case -1:
					writer[r] = x
				case x:
				default:
					writer[r] = -2
				}
			}
		}
	}
	var rare map[int]effect.RegSet
	for r := effect.Reg(0); r < 16; r++ {
		if writer[r] < 0 {
			continue
		}
		b := g.Blocks[writer[r]]
		if st.analysis.Info(b).Loop != l {
			continue // (in a nested loop: many times an iteration)
		}
		every := true
		for _, latch := range latches {
			every = every && loops.Dominates(idom, index[b.Index], latch)
		}
		if every {
			continue
		}
		if rare == nil {
			rare = map[int]effect.RegSet{}
		}
		for i := b.Start; i < b.End; i++ {
			if e := st.live[g].Effect(i); (e.Def | e.Partial).Has(r) {
				rare[i] |= 1 << r
			}
		}
	}
	return rare
}

// regularDepth bounds how many definitions back regularAt follows a
// value (beyond it: irregular), and how many blocks it looks through.
const regularDepth = 6

// regularAt reports whether register r holds a regular value
// (irregularRegs) before instruction i of block b: by r's last definition
// before i in b or in the blocks that lead to it alone (a single
// predecessor, no outside entry), followed through its sources up to
// depth definitions, else (defined before such a chain) by the loop's
// irregular registers bad.
func (st *objState) regularAt(g *cfg.Graph, b *cfg.Block, i int, r effect.Reg, bad effect.RegSet, depth int) bool {
	for blocks := 0; b != nil && blocks < regularDepth; blocks++ {
		for j := i - 1; j >= b.Start; j-- {
			e := st.live[g].Effect(j)
			def := e.Def | e.Partial
			if !def.Has(r) {
				continue
			}
			at := b
			return e.Known && depth > 0 && stepDef(g.Sec.Asm(j), def, func(x effect.Reg) bool {
				return st.regularAt(g, at, j, x, bad, depth-1)
			})
		}
		if len(b.Preds) != 1 || b.External {
			break
		}
		b = b.Preds[0]
		i = b.End
	}
	return !bad.Has(r)
}

// stepDef reports whether instruction a, which writes the registers def,
// keeps them regular (irregularRegs), given which of its source
// registers hold regular values.
func stepDef(a *x86asm.Inst, def effect.RegSet, regular func(effect.Reg) bool) bool {
	dst, ok := gprOf(a.Args[0])
	if !ok || def != 1<<dst {
		return false
	}
	src := func(x x86asm.Arg) bool {
		switch v := x.(type) {
		case x86asm.Imm:
			return true
		case x86asm.Reg:
			r, ok := gprOf(v)
			return ok && regular(r)
		}
		return false
	}
	switch a.Op {
	case x86asm.INC, x86asm.DEC:
		return regular(dst)
	case x86asm.ADD, x86asm.SUB:
		return regular(dst) && src(a.Args[1])
	case x86asm.CMOVA, x86asm.CMOVAE, x86asm.CMOVB, x86asm.CMOVBE, x86asm.CMOVE, x86asm.CMOVNE,
		x86asm.CMOVG, x86asm.CMOVGE, x86asm.CMOVL, x86asm.CMOVLE, x86asm.CMOVO, x86asm.CMOVNO,
		x86asm.CMOVS, x86asm.CMOVNS, x86asm.CMOVP, x86asm.CMOVNP:
		// (one of two such values: an index wrapped at a bound,
		// i >= n ? i - n : i, as a block sort's compare steps)
		return regular(dst) && src(a.Args[1])
	case x86asm.SHL:
		_, isImm := a.Args[1].(x86asm.Imm)
		return regular(dst) && isImm
	case x86asm.MOV, x86asm.MOVSXD, x86asm.MOVSX, x86asm.MOVZX:
		return src(a.Args[1]) // (a register or a constant: not a load)
	case x86asm.IMUL:
		_, isImm := a.Args[2].(x86asm.Imm)
		return isImm && src(a.Args[1]) // (imul $c, %x, %r)
	case x86asm.LEA:
		m, isMem := a.Args[1].(x86asm.Mem)
		if !isMem || m.Base == x86asm.RIP {
			return isMem
		}
		for _, r := range []x86asm.Reg{m.Base, m.Index} {
			if r == 0 {
				continue
			}
			if n, _, ok := effect.GPR(r); !ok || !regular(n) {
				return false
			}
		}
		return true
	}
	return false
}

// gprOf returns the general-purpose register an operand names, if it is
// one (of any width).
func gprOf(a x86asm.Arg) (effect.Reg, bool) {
	r, isReg := a.(x86asm.Reg)
	if !isReg {
		return 0, false
	}
	n, _, ok := effect.GPR(r)
	return n, ok
}

// indexBound returns the largest value instruction a leaves in register
// r, where its kind of instruction bounds it: a zero-extended byte or
// word, a right shift by a constant, an and with a non-negative constant.
func indexBound(a *x86asm.Inst, r effect.Reg) (uint64, bool) {
	dst, ok := a.Args[0].(x86asm.Reg)
	if !ok {
		return 0, false
	}
	n, width, ok := effect.GPR(dst)
	if !ok || n != r || width < 4 {
		return 0, false
	}
	switch a.Op {
	case x86asm.MOVZX:
		switch src := a.Args[1].(type) {
		case x86asm.Reg:
			if _, w, ok := effect.GPR(src); ok && w <= 2 {
				return 1<<(8*w) - 1, true
			}
		case x86asm.Mem:
			if a.MemBytes == 1 || a.MemBytes == 2 {
				return 1<<(8*a.MemBytes) - 1, true
			}
		}
	case x86asm.SHR:
		if c, ok := a.Args[1].(x86asm.Imm); ok && c > 0 && int(c) < 8*width {
			return 1<<(8*width-int(c)) - 1, true
		}
	case x86asm.AND:
		if c, ok := a.Args[1].(x86asm.Imm); ok && c >= 0 {
			return uint64(c), true
		}
	}
	return 0, false
}

// placement chooses where a site's code goes: before its instruction (or
// before the prefix it is glued to), or, when the flags are live there,
// earlier in its block where they are dead and the registers of the
// address still hold the values the access will use (kit.Place), which
// saves saving and restoring the flags. Vector sites read vector
// registers kit.Place does not track, and rep sites need no flags.
func (st *objState) placement(s *site, g *cfg.Graph) (int, bool) {
	if s.rep || s.vec != 0 {
		return kit.Before(g, s.inst)
	}
	return kit.Place(g, st.live[g], s.inst, kit.AddrRegs(s.acc.Mem))
}

// instrumentSweep inserts the code of a sweep: at every loop entry the
// address of the first access goes to the site's TLS slot; at every exit
// the runtime records the range from it to the last access.
func (st *objState) instrumentSweep(sw *sweep) error {
	s := sw.site
	sec := s.fn.Section
	g := st.prog.ByFunc[s.fn]
	lv := st.live[g]
	k := st.addSite(s, false)
	s.kind |= abi.KindRange
	put := func(e kit.Edge, delta int64, exit bool, adj int64) error {
		live := e.Live(lv)
		// (an entry whose code runs after code of the same call that
		// tested the thread's slot array, tls indirect: arrayTests; the
		// edge's code runs after its instruction's predecessors)
		mapped := !exit && st.arrays.mapped(g, e.Inst)
		sn, err := st.sweepCode(s, k, live.Regs, live.Flags&effect.Status != 0, delta, exit, adj, sw.step, mapped)
		if err != nil {
			return err
		}
		return e.Insert(sec, sn)
	}
	// With a register step, the exits tell the runtime whether the first
	// access is one step after the address stored at entry (bit 0) and
	// whether the last is one step before the address at the exit (bit 1).
	var firstAdj int64
	if sw.firstStep {
		firstAdj = 1
	}
	for _, e := range sw.entries {
		if err := put(e, sw.first, false, 0); err != nil {
			return err
		}
	}
	st.arrays.loopEntered(g, sw.header)
	for _, e := range sw.exits {
		adj := firstAdj
		if e.backStep {
			adj |= 2
		}
		if err := put(e.Edge, e.last, true, adj); err != nil {
			return err
		}
	}
	return nil
}

// instrumentVec inserts the code of a vector-element site (an AVX2 gather
// or masked move): the base address is pushed and vpt_vec reads the
// indices and the mask from the vector registers. No flags change.
func (st *objState) instrumentVec(s *site) error {
	sec := s.fn.Section
	g := st.prog.ByFunc[s.fn]
	at, ok := st.placement(s, g)
	if !ok {
		return fmt.Errorf("cannot insert code before the instruction")
	}
	k := st.addSite(s, false)
	base := *s
	if s.acc.VSIB {
		base.acc.Mem.Index, base.acc.Mem.Scale = 0, 0 // the indices are the vector's
	}
	sn, err := st.argCall(&base, k, st.live[g].Before(at).Regs, "vpt_vec", func(b *kit.Builder, S snippet.Reg, shift int32) error {
		ea, err := st.address(&base, shift, 0)
		if err == nil {
			b.LeaQ(ea, S)
		}
		return err
	})
	if err != nil {
		return err
	}
	return sec.InsertBefore(at, sn)
}

// instrumentRepAfter inserts the code of a repe/repne cmps or scas site:
// before it, rcx goes to the site's TLS slot; after it, vpt_rep_after
// records the elements it really compared. No flags change (the flags the
// instruction sets are live: a conditional jump reads them).
func (st *objState) instrumentRepAfter(s *site) error {
	sec := s.fn.Section
	g := st.prog.ByFunc[s.fn]
	lv := st.live[g]
	at := s.inst
	if !sec.CanInsertBefore(at) {
		return fmt.Errorf("cannot insert code before the instruction")
	}
	k := st.addSite(s, false)
	// Before: mov %rcx, slot.
	b := st.b
	slots := st.slots()
	if st.tls == kit.LocalExec {
		b.MovQ(snippet.RCX, slots.At(b, s.slot, snippet.NoReg, true, false))
	} else {
		free, bw, err := kit.Scratch(1, lv.Before(at).Regs|1<<effect.RCX, 1<<effect.RSP|1<<effect.RCX, 0)
		if err != nil {
			return err
		}
		// (the flags are dead before the instruction, which sets them)
		flags := st.tls == kit.Indirect && lv.Before(at).Flags&effect.Status != 0
		stepped := len(bw) > 0 || flags
		if stepped {
			b.Save(bw...)
		}
		if flags {
			b.Pushfq()
		}
		b.MovQ(snippet.RCX, slots.At(b, s.slot, kit.Reg(free[0]), true, stepped))
		if flags {
			b.Popfq()
		}
		if stepped {
			b.Restore(bw...)
		}
	}
	before, err := b.Assemble()
	if err != nil {
		return err
	}
	// After: push the slot, call vpt_rep_after.
	after, err := st.argCall(s, k, lv.After(at).Regs, "vpt_rep_after", func(b *kit.Builder, S snippet.Reg, shift int32) error {
		b.MovQ(slots.At(b, s.slot, S, false, true), S)
		return nil
	})
	if err != nil {
		return err
	}
	if err := sec.InsertBefore(at, before); err != nil {
		return err
	}
	return sec.InsertAfter(at, after)
}

// argCall builds code that loads one value into a scratch register (load),
// pushes it and calls a whole-state stub with the site's nopl after the
// call. It steps over the red zone, borrows a register if none is dead,
// and changes no flags.
func (st *objState) argCall(s *site, k int, liveRegs effect.RegSet, stub string, load func(*kit.Builder, snippet.Reg, int32) error) (*ibr.Snippet, error) {
	b := st.b
	free, borrowed, err := kit.Scratch(1, liveRegs, 1<<effect.RSP, 0)
	if err != nil {
		return nil, err
	}
	shift := b.Save(borrowed...)
	S := kit.Reg(free[0])
	if err := load(b, S, shift); err != nil {
		b.Reset()
		return nil, err
	}
	b.PushQ(S)
	b.CallGOT(stub)
	st.siteNop(k)
	b.LeaQ(snippet.Mem(snippet.RSP, 8), snippet.RSP)
	b.Restore(borrowed...)
	return b.Assemble()
}

// sweepCode builds the entry (exit false) or exit code of sweep site k.
// It changes no flags (flagsLive: whether they are live there). adj is
// what the exit of a sweep with a register step pushes for vpt_range_dyn
// (ABI.md). mapped: an entry's slot array (tls indirect) was tested by
// code that ran before in the same call (arrayTests): no test.
func (st *objState) sweepCode(s *site, k int, liveRegs effect.RegSet, flagsLive bool, delta int64, exit bool, adj, step int64, mapped bool) (*ibr.Snippet, error) {
	b := st.b
	need := 1
	if exit {
		need = 2
	}
	if st.tls != kit.LocalExec {
		need++
	}
	// The entry of an indirect object tests the slot array's address
	// (kit.Slots.At): live flags are saved around it.
	saveFlags := st.tls == kit.Indirect && !exit && !mapped && flagsLive
	reserved := effect.RegSet(1 << effect.RSP)
	if s.dynStep != nil {
		// the runtime reads the step register at the call: not a scratch
		reserved |= 1 << s.dynStep.reg
	}
	if s.reload != nil {
		// (S takes the reloaded value before the address is computed
		// from the others, which may be dead here)
		reserved |= kit.AddrRegs(s.acc.Mem)
	}
	free, borrowed, err := kit.Scratch(need, liveRegs, reserved, 0)
	if err != nil {
		return nil, err
	}
	shift := int32(0)
	if exit || len(borrowed) > 0 || saveFlags {
		shift = b.Save(borrowed...)
	}
	S := kit.Reg(free[0])
	// The range starts at the first byte the site stands for (lo); the
	// site record's size is the extent hi-lo, which the runtime adds.
	at := *s
	if r := s.reload; r != nil {
		// The register's value is its stack slot's: S takes it, and
		// the address is computed with S in the register's place.
		if r.off+int64(shift) != int64(int32(r.off+int64(shift))) {
			b.Reset()
			return nil, fmt.Errorf("stack slot %#x(%%rsp) out of range", r.off)
		}
		b.MovQ(snippet.Mem(snippet.RSP, int32(r.off)+shift), S)
		reg, s64 := x86asm.RAX+x86asm.Reg(r.reg), x86asm.RAX+x86asm.Reg(free[0])
		if at.acc.Mem.Base == reg {
			at.acc.Mem.Base = s64
		}
		if at.acc.Mem.Index == reg {
			at.acc.Mem.Index = s64
		}
	}
	ea, err := st.address(&at, shift, delta+s.lo)
	if err != nil {
		b.Reset()
		return nil, err
	}
	b.LeaQ(ea, S)
	if saveFlags {
		b.Pushfq()
	}
	slot := st.slots().At(b, s.slot, kit.Reg(free[need-1]), !exit && !mapped, shift > 0)
	if !exit {
		b.MovQ(S, slot)
		if saveFlags {
			b.Popfq()
		}
	} else {
		T := kit.Reg(free[1])
		b.MovQ(slot, T)
		rangeCall := func() {
			b.PushQ(T) // first address
			b.PushQ(S) // last address
			pushed := int32(16)
			if s.dynStep != nil {
				b.PushQ(snippet.Imm(adj))
				b.CallGOT("vpt_range_dyn")
				pushed += 8
			} else {
				b.CallGOT("vpt_range")
			}
			st.siteNop(k)
			b.LeaQ(snippet.Mem(snippet.RSP, pushed), snippet.RSP)
		}
		// A run within one page is what the runtime records as one
		// event of that page (ABI.md "Sweeps"), which the thread's
		// cache may have already: probe it inline (where the flags are
		// dead: the probe changes them) and call only on a miss or a
		// run over more pages.
		var probeRegs []effect.Reg
		if s.dynStep == nil && !flagsLive && kindBits(s.kind) != 0 && s.kind&abi.KindExact == 0 {
			busy := reserved | 1<<free[0] | 1<<free[1]
			probeRegs = probeScratch(probeNeed, liveRegs|busy, busy, free[2:])
		}
		if probeRegs == nil {
			rangeCall()
		} else {
			ext := max(s.hi-s.lo, 1)
			lo, hi := T, S // the first access is the lowest
			if step < 0 {
				lo, hi = S, T
			}
			st.probe(snippet.NoReg, s.kind, probeRegs, liveRegs, free[2:], shift, "ranged", noHoist, nil, func(K, H snippet.Reg, miss string) {
				b.LeaQ(snippet.Mem(hi, int32(ext-1)), K) // the last byte's page
				b.ShrQ(snippet.Imm(12), K)
				b.MovQ(lo, H)
				b.ShrQ(snippet.Imm(12), H)
				b.CmpQ(H, K)
				b.Jcc(snippet.CondNE, miss)
			}, rangeCall, nil, nil)
			b.Label("ranged")
		}
	}
	if shift > 0 {
		b.Restore(borrowed...)
	}
	return b.Assemble()
}

// code builds the snippet for site k: compute the address without
// touching the flags, then save the flags if they are live, compare its
// page with the site's TLS slot and call the runtime on a change. A site
// that may touch two pages finds out whether its bytes cross a page
// boundary from the carry of a 16-bit add (see straddleCheck), or, when
// they span more than a page (H over 4096), compares the page of its last
// byte too. In a spilled loop (lr.hasBase), the slots are found through
// the loop's base register (spill.go), and so they are through a base an
// earlier site of the block left (basechain.go). keep asks for the slot
// base to stay in its register for a later site (the cache probe takes
// others); base returns that register, or -1 when there is none. mapped
// says that, with tls indirect, the thread's slot array was tested by code
// that ran before in the same call (arrayTests): it is loaded untested.
func (st *objState) code(s *site, k int, liveRegs effect.RegSet, flagsLive bool, uses effect.RegSet, exact bool, lr loopRegs, keep, mapped bool) (sn *ibr.Snippet, base int, err error) {
	b := st.b
	carry := s.carry()
	// Registers: S holds the page, T the last byte's page (wide sites)
	// or the segment base, U the TLS slot base (initial-exec); rax holds
	// the saved flags.
	need := s.addrRegs()
	hoisted := lr.hasBase && !exact && !s.rep
	if st.tls != kit.LocalExec && !exact && !hoisted {
		need++
	}
	// run: a pair of the site's own slot and its second keeps a run of
	// pages in them (below), with no register for a difference.
	run := s.pair && s.partner == 0 && !s.scattered
	if s.pair && !run {
		need++ // (the last: the pair's difference)
	}
	if s.rep {
		need = 0
	}
	reserved := effect.RegSet(1<<effect.RSP) | lr.held()
	hoist := lr.hoist() // (the cache probe's registers of a spilled loop)
	var spill []effect.Reg
	if flagsLive {
		reserved |= 1 << effect.RAX
		if liveRegs.Has(effect.RAX) {
			spill = append(spill, effect.RAX)
		}
	}
	free, borrowed, err := kit.Scratch(need, liveRegs, reserved, uses)
	if err != nil {
		return nil, -1, err
	}
	base = -1
	spill = append(spill, borrowed...)
	shift := int32(0) // how far rsp moved
	if len(spill) > 0 {
		shift = b.Save(spill...)
	}
	call := func(stub string) {
		if shift == 0 {
			b.Save()
		}
		b.CallGOT(stub)
		st.siteNop(k)
		if shift == 0 {
			b.Restore()
		}
	}
	saveFlags := func() {
		if flagsLive {
			b.Seto(snippet.AL)
			b.Lahf()
		}
	}
	if s.rep {
		saveFlags()
		call("vpt_rep")
	} else {
		// The addresses, with lea and mov only: the registers they use
		// (rax among them) still hold the program's values.
		rs := kit.Reg(free[0])
		// endFirst: the page of the first or last byte (end) is
		// compared with the partner's slot first (endByPartner); then
		// the address again.
		end, endFirst := st.endByPartner(s)
		endFirst = endFirst && carry && !exact && !s.byAddr && !s.pair &&
			!(flagsLive && kit.AddrRegs(s.acc.Mem).Has(effect.RAX))
		ea, err := st.address(s, shift, s.lo)
		if err != nil {
			b.Reset()
			return nil, -1, err
		}
		if endFirst {
			last, err := st.address(s, shift, end)
			if err != nil {
				b.Reset()
				return nil, -1, err
			}
			b.LeaQ(last, rs)
		} else {
			b.LeaQ(ea, rs)
		}
		next := 1
		if s.acc.Mem.Segment != 0 {
			T := kit.Reg(free[next])
			seg := snippet.FS
			if s.acc.Mem.Segment == x86asm.GS {
				seg = snippet.GS
			}
			b.MovQ(snippet.Mem(snippet.NoReg, 0).Seg(seg), T)
			b.LeaQ(snippet.MemIndex(rs, T, 1, 0), rs)
		}
		var rt snippet.Reg
		if s.twoPages && !carry {
			rt = kit.Reg(free[next])
			next++
			b.LeaQ(snippet.Mem(rs, int32(s.hi-s.lo-1)), rt)
		}
		// The slot: initial-exec loads its offset before the flags are
		// saved, indirect its array after (kit.Slots.At tests it).
		var slot snippet.Operand
		slots := st.slots()
		switch {
		case hoisted:
			slot = hoistedSlot(slots, lr.base, s.slot)
		case st.tls == kit.LocalExec:
			slot = slots.At(b, s.slot, snippet.NoReg, true, false)
		case st.tls == kit.InitialExec && !exact:
			slot = slots.At(b, s.slot, kit.Reg(free[next]), true, shift != 0)
		}
		saveFlags()
		if st.tls == kit.Indirect && !exact && !hoisted {
			// (mapped: no test, the array is there: arrayTests)
			slot = slots.At(b, s.slot, kit.Reg(free[next]), !mapped, shift != 0)
		}
		// avail: the registers of the snippet the cache probe may
		// take over once the slot is written; not a slot base kept for
		// a later site (a dead register, so that it still holds the
		// base after the snippet).
		avail := free[next:]
		switch {
		case keep && hoisted:
			base = int(lr.base)
		case keep && st.tls != kit.LocalExec && !exact && !liveRegs.Has(free[next]):
			base = int(free[next])
			avail = free[next+1:]
		}
		stub := "vpt_slow_" + free[0].String()
		// The registers the cache probe may take: those the snippet
		// no longer needs once the slot is written (the slot base),
		// and any other dead one; borrowed ones (pushed on the probe's
		// path only) last.
		// Where the page is not needed after the check, the page
		// register serves the probe too (probeS), and the miss path
		// reloads it from the slot: with no other register (local-exec,
		// a spilled loop's base), or through the page register itself
		// (initial-exec: its offset from the GOT; indirect: the array,
		// mapped since the slot was written), so that a probe in a
		// register-starved loop need not push one (zstd's hash look-ups
		// in ZSTD_compressBlock_fast did, four instructions a probe).
		var probeRegs, probeS []effect.Reg
		if !exact && kindBits(s.kind) != 0 {
			busy := reserved | 1<<free[0]
			if rt != snippet.NoReg {
				busy |= 1 << free[1]
			}
			if base >= 0 {
				busy |= 1 << base
			}
			n := probeTakes(hoist.cache != snippet.NoReg)
			probeRegs = probeScratch(n, liveRegs|busy, busy, avail)
			if !(s.twoPages && !carry) {
				if two := probeScratch(n-1, liveRegs|busy, busy, avail); two != nil {
					probeS = append(two, free[0])
				}
			}
		}
		// A site whose bytes may cross a page boundary, outside loops
		// or with an address its loop steps (s.byAddr, steady), keeps
		// the base address of its page (page << 12) in its slots and
		// checks its bytes against it with the address itself: n bytes at EA lie in the page at
		// base A exactly when EA - A <= 4096 - n, unsigned, which also
		// finds out that they do not cross into the next page: three
		// instructions after the lea and one branch, where the page
		// number and the crossing test took six and two. On a miss, out
		// of line, the address comes back (the subtraction undone) and
		// the code goes on as the others' does, with the page's base in
		// rs for the slots and its number for the cache probe and the
		// stub. Other sites keep the page number in their slots and
		// compare it (a byte, an aligned access: two instructions to
		// the page, as for the base; a scattered site, whose slot
		// mostly misses, needs the number for its probe right after).
		// A partner's slot is read only by a site of the same kind
		// (partners.find).
		n := max(s.hi-s.lo, 1)
		byAddr := s.byAddr // (never exact: set where partners are found)
		lim := snippet.Imm(4096 - n)
		var partner, second snippet.Operand
		if !exact && s.partner != 0 {
			k := st.sites[s.partner-1].slot
			if hoisted {
				partner = hoistedSlot(slots, lr.base, k)
			} else {
				partner = st.slotAt(slots, free, next, k)
			}
		}
		if s.second >= 0 {
			second = slot.Add(int64(8 * (s.second - s.slot)))
		}
		// A run (a pair of the site's own slot and its second: a
		// look-up in a table of a few pages the data indexes) keeps
		// pages it recorded. By address (entries that may cross a page
		// boundary): every page of [slot, slot + second + n) is, the
		// slot a page base and the second a multiple of 4096 less n,
		// and the bytes lie in the run exactly when EA - slot <=
		// second, unsigned. By page number: pages slot to slot +
		// second are, and the page is in the run exactly when page -
		// slot <= second. One compare, where a pair of single pages
		// took two and a cmov (ABI.md "Runs of pages"). The slot holds
		// the run's first page, not the page of the last access: no
		// reload from it (probeS). unit is a page in the slots' terms,
		// alone the second of a run of one page.
		unit, alone := int64(1), int64(0)
		if byAddr {
			unit, alone = 4096, 4096-n
		}
		if run {
			probeS = nil
		}
		// toPage turns the address in rs into what the slots hold: for
		// a site that may cross a page boundary, after the crossing
		// test (straddleCheck, which jumps to cross); for a span over a
		// page, after the last byte's page (in rt) was found the same
		// or recorded out of line.
		toPage := func() {
			switch {
			case carry:
				straddleCheck(b, rs, n, "cross")
				b.ShrQ(snippet.Imm(16), rs)
				if byAddr {
					b.ShlQ(snippet.Imm(12), rs)
				}
			case s.twoPages:
				// The last byte's page, where it is not the first's
				// (rare), out of line; then the first's.
				b.ShrQ(snippet.Imm(12), rs)
				b.ShrQ(snippet.Imm(12), rt)
				b.CmpQ(rt, rs)
				b.Jcc(snippet.CondNE, "two")
				b.Label("one")
				b.Cold()
				b.Label("two")
				call("vpt_slow_" + free[1].String())
				b.Jmp("one")
				b.Hot()
			default:
				b.ShrQ(snippet.Imm(12), rs)
			}
		}
		// put writes what rs holds to the slot (first to the second,
		// where toSecond is given) and leaves the page number in rs.
		put := func() {
			b.MovQ(rs, slot)
			if run {
				b.MovQ(snippet.Imm(alone), second) // (a run of that page)
			}
			if byAddr {
				b.ShrQ(snippet.Imm(12), rs)
			}
		}
		// putRun, for a run, where rs holds the page the code records
		// next (its base, by address): the run grows by the page where
		// the page adjoins it, else becomes that page alone; the page
		// number is left in rs. Through a register of regs that is
		// neither rs nor the slots' base, else one pushed around it.
		// spare returns a register of regs the slots' code may take:
		// neither the page's nor the slots' base (NoReg: none).
		spare := func(regs []snippet.Reg) snippet.Reg {
			for _, r := range regs {
				if r != rs && !slot.Reads(r) {
					return r
				}
			}
			return snippet.NoReg
		}
		putRun := func(regs []snippet.Reg) {
			t, pushed := spare(regs), false
			if t == snippet.NoReg {
				for r := effect.Reg(0); r < 16 && t == snippet.NoReg; r++ {
					if x := kit.Reg(r); r != effect.RSP && x != rs && !slot.Reads(x) {
						t = x
					}
				}
				if shift == 0 {
					b.Save() // (over the red zone, as call does)
				}
				b.PushQ(t)
				pushed = true
			}
			b.MovQ(second, t)
			b.AddQ(slot, t)
			b.AddQ(snippet.Imm(unit-alone), t) // the run's end
			b.CmpQ(t, rs)
			b.Jcc(snippet.CondE, "run.up")
			b.LeaQ(snippet.Mem(rs, int32(unit)), t)
			b.CmpQ(slot, t)
			b.Jcc(snippet.CondE, "run.down")
			b.MovQ(rs, slot)
			b.MovQ(snippet.Imm(alone), second)
			b.Jmp("run.set")
			b.Label("run.down")
			b.MovQ(rs, slot)
			b.Label("run.up")
			b.AddQ(snippet.Imm(unit), second)
			b.Label("run.set")
			if pushed {
				b.PopQ(t)
				if shift == 0 {
					b.Restore()
				}
			}
			if byAddr {
				b.ShrQ(snippet.Imm(12), rs)
			}
		}
		// miss is what a site whose slots lack the page runs, with the
		// slots' value in rs: the second slot (where the compare with
		// it is still to do: cmpSecond), the slot written, then the
		// cache probe or the stub, with the page's number. It ends
		// where the code goes on (same), through back.
		miss := func(same string, cmpSecond bool, back func()) {
			regs, reuse := probeRegs, avail
			var reload func()
			if probeS != nil {
				regs, reuse = probeS, append(slices.Clone(avail), free[0])
				reload = func() {
					src := slot
					if slices.ContainsFunc(regs, func(r effect.Reg) bool { return slot.Reads(kit.Reg(r)) }) {
						// the probe took the slot's base
						src = slots.At(b, s.slot, rs, false, true)
					}
					b.MovQ(src, rs)
					if byAddr {
						b.ShrQ(snippet.Imm(12), rs)
					}
				}
			}
			// first, when not nil, writes the slots after the probe's
			// pushes, if any (probe passes its registers, those it
			// pushed first).
			var first func(regs []snippet.Reg)
			if s.second >= 0 {
				// The second slot; on a miss of both, the slot's page
				// moves to it and the slot takes the new one. Through a
				// register of the probe's (free once it pushed those
				// live) that is neither the page nor the slots' base;
				// else memory to memory through the stack, with no
				// register, which costs the move a store-to-load round
				// trip (in bzip2's mainGtU, a tenth of the samples fell
				// right after such pops).
				if cmpSecond {
					b.CmpQ(rs, second)
					b.Jcc(snippet.CondE, same)
				}
				toSecond := func(regs []snippet.Reg) {
					if r := spare(regs); r != snippet.NoReg {
						b.MovQ(slot, r)
						b.MovQ(r, second)
						return
					}
					if shift == 0 {
						b.Save() // (over the red zone, as call does)
					}
					b.PushQ(slot)
					b.PopQ(second)
					if shift == 0 {
						b.Restore()
					}
				}
				switch {
				case run && probeRegs == nil:
				case run:
					first = putRun
				case probeRegs == nil:
					toSecond(nil)
				default:
					first = func(regs []snippet.Reg) {
						toSecond(regs)
						put()
					}
				}
			}
			if probeRegs == nil {
				if run {
					putRun(nil)
				} else {
					put()
				}
				call(stub)
				back()
				return
			}
			// The slot first: the probe may reuse its base register.
			if first == nil {
				put()
			}
			st.probe(rs, s.kind, regs, liveRegs, reuse, shift, same, hoist, first, nil, func() { call(stub) }, func() {
				b.CallGOT(stub)
				st.siteNop(k)
			}, reload)
			back()
		}
		// pairSlots returns a pair's two slots, compared in this order
		// (its partner's and its own, or its own and its second), and
		// the scratch register of their differences.
		pairSlots := func() (a, o snippet.Operand, t snippet.Reg) {
			if s.partner == 0 {
				return slot, second, kit.Reg(free[len(free)-1])
			}
			return partner, slot, kit.Reg(free[len(free)-1])
		}
		switch {
		case exact:
			// Every access through the stub.
			toPage()
			call(stub)
			b.Label("done")
		case byAddr:
			// The hot part: compares with the slots, by address (a
			// pair's with one branch); the miss path, out of line, gets
			// the address back in rs from its difference with slot o.
			// within compares rs, an address, with the page base in
			// op and goes to done where it lies in that page, leaving
			// rs as it was where not.
			within := func(op snippet.Operand) {
				b.SubQ(op, rs)
				b.CmpQ(lim, rs)
				b.Jcc(snippet.CondBE, "done")
				b.AddQ(op, rs)
			}
			o := slot
			switch {
			case run:
				b.SubQ(slot, rs)
				b.CmpQ(second, rs)
			case s.pair:
				// t = EA - a, rs = EA - o, t = rs where t is past the
				// limit: within it when a slot holds the page.
				var a snippet.Operand
				var t snippet.Reg
				a, o, t = pairSlots()
				b.MovQ(rs, t)
				b.SubQ(a, t)
				b.SubQ(o, rs)
				b.CmpQ(lim, t)
				b.CmovQ(snippet.CondA, rs, t)
				b.CmpQ(lim, t)
			default:
				if s.partner != 0 {
					within(partner)
				}
				b.SubQ(slot, rs)
				b.CmpQ(lim, rs)
			}
			b.Jcc(snippet.CondA, "miss")
			b.Label("done")
			b.Cold()
			b.Label("miss")
			b.AddQ(o, rs)
			if s.second >= 0 && !(s.pair && s.partner == 0) { // (a pair of its own and its second compared both)
				within(second)
			}
			toPage()
			miss("done", false, func() { b.Jmp("done") })
			b.Hot()
		default:
			// The page number, then the compares: inline at a
			// scattered site (its slot mostly misses: the probe stays
			// inline, as the listings show it), else with the miss
			// path out of line.
			if endFirst {
				b.ShrQ(snippet.Imm(12), rs)
				b.CmpQ(rs, partner)
				b.Jcc(snippet.CondE, "done")
				b.LeaQ(ea, rs) // (the address registers hold the program's values still)
			}
			toPage()
			// outOfLine jumps on cond to the miss path, which goes
			// into the cold part.
			outOfLine := func(cond snippet.Cond) {
				b.Jcc(cond, "miss")
				b.Label("done")
				b.Cold()
				b.Label("miss")
			}
			branch := func() { b.Jcc(snippet.CondE, "done") }
			back := func() {}
			if !s.scattered {
				branch = func() { outOfLine(snippet.CondNE) }
				back = func() {
					b.Jmp("done")
					b.Hot()
				}
			}
			switch {
			case run: // (never scattered: a pair)
				b.SubQ(slot, rs)
				b.CmpQ(second, rs)
				outOfLine(snippet.CondA)
				b.AddQ(slot, rs)
			case s.pair:
				// t = page - a, rs = page - o, t = 0 where rs is:
				// zero when a slot holds the page. The miss path gets
				// the page back.
				a, o, t := pairSlots()
				b.MovQ(rs, t)
				b.SubQ(a, t)
				b.SubQ(o, rs)
				b.CmovQ(snippet.CondE, rs, t)
				b.TestQ(t, t)
				branch()
				b.AddQ(o, rs)
			default:
				if s.partner != 0 && !endFirst {
					b.CmpQ(rs, partner)
					b.Jcc(snippet.CondE, "done")
				}
				b.CmpQ(rs, slot)
				branch()
			}
			miss("done", !s.pair || s.partner != 0, back)
			if s.scattered {
				b.Label("done")
			}
		}
		if carry {
			// The bytes cross into the next page, which they do at
			// (n-1)/4096 of the addresses: both pages through the
			// stub, the first only where the slot lacks it, the
			// second (which has no slot) always. No cache probe,
			// second slot or partner here: for what is rare they
			// would double the site's code. Out of line.
			b.Cold()
			b.Label("cross")
			b.ShrQ(snippet.Imm(16), rs)
			if !exact {
				if byAddr {
					b.ShlQ(snippet.Imm(12), rs)
				}
				b.CmpQ(rs, slot)
				b.Jcc(snippet.CondE, "same2")
				put()
				call(stub)
				b.Jmp("next2")
				b.Label("same2")
				if byAddr {
					b.ShrQ(snippet.Imm(12), rs)
				}
				b.Label("next2")
			} else {
				call(stub)
			}
			b.IncQ(rs)
			call(stub)
			b.Jmp("done")
			b.Hot()
		}
	}
	if flagsLive {
		b.Bytes(0x04, 0x7f) // add $0x7f,%al: OF back from AL
		b.Sahf()
	}
	if len(spill) > 0 {
		b.Restore(spill...)
	}
	sn, err = b.Assemble()
	return sn, base, err
}

// carry reports whether s's bytes may cross into the next page and span
// at most a page: the carry of a 16-bit add finds out (straddleCheck).
func (s *site) carry() bool { return s.twoPages && s.hi-s.lo-1 < 4096 }

// endByPartner reports whether site s, whose bytes may cross a page
// boundary, may compare the page of one end of its bytes alone with its
// partner's slot (at offset end from its address: the last byte, or the
// first): where they agree, every page of s's bytes is recorded. Both
// go through the same base register, unchanged in between, with no
// index and displacements known. Where s's bytes start no lower than the
// partner's and end within 4096 bytes of their start, they lie on the
// page of the partner's first byte or the next; the partner, which ran
// just before, recorded the first (it checked its own bytes), and its
// slot holds a page it recorded: where that is the page of s's last
// byte, s's bytes lie on recorded pages, one or both. Where s's bytes end
// no higher than the partner's and start within 4096 bytes of their end,
// the same holds of s's first byte, the page of the partner's last one
// and the page before. (`b->key`, then `b->val` of a bucket whose
// alignment the code does not show: four instructions to the compare,
// where the crossing test and the first byte's page took seven.)
func (st *objState) endByPartner(s *site) (end int64, ok bool) {
	if s.partner == 0 || s.rel != nil || s.link != nil {
		return 0, false
	}
	c := st.sites[s.partner-1]
	m, cm := s.acc.Mem, c.acc.Mem
	if c.rel != nil || c.link != nil || m.Index != 0 || cm.Index != 0 || !sameBase(m, cm) {
		return 0, false
	}
	first, last := m.Disp+s.lo, m.Disp+s.hi-1 // s's bytes
	pfirst, plast := cm.Disp+c.lo, cm.Disp+c.hi-1
	switch {
	case first >= pfirst && last-pfirst < 4096:
		return s.hi - 1, true
	case last <= plast && plast-first < 4096:
		return s.lo, true
	}
	return 0, false
}

// addrRegs is how many registers s's code takes for its page: the page,
// and the last byte's page (a span over a page) or the segment base.
func (s *site) addrRegs() int {
	if (s.twoPages && !s.carry()) || s.acc.Mem.Segment != 0 {
		return 2
	}
	return 1
}

// hoistedSlot returns the operand of slot k through the base register of
// a spilled loop (spill.go): the slot array's TLS offset (initial-exec) or
// this thread's array (indirect).
func hoistedSlot(slots kit.Slots, base effect.Reg, k int) snippet.Operand {
	if slots.Model == kit.InitialExec {
		return snippet.Mem(kit.Reg(base), int32(8*k)).Seg(snippet.FS)
	}
	return snippet.Mem(kit.Reg(base), int32(8*k))
}

// slotAt returns the operand of slot k in the snippet of code: the slots'
// base, if any, is in free[next], loaded already.
func (st *objState) slotAt(slots kit.Slots, free []effect.Reg, next, k int) snippet.Operand {
	switch slots.Model {
	case kit.InitialExec:
		return snippet.Mem(kit.Reg(free[next]), int32(8*k)).Seg(snippet.FS)
	case kit.Indirect:
		return snippet.Mem(kit.Reg(free[next]), int32(8*k))
	}
	return snippet.TPOFF(slots.Sym, int64(8*k))
}

// straddleCheck emits the test of whether the n bytes (1 < n <= 4096) at
// the address in r cross a page boundary, with r as the only register:
// shifted left by 4, the page offset fills bits 4-15 of r, and adding
// (n-1) << 4 to those 16 bits carries out of bit 15 exactly when the last
// byte is on the next page. The add leaves bits 16-63 (the page number)
// alone; a right shift by 16 then gives the page. It jumps to cross if the
// bytes cross. User addresses (below 2^47) lose nothing to the shift.
func straddleCheck(b *kit.Builder, r snippet.Reg, n int64, cross string) {
	b.ShlQ(snippet.Imm(4), r)
	add := (n - 1) << 4
	if add >= 1<<15 {
		add -= 1 << 16 // the same 16 bits, as the signed immediate
	}
	b.AddW(snippet.Imm(add), r)
	b.Jcc(snippet.CondB, cross)
}

// siteNop emits, after a call into the runtime, the 7-byte
// nopl disp32(%rip) that tells the stub its site (ABI.md): its
// displacement is relocated to the record of site k.
func (st *objState) siteNop(k int) {
	st.recordNop(kit.Named(st.sym("sites")), int64(abi.SiteSize*k))
}

// recordNop emits nopl r+off(%rip): a record the runtime finds from the
// return address of the call before it.
func (st *objState) recordNop(r kit.Ref, off int64) {
	st.b.Field([]byte{0x0f, 0x1f, 0x05, 0, 0, 0, 0}, 3, elf.R_X86_64_PC32, r, off-4)
}

// address returns the memory operand of the site's access for lea, with
// rsp-relative displacements adjusted by shift (how far the snippet moved
// rsp), RIP-relative operands referring to the same target and segment
// overrides left to the caller.
func (st *objState) address(s *site, shift int32, extra int64) (snippet.Operand, error) {
	var rel kit.Rel
	if s.rel != nil {
		rel = *s.rel
	}
	return st.b.Address(s.acc.Mem, rel, s.link, shift, extra)
}

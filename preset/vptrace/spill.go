package vptrace

import (
	"slices"

	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/ibr"
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
// instruction of the loop reads or writes rsp (so no push, pop or call
// sees the lower stack pointer; no calls at all, nor system calls,
// interrupts, indirect jumps, instructions liveness cannot model,
// function exits) but through a memory operand based on it, whose
// displacement the output shifts by what the entry code lowered rsp by
// (ibr.ShiftStack: the red zone and 8 bytes a register; a one-byte field
// that cannot hold it becomes a four-byte one), so that it reaches the
// same bytes (compilers keep a register-starved loop's spilled variables
// in stack slots, often in the red zone, which the loop reads and writes
// at every iteration: zstd's match finders, lua's string functions); one
// header (reducible), no block other code may enter
// (External: a label taken, a landing pad), every entry and exit edge one
// that takes code (kit.EdgeToOrTaken: also where a conditional jump is
// taken along it, an early return or break), none shared with another
// spilled loop.
// The saved registers are not referenced by any instruction of the loop,
// so the values they are popped with at an exit are those they had at the
// entry, as without the spill. (While a run lasts, rsp is lower than the
// unwind tables say, as it is while any snippet has pushed: a debugger's
// backtrace from inside such a loop is off; no exception can be thrown
// there, as the loop has no call.) A loop with stack operands is not
// spilled around where inserted code in it computes from rsp (a site
// whose address is rsp-based, with usestack, or a sweep reloading its
// pointer from the stack): that code would read the lowered rsp.

// With tls initial-exec or indirect, one of the saved registers holds the
// slot array's address (indirect: this thread's array, mapped at the
// entry if it is not yet; initial-exec: its TLS offset) for the whole
// run: the sites of the loop find their slots through it instead of
// loading it at every access (4 instructions, 2 loads). Nothing in the
// loop writes it (the program does not reference it; snippets reserve
// it, and the code of other sites borrows it only to push and pop it);
// the array stays where it is while the thread runs code of the object.

// Where the loop has sites that probe the recent-page cache, one more of
// the saved registers, if the loop has it to spare, holds the address of
// the thread's table (loaded again after each call of a probe's miss
// path: the runtime maps the cache at the thread's first event): each
// probe then does not load it (2 instructions, 2 loads) and needs one
// register fewer (probe.go). Not a reason to spill around a loop on its
// own: a short loop entered often would pay more for the saves than its
// probes save.

// loopRegs is what a block of a spilled loop has: registers free there,
// the register holding the slot base (base, when hasBase), and the cache
// probes' (probeHoist: cache, when hasCache).
type loopRegs struct {
	free     effect.RegSet
	base     effect.Reg
	cache    effect.Reg
	hasBase  bool
	hasCache bool
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
	return h
}

// hoist returns the registers of lr that the cache probes read
// (probeHoist).
func (lr loopRegs) hoist() probeHoist {
	h := noHoist
	if lr.hasCache {
		h.cache = kit.Reg(lr.cache)
	}
	return h
}

// spillNeeds is what the candidate sites of a function's blocks want of
// a spill, per block index: the most registers a site of the block would
// borrow (deficit; deficitC with the cache's address in a register), how
// many of its sites would borrow one (short), whether a site reads its
// slot (slotted) and whether one probes the cache (probing).
type spillNeeds struct {
	deficit, deficitC map[int]int
	short             map[int]int
	slotted, probing  map[int]bool
}

// spillNeeds finds what the sites cands of g want of a spill.
func (st *objState) spillNeeds(g *cfg.Graph, cands []*site) spillNeeds {
	lv := st.live[g]
	nd := spillNeeds{deficit: make(map[int]int), deficitC: make(map[int]int), short: make(map[int]int), slotted: make(map[int]bool), probing: make(map[int]bool)}
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
		nd.slotted[x] = nd.slotted[x] || !s.exact
		nd.probing[x] = nd.probing[x] || (!s.exact && kindBits(s.kind) != 0)
		if want > dead {
			nd.short[x]++
		}
		if d, ok := nd.deficit[x]; !ok || want-dead > d {
			nd.deficit[x] = want - dead
		}
		if d, ok := nd.deficitC[x]; !ok || wantC-dead > d {
			nd.deficitC[x] = wantC - dead
		}
	}
	return nd
}

// of sums up what the sites of blocks nodes want: the registers they lack
// (need; needC with the cache's address in a register), whether one
// reads its slot and whether one probes the cache.
func (nd spillNeeds) of(nodes []int) (need, needC int, slot, probes bool) {
	for _, x := range nodes {
		if d, ok := nd.deficit[x]; ok {
			need, slot = max(need, d), slot || nd.slotted[x]
			needC, probes = max(needC, nd.deficitC[x]), probes || nd.probing[x]
		}
	}
	return need, needC, slot, probes
}

// spillLoops chooses the loops of g to spill around and inserts their
// entry and exit code. cands are the sites that will get slot code
// (instrument), for which the registers are wanted; taken are edges that
// no spill code may share (stackSweepEdges). It returns, per block index,
// what a spilled loop (or region, spillRegions) provides there.
func (st *objState) spillLoops(g *cfg.Graph, cands []*site, taken map[kit.Edge]bool, stackSites []*site) (map[int]loopRegs, error) {
	lv := st.live[g]
	ls := st.analysis.Loops[g]
	if len(cands) == 0 {
		return nil, nil
	}
	nd := st.spillNeeds(g, cands)
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
		// every access); the cache's address where a site probes
		// (spillAround).
		need, needC, slot, probes := nd.of(l.Nodes)
		hasBase := st.tls != kit.LocalExec && slot
		if need == 0 && !hasBase {
			// (not for the cache's address alone: a short loop run
			// often would pay more for the saves than it saves)
			return nil
		}
		regs, entries, exits, stack, ok := st.spillable(g, lv, l, used, reach)
		if ok && len(stack) > 0 && !stackSafe(g, l, stackSites) {
			ok = false
		}
		if ok {
			var err error
			if ok, err = st.spillAround(g, l.Nodes, regs, entries, exits, stack, need, needC, hasBase, probes, used, free); err != nil {
				return err
			}
		}
		if !ok {
			for _, c := range l.Children {
				if err := visit(c); err != nil {
					return err
				}
			}
			return nil
		}
		if hasBase {
			st.arrays.loopEntered(g, l.Headers[0]) // (the entries tested the slot array)
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
	if err := st.spillRegions(g, nd, used, free, reach); err != nil {
		return nil, err
	}
	return free, nil
}

// spillAround saves regs (registers no instruction of blocks nodes
// references, live there, r15 down) on the edges entries into nodes and
// restores them on the edges exits out of them, shifts the stack operands
// of the instructions stack by what that lowers rsp by, and records in
// free what the blocks then have: the slot base (hasBase), the cache
// probe's addresses (where sites probe and registers are to spare) and
// the registers the sites lack (need; needC with the cache's address
// held). It reports false, having changed nothing, when a stack operand
// cannot be shifted (ibr.Section.CanShiftStack: EVEX, relocated).
func (st *objState) spillAround(g *cfg.Graph, nodes []int, regs []effect.Reg, entries, exits []kit.Edge, stack []int, need, needC int, hasBase, probes bool, used map[kit.Edge]bool, free map[int]loopRegs) (bool, error) {
	lv := st.live[g]
	// Not the registers a sweep's code on an entry edge reads
	// (sweepEdgeRegs): the entry code, inserted first, runs first there.
	var read effect.RegSet
	for _, e := range entries {
		read |= st.sweepRegs[e]
	}
	if read != 0 {
		regs = slices.DeleteFunc(slices.Clone(regs), read.Has)
		if len(regs) == 0 {
			return false, nil
		}
	}
	// The order of regs: the slot base, the cache's address, then the
	// registers the sites lack. The cache's only where the sites then
	// lack nothing (what they lack costs them a push and a pop at every
	// access).
	held := 0
	if hasBase {
		held++
	}
	hasCache := probes && len(regs) >= held+needC+1
	if hasCache {
		need = needC
		held++
	}
	if len(regs) > held+need {
		regs = regs[:held+need]
	}
	shift := kit.SaveSize(len(regs))
	for _, i := range stack {
		if !g.Sec.CanShiftStack(i, shift) {
			return false, nil
		}
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
	if hasCache {
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
	for _, i := range stack {
		if err := g.Sec.ShiftStack(i, shift); err != nil {
			return false, err
		}
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
		if err := insert(e); err != nil {
			return false, err
		}
	}
	for _, e := range exits {
		b.Restore(regs...)
		if err := insert(e); err != nil {
			return false, err
		}
	}
	for _, x := range nodes {
		free[x] = lr
	}
	return true, nil
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
// the order Scratch borrows them (r15 down). It returns the edges too,
// and the instructions whose stack operands the spill must shift.
func (st *objState) spillable(g *cfg.Graph, lv *cfg.Liveness, l *loops.Loop, used map[kit.Edge]bool, reach []bool) (regs []effect.Reg, entries, exits []kit.Edge, stack []int, ok bool) {
	if l.Irreducible() {
		return nil, nil, nil, nil, false
	}
	header := l.Headers[0]
	member := make(map[int]bool, len(l.Nodes))
	for _, x := range l.Nodes {
		member[x] = true
	}
	var refs effect.RegSet
	for _, x := range l.Nodes {
		b := g.Blocks[x]
		r, ok := spillBlock(lv, g.Sec, b, &stack)
		if !ok || b.External {
			return nil, nil, nil, nil, false
		}
		refs |= r
		for _, p := range b.Preds {
			if member[p.Index] || !reach[p.Index] {
				continue // (padding between blocks falls through, never runs)
			}
			if x != header {
				return nil, nil, nil, nil, false
			}
			e, ok := kit.EdgeToOrTaken(g, p, header)
			if !ok || used[e] {
				return nil, nil, nil, nil, false
			}
			entries = append(entries, e)
		}
		for _, s := range b.Succs {
			if member[s.Index] {
				continue
			}
			e, ok := kit.EdgeToOrTaken(g, b, s.Index)
			if !ok || used[e] {
				return nil, nil, nil, nil, false
			}
			exits = append(exits, e)
		}
	}
	if len(entries) == 0 || len(exits) == 0 {
		return nil, nil, nil, nil, false
	}
	regs = saveable(lv.Before(g.Blocks[header].Start).Regs, refs)
	if len(regs) == 0 {
		return nil, nil, nil, nil, false
	}
	return regs, entries, exits, stack, true
}

// computesFromStack reports whether s's inserted code computes from rsp:
// an rsp-based address (usestack), a sweep's pointer reloaded from its
// stack slot (site.reload).
func (s *site) computesFromStack() bool {
	return kit.AddrRegs(s.acc.Mem).Has(effect.RSP) || s.reload != nil
}

// stackSites returns the sites whose inserted code computes from rsp
// (computesFromStack).
func stackSites(sites []*site) []*site {
	var out []*site
	for _, s := range sites {
		if s.computesFromStack() {
			out = append(out, s)
		}
	}
	return out
}

// stackSafe reports whether no site of stackSites is in loop l: code
// that computes from rsp, which a spill with shifted stack operands
// would leave reading the lowered rsp.
func stackSafe(g *cfg.Graph, l *loops.Loop, stackSites []*site) bool {
	for _, s := range stackSites {
		if slices.Contains(l.Nodes, g.BlockOf(s.inst).Index) {
			return false
		}
	}
	return true
}

// saveable returns the registers worth saving around code that references
// refs and is entered with live live: those it does not reference and
// that are live (a dead one is free already), in the order Scratch
// borrows them (r15 down); never rax, where a site whose flags are live
// keeps them.
func saveable(live, refs effect.RegSet) []effect.Reg {
	var regs []effect.Reg
	for r := effect.Reg(15); r < 16; r-- {
		if r != effect.RSP && r != effect.RAX && !refs.Has(r) && live.Has(r) {
			regs = append(regs, r)
		}
	}
	return regs
}

// spillBlock reports whether registers saved before block b may stay
// saved while it runs (no instruction reads or writes rsp, calls, or
// cannot be modelled; the block does not leave the function or jump
// through a table), and which registers its instructions reference.
// Whether other code may enter it (External) is the caller's to check.
// With stack non-nil, an instruction may reference rsp as its memory
// operand's base and nothing else (stackOperand): appended to *stack, for
// the spill to shift. sec is b's section.
func spillBlock(lv *cfg.Liveness, sec *ibr.Section, b *cfg.Block, stack *[]int) (refs effect.RegSet, ok bool) {
	if b.Exits != 0 || b.Table {
		return 0, false
	}
	for i := b.Start; i < b.End; i++ {
		e := lv.Effect(i)
		if !e.Known {
			return 0, false
		}
		switch e.Ctrl {
		case effect.Call, effect.IndirectCall, effect.Syscall, effect.Interrupt, effect.IndirectJump:
			return 0, false
		}
		all := e.Use | e.Def | e.Partial
		for k := 0; k < e.NMem; k++ {
			all |= kit.AddrRegs(e.Mem[k].Mem)
		}
		if all.Has(effect.RSP) {
			if stack == nil || !stackOperand(sec.Asm(i), e) {
				return 0, false
			}
			*stack = append(*stack, i)
		}
		refs |= all &^ (1 << effect.RSP)
	}
	return refs, true
}

// stackOperand reports whether instruction a (effect e) references rsp
// only as the base of its explicit memory operand (a load, a store, lea):
// no push, pop or other implicit stack access, no rsp as a register
// operand or index.
func stackOperand(a *x86asm.Inst, e *effect.Effect) bool {
	if (e.Def | e.Partial).Has(effect.RSP) {
		return false
	}
	for k := 0; k < e.NMem; k++ {
		if e.Mem[k].Arg < 0 && kit.AddrRegs(e.Mem[k].Mem).Has(effect.RSP) {
			return false // (implicit: a stack operation)
		}
	}
	base := false
	for _, arg := range a.Args {
		switch v := arg.(type) {
		case x86asm.Reg:
			if v == x86asm.RSP || v == x86asm.ESP || v == x86asm.SP || v == x86asm.SPB {
				return false
			}
		case x86asm.Mem:
			if v.Index == x86asm.RSP || v.Index == x86asm.ESP {
				return false
			}
			base = v.Base == x86asm.RSP && v.Segment == 0
		}
	}
	return base
}

// sweepEdgeRegs returns, per edge where the code of one of sweeps goes,
// the program's registers that code reads: the address's registers, and a
// register step's (vpt_range_dyn reads it). Spill code on an edge runs
// before a sweep's there (it is inserted first): an exit's restores leave
// the program's registers to the sweep's code, but an entry saves
// registers the spilled loop or region does not reference and loads the
// slot base or the cache's address into them. A sweep whose loop is not
// in the spilled one may read such a register: its range then went from
// the program's address to the cache's (csmith seed 10000280, clang -O3:
// a 16-byte vector store loop indexed by r14, then a region holding the
// cache's address in r14: terabytes of pages never touched;
// TestSweepSpill). spillAround saves none of them on an entry edge.
func sweepEdgeRegs(sweeps []*sweep) map[kit.Edge]effect.RegSet {
	m := make(map[kit.Edge]effect.RegSet)
	for _, sw := range sweeps {
		if sw == nil {
			continue
		}
		regs := kit.AddrRegs(sw.site.acc.Mem)
		if d := sw.site.dynStep; d != nil {
			regs |= 1 << d.reg
		}
		for _, e := range sw.entries {
			m[e] |= regs
		}
		for _, e := range sw.exits {
			m[e.Edge] |= regs
		}
	}
	return m
}

// stackSweepEdges returns the edges where the code of a sweep whose
// address is rsp-relative (usestack), or has a register reloaded from the
// stack (site.reload), goes: it computes the address from
// rsp, so it must not run between a spilled loop's save and restore,
// which code on a shared edge would (a sibling loop's exit into a spilled
// loop's header, say). Other sweeps' code reads the program's registers,
// which a spill on its edge does not save (sweepEdgeRegs), and picks its
// scratch registers by the program's liveness (a saved register, live,
// is only borrowed).
func stackSweepEdges(sweeps []*sweep) map[kit.Edge]bool {
	m := make(map[kit.Edge]bool)
	for _, sw := range sweeps {
		if sw == nil || !sw.site.computesFromStack() {
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

package vptrace

import (
	"debug/elf"
	"fmt"

	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/elfobj"
	"hijack/ibr"
	"hijack/ibr/x86len"
	"hijack/loops"
	"hijack/preset/kit"
	"hijack/vptrace/abi"
)

// site is one instrumented memory access.
type site struct {
	fn     *ibr.Func
	inst   int // instruction index in the section
	acc    effect.Access
	kind   abi.Kind
	seg    abi.Segment
	size   int
	covers uint32
	block  int
	score  float64
	sym    string // variable named by a relocation, if any
	symOff int64
	rel    *kit.Rel  // relocation of the address, if any
	link   *ibr.Link // same-section RIP-relative reference, if any
	rep    bool
	exact  bool // its rule asked for exact mode: the runtime records every event
	// lo and hi delimit, relative to the site's address, the bytes the
	// site stands for: its own access and those of later accesses of its
	// block that the page-size estimate merged into it ([lo, hi)).
	lo, hi int64
	// twoPages: the bytes may cross a page boundary, so the page of the
	// last byte is checked too.
	twoPages bool
	// aligned: the access itself cannot cross a page boundary.
	aligned bool
	// vec, when non-zero, describes an access of vector elements (an AVX2
	// gather, or a masked move) that the runtime resolves from the vector
	// registers (ABI.md "Vector accesses").
	vec abi.VecDesc
	// repAfter marks a repe/repne cmps or scas, which may stop early: its
	// range is recorded after it runs.
	repAfter bool
	// stride is, for a sweep whose step exceeds a page, the step: the
	// runtime records the page of every access from first to last.
	stride int64
	// dynStep, for a sweep, is a step the runtime reads from a register.
	dynStep *dynStep
	// reload, for a sweep, is an address register the loop loads from a
	// stack slot no instruction of the loop writes (a pointer the compiler
	// spilled, reloaded every iteration): its value is the slot's.
	reload *stackReload
	// partner, when non-zero, is 1 + the index of an earlier site whose
	// last-page slot the site compares its page with before its own
	// (partner.go).
	partner int
	// slot is the site's last-page slot, second its second slot or -1
	// (objState.addSite).
	slot, second int
	// scattered: the site is in a loop and its address comes from a
	// value the loop loads (a look-up keyed by data, a pointer chase,
	// not in a small table): its slot mostly misses, so the cache probe
	// stays inline, where a slot miss that hits the cache costs no jump
	// out of line and back (objState.scattered).
	scattered bool
	// chained: the partner (partners.find sets both) is an access whose
	// index comes from the same register as the site's (sameIndex): the
	// two usually share a page, the site matches its partner's slot and
	// leaves its own alone.
	chained bool
	// byAddr: the site's slots hold the base address of a page, not its
	// number, and it checks its bytes against them by address (a site
	// whose bytes may cross a page boundary, whose loop, if any, steps
	// its address, objState.steady, or looks it up in a small table,
	// objState.dataTable: where its slots mostly hold the page; code).
	byAddr bool
	// pair: the site compares its page with two slots (its partner's and
	// its own, or its own and its second) without a branch between, and
	// branches once on whether either holds it (site.pairable; ABI.md
	// "Two slots, one branch").
	pair bool
}

// dynStep is the step of a sweep as a loop-invariant register times a
// constant, in bytes.
type dynStep struct {
	reg  effect.Reg
	mult int64
}

// stackReload says that register reg of a sweep's address holds, at the
// access, the 8 bytes at off(%rsp), with rsp as in the loop (which does
// not change it).
type stackReload struct {
	reg effect.Reg
	off int64
}

// groupKey identifies accesses that the page-size estimate H may merge:
// the same address expression up to the displacement, with no register of
// it redefined in between.
type groupKey struct {
	seg          abi.Segment
	base, index  x86asm.Reg
	scale        uint8
	segment      x86asm.Reg
	sym          uint32 // symbol for relocated displacements
	link, linkOK bool
}

type groupHead struct {
	site *site
	disp int64
}

// selector chooses the sites of one function.
type selector struct {
	o         *ibr.Object
	g         *cfg.Graph
	a         *loops.Analysis
	live      *cfg.Liveness
	threshold float64
	pagesize  int64
	usestack  bool
	exact     bool
	framePtr  bool // the function keeps a frame pointer in rbp
	// symIn, once symbolValues computed it, holds per block which
	// registers hold a symbol's address at its start.
	symIn      []symBlock
	skipped    map[string]int
	sites      []*site
	blockCount int
}

// select collects the sites of the function's selected blocks.
func (sel *selector) run() {
	g := sel.g
	s := g.Sec
	sel.framePtr = usesFramePointer(s, g.Func)
	for _, b := range g.Blocks {
		info := sel.a.Info(b)
		if info.Score < sel.threshold {
			continue
		}
		sel.blockCount++
		heads := make(map[groupKey]*groupHead)
		for i := b.Start; i < b.End; i++ {
			in := &s.Insts[i]
			if in.Kind != ibr.Code || in.Flags&ibr.Prefix != 0 {
				continue
			}
			e := sel.live.Effect(i)
			if !e.Known && e.NMem > 0 {
				sel.skipped["instruction hijack cannot model"]++
			}
			for k := 0; k < e.NMem && e.Known; k++ {
				acc := e.Mem[k]
				st := sel.classify(i, in, acc)
				if st == nil {
					continue
				}
				if _, ok := kit.Before(g, i); !ok {
					// The call of a dynamic TLS sequence (its
					// return address push, with usestack):
					// nothing may go before it.
					sel.skipped["accesses of __tls_get_addr calls glued to their TLS load"]++
					continue
				}
				st.block, st.score = b.Index, info.Score
				if !sel.exact && !st.rep {
					key, disp, ok := sel.key(st)
					if ok {
						if h := heads[key]; h != nil {
							lo := min(h.site.lo, disp-h.disp)
							hi := max(h.site.hi, disp-h.disp+int64(st.size))
							if hi-lo <= sel.pagesize {
								// Within the estimated page: the
								// earlier site stands for this
								// access too, and checks the pages
								// of both ends of the bytes it now
								// covers (a write after a read makes
								// it read-write).
								h.site.covers++
								h.site.kind |= st.kind
								h.site.lo, h.site.hi = lo, hi
								continue
							}
						}
						heads[key] = &groupHead{st, disp}
					}
				}
				sel.sites = append(sel.sites, st)
			}
			// Registers the instruction writes end the groups that use
			// them; calls and unknown instructions end all.
			if !e.Known || e.Ctrl == effect.Call || e.Ctrl == effect.IndirectCall {
				clear(heads)
				continue
			}
			if defs := e.Def | e.Partial; defs != 0 {
				for key := range heads {
					if regIn(key.base, defs) || regIn(key.index, defs) {
						delete(heads, key)
					}
				}
			}
		}
	}
	sel.finish()
}

// finish decides, once grouping is done, which sites check two pages.
func (sel *selector) finish() {
	for _, st := range sel.sites {
		if st.rep || st.vec != 0 {
			continue
		}
		single := st.lo == 0 && st.hi == int64(st.size) && st.aligned
		st.twoPages = st.hi-st.lo > 1 && !single
	}
}

// regIn reports whether x86asm register r (of any width) is in set.
func regIn(r x86asm.Reg, set effect.RegSet) bool {
	n, _, ok := effect.GPR(r)
	return ok && set.Has(n)
}

// key returns the group of a site for the H estimate, and its
// displacement.
func (sel *selector) key(st *site) (groupKey, int64, bool) {
	m := st.acc.Mem
	if st.acc.VSIB || st.acc.BitOffset || st.size == 0 || st.vec != 0 {
		return groupKey{}, 0, false
	}
	k := groupKey{seg: st.seg, base: m.Base, index: m.Index, scale: m.Scale, segment: m.Segment}
	disp := m.Disp
	switch {
	case st.rel != nil:
		k.sym, disp = st.rel.Sym, st.rel.Addend
		k.base = 0
	case st.link != nil:
		k.link, k.linkOK = true, true
		k.base = 0
		disp = int64(st.link.Target)<<20 + st.link.Delta
	}
	return k, disp, true
}

// usesFramePointer reports whether the function sets up rbp as a frame
// pointer (push %rbp; mov %rsp,%rbp) near its entry.
func usesFramePointer(s *ibr.Section, fn *ibr.Func) bool {
	for i := fn.Start; i < fn.End && i < fn.Start+6; i++ {
		a := s.Asm(i)
		if a.Op == x86asm.MOV && a.Args[0] == x86asm.RBP && a.Args[1] == x86asm.RSP {
			return true
		}
	}
	return false
}

// classify decides whether an access is traced and describes it.
func (sel *selector) classify(i int, in *ibr.Inst, acc effect.Access) *site {
	m := acc.Mem
	st := &site{fn: sel.g.Func, inst: i, acc: acc, size: acc.Size, covers: 1, sym: "", rep: acc.Rep}
	if acc.Read {
		st.kind |= abi.KindRead
	}
	if acc.Write {
		st.kind |= abi.KindWrite
	}
	switch {
	case acc.VSIB || acc.Masked:
		d, elem, ok := vecDescriptor(sel.g.Sec.Asm(i), &in.Layout, acc)
		switch {
		case ok && acc.Mem.Segment == 0:
			st.vec, st.size = d, elem
		case acc.VSIB:
			sel.skipped["AVX-512 gather/scatter access"]++
			return nil
		default:
			// AVX-512 opmasks are not read yet: the whole operand is
			// traced, which may add a page no active lane touched.
			sel.skipped["AVX-512 masked access traced as its whole operand"]++
		}
	case acc.BitOffset:
		sel.skipped["bit-string access with a register offset"]++
		return nil
	}
	s := sel.g.Sec
	f := sel.o.File
	// A relocation on the displacement names the variable (of the
	// explicit memory operand; implicit stack accesses have none).
	if rel, ok := kit.DispRel(f, s, i); ok && acc.Arg >= 0 {
		switch rel.Type {
		case elf.R_X86_64_GOTPCREL, elf.R_X86_64_GOTPCRELX, elf.R_X86_64_REX_GOTPCRELX, elf.R_X86_64_GOTTPOFF:
			// A load from the GOT: not program data (and the
			// linker may relax it away).
			return nil
		case elf.R_X86_64_TPOFF32, elf.R_X86_64_DTPOFF32:
			// (local-exec; local-dynamic: the module's TLS
			// block in the base register, clang -fPIC)
			st.seg = abi.SegTLS
		case elf.R_X86_64_PC32, elf.R_X86_64_32S, elf.R_X86_64_32:
			st.seg = abi.SegGlobal
		default:
			sel.skipped[fmt.Sprintf("address with a %s relocation", rel.Type)]++
			return nil
		}
		st.rel = &rel
		st.sym, st.symOff = symbolName(f, rel.Sym, rel.Addend)
	}
	if m.Base == x86asm.RIP && st.rel == nil {
		if in.Link == nil || in.Link.Kind != ibr.LinkRIP {
			sel.skipped["RIP-relative operand hijack did not link"]++
			return nil
		}
		st.link = in.Link
		st.seg = abi.SegGlobal
		if fn := s.FuncAt(in.Link.Target); fn != nil {
			st.sym = fn.Name
		}
	}
	switch {
	case st.seg == abi.SegTLS:
	case m.Segment == x86asm.FS || m.Segment == x86asm.GS:
		if m.Base == 0 && m.Index == 0 {
			// %fs:const: the thread control block (stack canary,
			// pointer guard), not program data.
			return nil
		}
		st.seg = abi.SegTLS
	case m.Base == x86asm.RSP || m.Base == x86asm.ESP || (sel.framePtr && (m.Base == x86asm.RBP || m.Base == x86asm.EBP)):
		st.seg = abi.SegStack
	}
	if st.seg == abi.SegStack && !sel.usestack {
		return nil
	}
	if acc.Rep {
		st.size = acc.Elem
		st.repAfter = conditionalRep(sel.g.Sec.Asm(i))
	}
	st.lo, st.hi = 0, int64(st.size)
	st.aligned = alignedByInstruction(sel.g.Sec, i, in) || sel.aligned(st)
	return st
}

// conditionalRep reports whether a rep string instruction may stop before
// its count runs out (repe/repne cmps and scas).
func conditionalRep(a *x86asm.Inst) bool {
	switch a.Op {
	case x86asm.CMPSB, x86asm.CMPSW, x86asm.CMPSD, x86asm.CMPSQ, x86asm.SCASB, x86asm.SCASW, x86asm.SCASD, x86asm.SCASQ:
		return true
	}
	return false
}

// vecDescriptor describes an AVX2 gather or masked move for the runtime:
// which vector registers hold the indices and the mask, the element size
// and count. AVX-512 forms (opmask registers) are not described.
func vecDescriptor(a *x86asm.Inst, lay *x86len.Layout, acc effect.Access) (abi.VecDesc, int, bool) {
	if lay.Escape != x86len.VEX2 && lay.Escape != x86len.VEX3 {
		return 0, 0, false
	}
	vreg := func(arg x86asm.Arg) (uint32, int, bool) {
		r, ok := arg.(x86asm.Reg)
		switch {
		case ok && r >= x86asm.X0 && r <= x86asm.X15:
			return uint32(r - x86asm.X0), 16, true
		case ok && r >= x86asm.Y0 && r <= x86asm.Y15:
			return uint32(r - x86asm.Y0), 32, true
		}
		return 0, 0, false
	}
	var idx, elem int
	switch a.Op {
	case x86asm.VGATHERDPS, x86asm.VPGATHERDD:
		idx, elem = 4, 4
	case x86asm.VGATHERDPD, x86asm.VPGATHERDQ:
		idx, elem = 4, 8
	case x86asm.VGATHERQPS, x86asm.VPGATHERQD:
		idx, elem = 8, 4
	case x86asm.VGATHERQPD, x86asm.VPGATHERQQ:
		idx, elem = 8, 8
	case x86asm.VMASKMOVPS, x86asm.VPMASKMOVD:
		elem = 4
	case x86asm.VMASKMOVPD, x86asm.VPMASKMOVQ:
		elem = 8
	default:
		return 0, 0, false
	}
	var scale uint32
	for sc := acc.Mem.Scale; sc > 1; sc >>= 1 {
		scale++
	}
	if idx != 0 {
		// vgather dst, [base + vindex*scale], mask
		_, dw, ok1 := vreg(a.Args[0])
		m, _, ok2 := vreg(a.Args[2])
		vi, iw, ok3 := vreg(acc.Mem.Index)
		if !ok1 || !ok2 || !ok3 {
			return 0, 0, false
		}
		n := min(dw/elem, iw/idx)
		return abi.Vec(vi, true, scale, idx == 8, n, m, true), elem, true
	}
	// vmaskmov: load dst, mask, mem; store mem, mask, src.
	data := a.Args[0]
	if _, isMem := a.Args[0].(x86asm.Mem); isMem {
		data = a.Args[2]
	}
	_, w, ok1 := vreg(data)
	m, _, ok2 := vreg(a.Args[1])
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	return abi.Vec(0, false, 0, false, w/elem, m, true), elem, true
}

// alignedByInstruction reports whether the instruction faults unless its
// memory operand is aligned to its size: movaps/movapd/movdqa and their
// VEX/EVEX forms, non-temporal stores, and every legacy SSE instruction
// with a 16-byte memory operand except the explicitly unaligned ones.
func alignedByInstruction(s *ibr.Section, i int, in *ibr.Inst) bool {
	a := s.Asm(i)
	switch a.Op {
	case x86asm.MOVAPS, x86asm.MOVAPD, x86asm.MOVDQA, x86asm.VMOVAPS, x86asm.VMOVAPD, x86asm.VMOVDQA,
		x86asm.VMOVDQA32, x86asm.VMOVDQA64, x86asm.MOVNTPS, x86asm.MOVNTPD, x86asm.MOVNTDQ, x86asm.VMOVNTPS,
		x86asm.VMOVNTPD, x86asm.VMOVNTDQ, x86asm.MOVNTDQA, x86asm.VMOVNTDQA:
		return true
	case x86asm.MOVUPS, x86asm.MOVUPD, x86asm.MOVDQU, x86asm.LDDQU, x86asm.PCMPESTRI, x86asm.PCMPESTRM,
		x86asm.PCMPISTRI, x86asm.PCMPISTRM, 0:
		return false
	}
	return in.Layout.Escape == x86len.NoEscape && a.MemBytes == 16
}

// aligned reports whether the access provably stays within one page: its
// address is a multiple of its size (sizes are powers of two up to 64),
// as for an access to a global whose section alignment, offset and index
// scale are all multiples of the size, or a stack slot (frames are
// 16-byte aligned and compilers align their slots). A pointer's
// alignment is not known: memcpy-style and packed loads through it can
// straddle pages, so those accesses are checked.
func (sel *selector) aligned(st *site) bool {
	if st.size <= 1 {
		return true
	}
	if st.size&(st.size-1) != 0 || st.size > 64 {
		return false
	}
	if st.seg == abi.SegStack && st.acc.Mem.Index == 0 {
		return st.size <= 16 && st.acc.Mem.Disp%int64(st.size) == 0
	}
	m := st.acc.Mem
	rel := st.rel
	switch {
	case rel != nil && (m.Base == 0 || m.Base == x86asm.RIP):
	case rel == nil && st.link == nil && m.Segment == 0:
		// A base register that holds a symbol's address wherever the
		// function reads it (a table's, loaded once: an interpreter's
		// dispatch table, a CRC table): the operand's displacement
		// is on top of it.
		r, _, ok := effect.GPR(m.Base)
		if !ok || m.Base < x86asm.RAX || m.Base > x86asm.R15 || r == effect.RSP {
			return false
		}
		sr, ok := sel.symbolAt(st.inst, r)
		if !ok {
			return false
		}
		rel = &kit.Rel{Type: sr.Type, Sym: sr.Sym, Addend: sr.Addend + m.Disp}
	default:
		return false
	}
	if m.Index != 0 && int(m.Scale)%st.size != 0 {
		return false
	}
	f := sel.o.File
	sym := &f.Symbols[rel.Sym]
	if sym.Shndx == elfobj.ShnUndef || sym.Shndx >= 0xffff0000 {
		return false
	}
	sec := f.Sections[sym.Shndx]
	off := int64(sym.Value) + rel.Addend
	return sec.Align >= uint64(st.size) && off%int64(st.size) == 0
}

// symVal is what symbolValues knows of a register at a point: it holds
// the address rel refers to (Addend: the offset from the symbol) on every
// path there (known), or may hold anything (the zero symVal).
type symVal struct {
	rel   kit.Rel
	known bool
}

// symBlock is the registers' state at a block's start, once some path
// reached it (reached).
type symBlock struct {
	regs    [16]symVal
	reached bool
}

// symbolValues finds which registers hold a symbol's address where a
// site reads them: a forward data flow over the function's blocks, in
// which `lea sym+off(%rip), %r64` (a PC-relative relocation) makes r hold
// that address and any other write of r (a call's of the registers it
// clobbers among them) makes it unknown; a block control may enter from
// outside (the entry, a landing pad) starts with nothing known, and where
// paths meet a register stays known only with one address on all of them.
// An instruction hijack cannot model makes every register unknown. The
// result is the state at each block's start (symbolAt goes on from there),
// or none (empty) where no instruction of the function loads a symbol's
// address: nothing is known anywhere.
func (sel *selector) symbolValues() []symBlock {
	if sel.symIn != nil {
		return sel.symIn
	}
	g := sel.g
	hasLea := false
	for i := g.Func.Start; i < g.Func.End && !hasLea; i++ {
		if inst := &g.Sec.Insts[i]; inst.Kind == ibr.Code && inst.Flags&ibr.Prefix == 0 {
			_, _, hasLea = sel.symbolLea(i)
		}
	}
	if !hasLea {
		sel.symIn = []symBlock{} // (not nil: computed)
		return sel.symIn
	}
	in := make([]symBlock, len(g.Blocks))
	sel.symIn = in
	for _, b := range g.Blocks {
		in[b.Index].reached = b.External // (nothing known)
	}
	for changed := true; changed; {
		changed = false
		for _, b := range g.Blocks {
			if !in[b.Index].reached {
				continue
			}
			st := in[b.Index].regs
			for i := b.Start; i < b.End; i++ {
				sel.symbolStep(&st, i)
			}
			for _, succ := range b.Succs {
				next := &in[succ.Index]
				if !next.reached {
					*next = symBlock{regs: st, reached: true}
					changed = true
					continue
				}
				for r, v := range next.regs {
					if v.known && v != st[r] {
						next.regs[r] = symVal{}
						changed = true
					}
				}
			}
		}
	}
	return in
}

// symbolStep applies instruction i to the register state st.
func (sel *selector) symbolStep(st *[16]symVal, i int) {
	s := sel.g.Sec
	if s.Insts[i].Kind != ibr.Code || s.Insts[i].Flags&ibr.Prefix != 0 {
		return
	}
	e := sel.live.Effect(i)
	if !e.Known {
		*st = [16]symVal{}
		return
	}
	defs := e.Def | e.Partial
	if defs == 0 {
		return
	}
	for r := effect.Reg(0); r < 16; r++ {
		if defs.Has(r) {
			st[r] = symVal{}
		}
	}
	if rel, r, ok := sel.symbolLea(i); ok && defs == 1<<r && e.Partial == 0 {
		st[r] = symVal{rel: rel, known: true}
	}
}

// symbolLea recognises `lea sym+off(%rip), %r64` with a PC-relative
// relocation: r then holds what rel refers to.
func (sel *selector) symbolLea(i int) (rel kit.Rel, r effect.Reg, ok bool) {
	s := sel.g.Sec
	a := s.Asm(i)
	dst, isReg := a.Args[0].(x86asm.Reg)
	mem, isMem := a.Args[1].(x86asm.Mem)
	if a.Op != x86asm.LEA || !isReg || dst < x86asm.RAX || dst > x86asm.R15 || !isMem || mem.Base != x86asm.RIP || mem.Index != 0 {
		return kit.Rel{}, 0, false
	}
	rel, ok = kit.DispRel(sel.o.File, s, i)
	return rel, effect.Reg(dst - x86asm.RAX), ok && rel.Type == elf.R_X86_64_PC32
}

// symbolAt returns the address register r holds before instruction i, if
// it holds a symbol's on every path (symbolValues).
func (sel *selector) symbolAt(i int, r effect.Reg) (kit.Rel, bool) {
	b := sel.g.BlockOf(i)
	if b == nil {
		return kit.Rel{}, false
	}
	in := sel.symbolValues()
	if len(in) == 0 {
		return kit.Rel{}, false
	}
	blk := in[b.Index]
	if !blk.reached {
		return kit.Rel{}, false
	}
	st := blk.regs
	for j := b.Start; j < i; j++ {
		sel.symbolStep(&st, j)
	}
	return st[r].rel, st[r].known
}

// symbolName names the variable at symbol+off: the symbol itself, or for a
// section symbol the object symbol that covers the offset.
func symbolName(f *elfobj.File, k uint32, off int64) (string, int64) {
	sym := &f.Symbols[k]
	if sym.Type() != elf.STT_SECTION {
		return sym.Name, off
	}
	t := int64(sym.Value) + off
	best := -1
	for j := range f.Symbols {
		o := &f.Symbols[j]
		if o.Shndx != sym.Shndx || (o.Type() != elf.STT_OBJECT && o.Type() != elf.STT_TLS) {
			continue
		}
		if int64(o.Value) <= t && (t < int64(o.Value+o.Size) || o.Size == 0 && t == int64(o.Value)) {
			best = j
		}
	}
	if best < 0 {
		return f.SectionName(int(sym.Shndx)), t
	}
	return f.Symbols[best].Name, t - int64(f.Symbols[best].Value)
}

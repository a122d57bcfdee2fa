package cfg

import (
	"fmt"
	"slices"

	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg/effect"
	"hijack/ibr"
)

// loc is where a value is: a register, or a stack slot [reg+disp] (gcc
// and clang at -O0 keep the switch index in one, compare it there and
// load it again).
type loc struct {
	reg  effect.Reg
	mem  bool
	disp int64
}

// idxState describes the index X of a table, as a 64-bit value, in terms
// of a location at some point: X is the low w bits there, zero-extended
// (or sign-extended when sext) to 64 bits, shifted right by shift (gcc
// checks x before it computes switch (x >> 2)); sext and shift exclude
// each other.
type idxState struct {
	loc
	w     int // 8, 16, 32 or 64
	sext  bool
	shift int
}

// guardFact is a range check on the edge from a block to a successor:
// when control takes that edge, the low w bits of l just before
// instruction at (a cmp, or a sub whose flags are those of a cmp) are at
// most n (unsigned).
type guardFact struct {
	at  int
	jcc int // the conditional jump
	l   loc
	w   int
	n   uint64
	// ne: the value is not n (je or jne), which bounds it only when n
	// is the largest value it can have (clang's table of 255 of the 256
	// values of a byte).
	ne bool
}

func mask(w int) uint64 {
	if w >= 64 {
		return ^uint64(0)
	}
	return 1<<w - 1
}

// bound proves an upper bound of the 64-bit value of reg before
// instruction i, as the index of a table: a range check (cmp $N, %idx;
// ja default, or the jbe, jae, jb forms) on every path to i, or a mask
// (and $M), followed through copies, zero or sign extensions and stack
// slots. It returns the bound and the instruction that establishes it.
func (r *resolver) bound(i int, reg effect.Reg) (uint64, int, string) {
	b := r.g.BlockOf(i)
	if b == nil {
		return 0, 0, "no block"
	}
	n, guard, ok := r.boundIn(b, i, idxState{loc{reg: reg}, 64, false, 0}, nil, nil, make(map[boundKey]bool))
	if !ok {
		return 0, 0, fmt.Sprintf("no range check bounds the index %s", reg)
	}
	if n >= maxEntries {
		return 0, 0, fmt.Sprintf("index %s is only bounded by %d", reg, n)
	}
	return n, guard, ""
}

type boundKey struct {
	block int
	st    idxState
}

// boundIn walks block b backwards from instruction end with the index
// described by st there. g is the range check on the edge from b to the
// block the walk came from, if any; active are the range checks met
// further on this path whose location nothing has changed since (the
// index may be copied before the check: mov %ebp,%edi; cmp $12,%ebp; ja
// ...; movslq (%rsi,%rdi,4),%rcx). onPath holds the (block, state) pairs
// of the walk in progress: meeting one again is a cycle that proves
// nothing. A bound is proved when the walk meets a range check on the
// index's location, or when every predecessor proves one.
func (r *resolver) boundIn(b *Block, end int, st idxState, g *guardFact, active []*guardFact, onPath map[boundKey]bool) (uint64, int, bool) {
	best, bestAt, have := uint64(0), 0, false
	tighten := func(n uint64, at int) {
		if !have || n < best {
			best, bestAt, have = n, at, true
		}
	}
	active = slices.Clone(active)
	for k := end - 1; k >= b.Start; k-- {
		if r.budget--; r.budget < 0 {
			return best, bestAt, have
		}
		// The state describes X just after k: move it before k.
		if r.changes(k, st.loc, st.w) {
			ns, inh, hasInh, stop := r.through(k, st)
			if hasInh {
				tighten(inh, k)
				// A value k bounds by inh, checked afterwards to be
				// other than inh (clang -O0 widens a byte, then
				// compares the 64-bit value with 255: sub $0xff; je).
				for _, a := range active {
					if a.ne && a.l == st.loc && a.w == st.w && !st.sext && st.shift == 0 && a.n == inh && inh > 0 {
						tighten(inh-1, a.jcc)
					}
				}
			}
			if stop {
				return best, bestAt, have
			}
			st = ns
		}
		// A check is about its location's value before its cmp; it
		// holds earlier as long as nothing changes that location.
		active = slices.DeleteFunc(active, func(a *guardFact) bool { return r.changes(k, a.l, a.w) })
		if g != nil && k == g.at {
			active = append(active, g)
		}
		for _, a := range active {
			if n, ok := r.applyGuard(st, a); ok {
				tighten(n, a.jcc)
				return best, bestAt, have
			}
		}
	}
	key := boundKey{b.Index, st}
	if r.external[b.Index] || len(b.Preds) == 0 || onPath[key] {
		return best, bestAt, have
	}
	onPath[key] = true
	defer delete(onPath, key)
	if len(active) > 4 {
		active = active[len(active)-4:]
	}
	var worst uint64
	worstAt := 0
	live := 0
	for _, p := range b.Preds {
		if !r.external[p.Index] && len(p.Preds) == 0 {
			// Alignment padding nothing enters, which falls into b
			// (gcc puts a nop before the label after a jump): not a
			// path.
			continue
		}
		live++
		n, at, ok := r.boundIn(p, p.End, st, r.guardOn(p, b), active, onPath)
		if !ok {
			return best, bestAt, have
		}
		if n >= worst {
			worst, worstAt = n, at
		}
	}
	if live == 0 {
		return best, bestAt, have
	}
	tighten(worst, worstAt)
	return best, bestAt, have
}

// changes reports whether instruction k may change the w-bit value at l:
// define the register, or for a slot, change its base register or write
// memory that is not provably elsewhere.
func (r *resolver) changes(k int, l loc, w int) bool {
	if r.defines(k, l.reg) {
		return true
	}
	if !l.mem {
		return false
	}
	e := r.effect(k)
	switch {
	case !e.Known, e.Ctrl == effect.Call, e.Ctrl == effect.IndirectCall, e.Ctrl == effect.Syscall, e.Ctrl == effect.Interrupt:
		return true // calls and syscalls may write anything
	}
	for _, acc := range e.Accesses() {
		if !acc.Write {
			continue
		}
		base, bw, ok := gpr(acc.Mem.Base)
		if ok && bw == 64 && base == l.reg && acc.Mem.Index == 0 && acc.Mem.Segment == 0 && acc.Size > 0 && !acc.Rep && !acc.VSIB {
			lo, hi := acc.Mem.Disp, acc.Mem.Disp+int64(acc.Size)
			if hi <= l.disp || lo >= l.disp+int64(w/8) {
				continue
			}
		}
		return true
	}
	return false
}

// operand returns the location of a register or stack-slot operand of
// instruction k, and its width in bits.
func (r *resolver) operand(k int, a x86asm.Arg) (loc, int, bool) {
	switch x := a.(type) {
	case x86asm.Reg:
		reg, w, ok := gpr(x)
		return loc{reg: reg}, w, ok
	case x86asm.Mem:
		base, bw, ok := gpr(x.Base)
		lay := &r.s.Insts[k].Layout
		if !ok || bw != 64 || x.Index != 0 || x.Segment != 0 || lay.DispSize > 0 && r.hasReloc(k, int(lay.DispOff)) {
			return loc{}, 0, false
		}
		in := r.asm(k)
		if in.MemBytes <= 0 || in.MemBytes > 8 {
			return loc{}, 0, false
		}
		return loc{reg: base, mem: true, disp: x.Disp}, 8 * in.MemBytes, true
	}
	return loc{}, 0, false
}

// guardOn returns the range check that taking the edge from p to b
// implies: p ends with an unsigned conditional jump on flags set by a cmp
// of a register or stack slot with an immediate (or a sub of an
// immediate from a register), and b is on the side where the value is at
// most the bound.
func (r *resolver) guardOn(p, b *Block) *guardFact {
	last := p.End - 1
	a := r.asm(last)
	in := &r.s.Insts[last]
	// A jump out of the function (to its .cold part) has no Link.
	taken := in.Link != nil && in.Link.Kind == ibr.LinkBranch && in.Link.Target == b.Start
	fall := p.End == b.Start
	if taken == fall {
		return nil
	}
	var below bool // in range when the jump is taken
	strict, ne := false, false
	switch a.Op {
	case x86asm.JE:
		below, ne = false, true
	case x86asm.JNE:
		below, ne = true, true
	case x86asm.JA:
		below = false
	case x86asm.JBE:
		below = true
	case x86asm.JAE:
		below, strict = false, true
	case x86asm.JB:
		below, strict = true, true
	default:
		return nil
	}
	if below != taken {
		return nil
	}
	// The flags come from the last instruction before the jump that
	// writes CF or ZF.
	for k := last - 1; k >= p.Start; k-- {
		e := r.effect(k)
		if (e.FlagsDef|e.FlagsMay)&(effect.CF|effect.ZF) == 0 {
			continue
		}
		c := r.asm(k)
		if c.Op != x86asm.CMP && c.Op != x86asm.SUB || args(c) != 2 {
			return nil
		}
		l, w, ok := r.operand(k, c.Args[0])
		imm, isImm := c.Args[1].(x86asm.Imm)
		if !ok || !isImm || c.Op == x86asm.SUB && l.mem {
			return nil
		}
		n := uint64(imm) & mask(w)
		if ne {
			return &guardFact{at: k, jcc: last, l: l, w: w, n: n, ne: true}
		}
		if strict {
			if n == 0 {
				return nil
			}
			n--
		}
		return &guardFact{at: k, jcc: last, l: l, w: w, n: n}
	}
	return nil
}

// applyGuard turns a range check into a bound on the index when the
// checked location holds it.
func (r *resolver) applyGuard(st idxState, g *guardFact) (uint64, bool) {
	if g.l != st.loc {
		return 0, false
	}
	n := g.n
	if g.ne {
		if st.w != g.w || st.sext || n != mask(st.w) || n == 0 {
			return 0, false
		}
		return (n - 1) >> st.shift, true
	}
	switch {
	case st.w < g.w:
		// The low w bits are the whole checked value only if it fits.
		if n > mask(st.w) {
			return 0, false
		}
	case st.w > g.w:
		// The bits above the checked ones must be zero.
		if st.mem || !r.upperZero(g.at, st.reg, g.w) {
			return 0, false
		}
		return n >> st.shift, true
	}
	if st.sext && st.w < 64 && n>>(st.w-1) != 0 {
		return 0, false // the sign bit may be set
	}
	return n >> st.shift, true
}

// upperZero reports whether every definition of reg that reaches
// instruction i leaves the bits of reg from w up zero: a 32-bit write
// (for w >= 32), a zero extension of at most w bits, an and with a mask
// below 2^w, a copy of a register that has them zero.
func (r *resolver) upperZero(i int, reg effect.Reg, w int) bool {
	return r.upperZeroDepth(i, reg, w, 0)
}

func (r *resolver) upperZeroDepth(i int, reg effect.Reg, w, depth int) bool {
	defs := r.reach(i, reg)
	if len(defs) == 0 {
		return false
	}
	for _, d := range defs {
		if d == unknownDef || !r.effect(d).Def.Has(reg) {
			return false
		}
		a := r.asm(d)
		if args(a) < 1 {
			return false
		}
		dst, dw, ok := gpr(a.Args[0])
		if !ok || dst != reg || dw < 32 {
			return false
		}
		switch {
		case a.Op == x86asm.MOV && args(a) == 2 && dw == 64:
			src, sw, ok := gpr(a.Args[1])
			if !ok || sw != 64 || depth >= 4 || !r.upperZeroDepth(d, src, w, depth+1) {
				return false
			}
		case a.Op == x86asm.MOVZX && args(a) == 2:
			sw := 8 * a.MemBytes // from memory, any address
			if x, ok := a.Args[1].(x86asm.Reg); ok {
				_, sw, _ = gpr(x)
			}
			if sw == 0 || sw > w {
				return false
			}
		case a.Op == x86asm.AND && args(a) == 2:
			imm, ok := a.Args[1].(x86asm.Imm)
			if !ok || uint64(imm)&mask(dw) > mask(w) {
				return false
			}
		case dw == 32 && w >= 32:
			// Every 32-bit write zero-extends.
		default:
			return false
		}
	}
	return true
}

// through carries the index backwards over instruction k, which changes
// its location. It returns the state before k, a bound the instruction
// itself establishes (a zero extension, a mask), and whether the walk
// must stop.
func (r *resolver) through(k int, st idxState) (ns idxState, inh uint64, hasInh, stop bool) {
	e := r.effect(k)
	a := r.asm(k)
	if !e.Known || e.Ctrl != effect.None {
		return st, 0, false, true
	}
	if a.Op == x86asm.CDQE {
		// cltq: rax = sign-extended eax.
		if st.mem || st.reg != effect.RAX {
			return st, 0, false, true
		}
		return extend(st, loc{reg: effect.RAX}, 32, true)
	}
	if args(a) != 2 {
		return st, 0, false, true
	}
	dst, dw, ok := r.operand(k, a.Args[0])
	if !ok || dst != st.loc {
		return st, 0, false, true
	}
	src, sw, srcOK := r.operand(k, a.Args[1])
	switch a.Op {
	case x86asm.MOV:
		if !srcOK || sw != dw || dst.mem && src.mem {
			return st, 0, false, true
		}
		switch {
		case dw == 64, dw == 32 && st.w <= 32, dw < 32 && st.w <= dw, dst.mem && st.w <= dw:
			return idxState{src, st.w, st.sext, st.shift}, 0, false, false
		case dw == 32 && !dst.mem:
			// 32-bit writes to a register zero-extend.
			return idxState{src, 32, false, st.shift}, 0, false, false
		}
	case x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD:
		if !srcOK || dst.mem || dw < 32 && st.w > dw {
			return st, 0, false, true // the bits above dw are the old ones
		}
		return extend(st, src, sw, a.Op != x86asm.MOVZX)
	case x86asm.AND:
		imm, ok := a.Args[1].(x86asm.Imm)
		if !ok || dst.mem || dw < 32 && st.w > dw {
			return st, 0, false, true
		}
		// The register is at most m afterwards (a 32-bit and
		// zero-extends; a 64-bit mask is unsigned): so are its low w
		// bits when m fits in them.
		m := uint64(imm) & mask(dw)
		if m <= mask(st.w) && (!st.sext || st.w == 64 || m>>(st.w-1) == 0) {
			return st, m >> st.shift, true, true
		}
	case x86asm.SHR:
		// shr $k, %r: the low dw bits become D >> k, D the low dw bits
		// before (zero-extended above them for dw >= 32, the rest of the
		// register unchanged below). X is (D >> k) >> shift when it is
		// read as exactly those dw bits, or as more of a register the
		// shift zero-extended.
		imm, ok := a.Args[1].(x86asm.Imm)
		k := int(uint64(imm) & 63)
		if !ok || dst.mem || k == 0 || k >= dw || st.w != dw && !(dw >= 32 && st.w > dw) || st.sext {
			return st, 0, false, true
		}
		return idxState{dst, dw, false, st.shift + k}, 0, false, false
	}
	return st, 0, false, true
}

// extend carries the index over a zero or sign extension of the sw-bit
// source src into a register that it writes whole (32 or 64 bits) or
// whose written bits hold the index (the caller checked that).
func extend(st idxState, src loc, sw int, sign bool) (idxState, uint64, bool, bool) {
	if st.w <= sw {
		// Only source bits are used.
		return idxState{src, st.w, st.sext, st.shift}, 0, false, false
	}
	if !sign {
		// The top bit of the w-bit value is a zero above the source:
		// X is the source, zero-extended.
		return idxState{src, sw, false, st.shift}, mask(sw) >> st.shift, true, false
	}
	if st.shift > 0 {
		return st, 0, false, true
	}
	// X is the source sign-extended, or (a 32-bit destination read as
	// 64 bits) its 32-bit sign extension zero-extended: the same when the
	// source's sign bit is clear, which a bound on a sign-extended state
	// requires.
	return idxState{src, sw, true, 0}, 0, false, false
}

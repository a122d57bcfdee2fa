package cfg

import (
	"debug/elf"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg/effect"
	"hijack/elfobj"
	"hijack/ibr"
)

// JumpTable is a jump table an indirect jump was proven to dispatch
// through: the table's address comes from the one definition that reaches
// the jump, the index is bounded by a range check (or a mask) on every path
// to it, and every entry up to that bound has a relocation that leads to
// an instruction of the jump's function.
//
// Two forms exist. Absolute tables hold 8-byte addresses (R_X86_64_64),
// read by `jmp *T(,%idx,8)`, `jmp *(%base,%idx,8)` or a `mov` of the same
// into the jump's register (code that is not position-independent).
// Relative tables hold 4-byte offsets from an address, read by `movslq
// (%base,%idx,4),%r` and added to that address, `add %base,%r; jmp *%r`
// (gcc and clang with -fPIC or -fPIE, and glibc's assembly).
type JumpTable struct {
	Jump  int // the indirect jump
	Load  int // the instruction that reads the entry (Jump for jmp *T(,%idx,8))
	Base  int // the instruction that loads the table's address, or -1 when the load's displacement holds it
	Guard int // the conditional jump (after its cmp) or the and that bounds the index
	// Sec and Off locate the first entry; entry k is at Off+k*size.
	Sec uint32
	Off uint64
	// Relative entries are 4-byte offsets from RelTo (an offset in Sec,
	// normally Off); absolute ones are 8-byte addresses.
	Relative bool
	RelTo    uint64
	// Entries holds the target of each entry, in table order: one more
	// than the index bound.
	Entries []int
}

// Targets returns the distinct targets of the table, in table order.
func (t *JumpTable) Targets() []int { return dedup(t.Entries) }

func dedup(xs []int) []int {
	var out []int
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// maxEntries bounds the tables hijack accepts: an index proved below
// 65536 by a movzwl only is no evidence of a table that large.
const maxEntries = 1 << 12

// unknownDef stands for a value that comes from outside the function: its
// entry, a landing pad, a label other code may jump to.
const unknownDef = -1

// resolver proves indirect jumps of one function to be table dispatches
// by data flow over its graph: reaching definitions for the table's
// address and the entry, and a backward walk for the index's bound. The
// graph's edges may over-approximate (jumps not yet resolved reach every
// address-taken instruction of the function); they never miss one, so
// what is proved on them holds.
type resolver struct {
	ix  *objIndex
	g   *Graph
	s   *ibr.Section
	fn  *ibr.Func
	eff []effect.Effect
	// local maps direct calls to functions of this object to their
	// callee: compilers that see the callee keep values in the
	// caller-saved registers it leaves alone (gcc's -fipa-ra), so such a
	// call defines only the registers the callee may write (clobbers).
	local map[int]*ibr.Func
	// external marks blocks control may enter from outside the
	// function's own edges: the entry, blocks without predecessors
	// (landing pads, which the unwinder enters), foreign labels.
	external []bool
	budget   int // instructions the bound walk may still visit
	// cur is the jump being resolved; intoCode marks the jumps whose
	// table (address proved, index bounded) has an entry leading to code
	// of this object outside the function that is not a function's entry
	// (a case gcc moved to the .cold part): such a jump is no tail call.
	cur      int
	intoCode map[int]bool
	parts    map[*ibr.Func]*part
}

func (r *resolver) asm(i int) *x86asm.Inst { return r.s.Asm(i) }

func (r *resolver) effect(i int) *effect.Effect { return &r.eff[i-r.fn.Start] }

// defines reports whether instruction k may change register reg.
func (r *resolver) defines(k int, reg effect.Reg) bool {
	e := r.effect(k)
	if (e.Def | e.Partial).Has(reg) {
		return true
	}
	if e.Ctrl == effect.Call || e.Ctrl == effect.IndirectCall {
		if callee := r.local[k]; callee != nil {
			return r.ix.clobbers(callee).Has(reg)
		}
		return effect.CallerSaved.Has(reg)
	}
	return false
}

// clobbers returns the caller-saved registers a call to fn may change:
// those its instructions write, and all of them if it calls or jumps to
// code outside the object or through a pointer other than a table
// dispatch of its own (a direct call to a function of the object adds
// that function's, computed the same way).
// The callee-saved ones it preserves, as the ABI says and as for any
// other call.
func (ix *objIndex) clobbers(fn *ibr.Func) effect.RegSet {
	if c, ok := ix.clobber[fn]; ok {
		return c
	}
	// While fn is being computed (recursion), assume the worst.
	ix.clobber[fn] = effect.CallerSaved
	var c effect.RegSet
	s := fn.Section
	for i := fn.Start; i < fn.End; i++ {
		in := &s.Insts[i]
		if in.Kind != ibr.Code {
			continue
		}
		e := effect.Of(s.Asm(i), &in.Layout, s.Bytes(i))
		if !e.Known {
			c |= effect.CallerSaved
			continue
		}
		c |= e.Def | e.Partial
		switch e.Ctrl {
		case effect.Call:
			if callee := ix.localCallee(s, i); callee != nil {
				c |= ix.clobbers(callee)
			} else {
				c |= effect.CallerSaved
			}
		case effect.IndirectCall, effect.Syscall, effect.Interrupt:
			c |= effect.CallerSaved
		case effect.Jump, effect.CondJump:
			if in.Link == nil || in.Link.Kind != ibr.LinkBranch || in.Link.Target < fn.Start || in.Link.Target >= fn.End {
				c |= effect.CallerSaved // a tail call
			}
		case effect.IndirectJump:
			// A table dispatch stays in fn; anything else may leave.
			if g := ix.graph(fn); g == nil || g.BlockOf(i) == nil || !g.BlockOf(i).Table {
				c |= effect.CallerSaved
			}
		}
	}
	c &= effect.CallerSaved
	ix.clobber[fn] = c
	return c
}

// localCallee returns the function of this object a direct call calls,
// or nil.
func (ix *objIndex) localCallee(s *ibr.Section, i int) *ibr.Func {
	fn, _ := callTarget(ix.o, s, i, ix.starts)
	return fn
}

// reach returns the definitions of reg that reach the point before
// instruction i: instruction indices, and unknownDef for a value from
// outside the function.
func (r *resolver) reach(i int, reg effect.Reg) []int {
	b := r.g.BlockOf(i)
	if b == nil {
		return []int{unknownDef}
	}
	for k := i - 1; k >= b.Start; k-- {
		if r.defines(k, reg) {
			return []int{k}
		}
	}
	var defs []int
	add := func(d int) {
		if !slices.Contains(defs, d) {
			defs = append(defs, d)
		}
	}
	seen := make([]bool, len(r.g.Blocks))
	work := []*Block{b} // blocks whose entry the value reaches
	visit := func(p *Block) {
		if seen[p.Index] {
			return
		}
		seen[p.Index] = true
		for k := p.End - 1; k >= p.Start; k-- {
			if r.defines(k, reg) {
				add(k)
				return
			}
		}
		work = append(work, p)
	}
	for len(work) > 0 {
		x := work[len(work)-1]
		work = work[:len(work)-1]
		if r.external[x.Index] {
			if via, ok := r.coldPreds(x, reg); ok {
				for _, p := range via {
					visit(p)
				}
			} else {
				add(unknownDef)
			}
		}
		for _, p := range x.Preds {
			visit(p)
		}
	}
	return defs
}

// part is another function of the object that only this one enters (the
// .cold part gcc splits off a function), with the registers it may
// change and the branches of this function into it.
type part struct {
	owned   bool
	defs    effect.RegSet
	entries []*Block
}

// coldPreds returns, for a block other code enters, the blocks of this
// function whose branches reach it through parts of the function that
// leave reg alone: the value of reg there is the one at those branches.
// ok is false when the value may come from anywhere else.
func (r *resolver) coldPreds(x *Block, reg effect.Reg) ([]*Block, bool) {
	ib := r.ix.in[r.s][x.Start]
	if x.Index == 0 || ib == nil || ib.other || len(ib.from) == 0 {
		return nil, false
	}
	var out []*Block
	for _, st := range ib.from {
		fn := funcOf(st.s, st.i)
		if fn == nil || fn == r.fn {
			return nil, false
		}
		pt := r.part(fn)
		if !pt.owned || pt.defs.Has(reg) {
			return nil, false
		}
		out = append(out, pt.entries...)
	}
	return out, true
}

func (r *resolver) part(fn *ibr.Func) *part {
	if pt := r.parts[fn]; pt != nil {
		return pt
	}
	pt := &part{}
	if r.parts == nil {
		r.parts = make(map[*ibr.Func]*part)
	}
	r.parts[fn] = pt
	s := fn.Section
	for i := fn.Start; i < fn.End; i++ {
		in := &s.Insts[i]
		if in.Kind != ibr.Code {
			return pt
		}
		e := effect.Of(s.Asm(i), &in.Layout, s.Bytes(i))
		pt.defs |= e.Def | e.Partial
		if e.Ctrl == effect.Call || e.Ctrl == effect.IndirectCall {
			pt.defs |= effect.CallerSaved
		}
		ib := r.ix.in[s][i]
		if ib == nil {
			continue
		}
		if ib.other {
			return pt
		}
		for _, st := range ib.from {
			b := r.g.BlockOf(st.i)
			if st.s != r.s || funcOf(st.s, st.i) != r.fn || b == nil || b.End-1 != st.i {
				return pt
			}
			pt.entries = append(pt.entries, b)
		}
	}
	pt.owned = len(pt.entries) > 0
	return pt
}

// gpr maps an operand to a general register and its width in bits; the
// high-byte registers (ah..bh) are refused: they are not the low bits of
// their register.
func gpr(a x86asm.Arg) (effect.Reg, int, bool) {
	x, ok := a.(x86asm.Reg)
	if !ok || x >= x86asm.AH && x <= x86asm.BH {
		return 0, 0, false
	}
	reg, w, ok := effect.GPR(x)
	return reg, 8 * w, ok
}

func args(a *x86asm.Inst) int {
	n := 0
	for n < len(a.Args) && a.Args[n] != nil {
		n++
	}
	return n
}

// addr is an address in a data section.
type addr struct {
	sec uint32
	off int64
	def int // the instruction that loads it into a register
}

// fieldTarget returns the data section and offset that the relocation on
// the 4- or 8-byte field at off of instruction i designates; pc says the
// field must be PC-relative (else absolute).
func (r *resolver) fieldTarget(i, off int, pc bool) (uint32, int64, bool) {
	f := r.ix.o.File
	in := &r.s.Insts[i]
	for _, fr := range in.Relocs {
		if fr.Off != off || fr.Sec >= len(f.Sections) || fr.Index >= len(f.Sections[fr.Sec].Relocs) {
			continue
		}
		rel := f.Sections[fr.Sec].Relocs[fr.Index]
		class := ibr.ClassOf(rel.Type)
		if pc != (class == ibr.RelocPC) || class == ibr.RelocOther || rel.Type == elf.R_X86_64_PLT32 {
			return 0, 0, false
		}
		sec, t, ok := relocTarget(f, r.s, in, fr)
		if !ok || t < 0 || r.ix.o.BySection[int(sec)] != nil || !allocated(f, sec) {
			return 0, 0, false
		}
		return sec, t, true
	}
	return 0, 0, false
}

// maxDefs bounds the reaching definitions address compares (only for
// the register read: those copied into it must have one).
const maxDefs = 32

// address finds the data address register reg holds before instruction i:
// every reaching definition is a lea of that address, a mov of it as an
// immediate, or a copy or offset of a register that holds it. Compilers
// load a table address again where they ran out of registers: gcc 12
// -O2 -fPIC loads the first table of pcre2's find_minlength into r11 in
// eleven places, all reaching its dispatch.
func (r *resolver) address(i int, reg effect.Reg, depth int) (addr, string) {
	defs := r.reach(i, reg)
	if len(defs) == 0 || len(defs) > maxDefs || len(defs) > 1 && depth > 0 {
		return addr{}, fmt.Sprintf("%s has %d reaching definitions", reg, len(defs))
	}
	var first addr
	for k, d := range defs {
		if d == unknownDef {
			if len(defs) == 1 {
				return addr{}, fmt.Sprintf("%s comes from outside the function", reg)
			}
			return addr{}, fmt.Sprintf("%s has %d reaching definitions, one from outside the function", reg, len(defs))
		}
		ad, why := r.addressAt(d, reg, depth)
		if why != "" {
			if len(defs) == 1 {
				return addr{}, why
			}
			return addr{}, fmt.Sprintf("%s has %d reaching definitions: %s", reg, len(defs), why)
		}
		if k == 0 {
			first = ad
		} else if ad.sec != first.sec || ad.off != first.off {
			return addr{}, fmt.Sprintf("%s has %d reaching definitions with different addresses (%s, %s)", reg, len(defs), r.where(first.def), r.where(ad.def))
		}
	}
	return first, ""
}

// addressAt decodes definition d of register reg as a data address (see
// address).
func (r *resolver) addressAt(d int, reg effect.Reg, depth int) (addr, string) {
	a := r.asm(d)
	lay := &r.s.Insts[d].Layout
	not := func() (addr, string) {
		return addr{}, fmt.Sprintf("%s is defined at %s, not with a table address", reg, r.where(d))
	}
	if args(a) != 2 {
		return not()
	}
	dst, dw, ok := gpr(a.Args[0])
	if !ok || dst != reg {
		return not()
	}
	switch a.Op {
	case x86asm.LEA:
		m, ok := a.Args[1].(x86asm.Mem)
		if !ok || m.Index != 0 || m.Segment != 0 || dw != 64 {
			return not()
		}
		if m.Base == x86asm.RIP {
			if lay.DispSize != 4 {
				return not()
			}
			if sec, t, ok := r.fieldTarget(d, int(lay.DispOff), true); ok {
				return addr{sec, t, d}, ""
			}
			return not()
		}
		if base, bw, ok := gpr(m.Base); ok && bw == 64 && depth < 4 && (lay.DispSize == 0 || !r.hasReloc(d, int(lay.DispOff))) {
			ad, why := r.address(d, base, depth+1)
			if why != "" {
				return ad, why
			}
			ad.off += m.Disp
			ad.def = d
			return ad, ""
		}
	case x86asm.MOV:
		switch src := a.Args[1].(type) {
		case x86asm.Imm:
			// mov $T, %r32 (R_X86_64_32), mov $T, %r64 (sign-extended
			// imm32, R_X86_64_32S) or movabs $T, %r64 (R_X86_64_64).
			if lay.ImmSize != 4 && lay.ImmSize != 8 || dw < 32 {
				return not()
			}
			f := r.ix.o.File
			for _, fr := range r.s.Insts[d].Relocs {
				if fr.Off != int(lay.ImmOff) || fr.Sec >= len(f.Sections) || fr.Index >= len(f.Sections[fr.Sec].Relocs) {
					continue
				}
				typ := f.Sections[fr.Sec].Relocs[fr.Index].Type
				okType := dw == 32 && typ == elf.R_X86_64_32 || dw == 64 && lay.ImmSize == 4 && typ == elf.R_X86_64_32S ||
					dw == 64 && lay.ImmSize == 8 && typ == elf.R_X86_64_64
				if !okType {
					return not()
				}
				if sec, t, ok := r.fieldTarget(d, int(lay.ImmOff), false); ok {
					return addr{sec, t, d}, ""
				}
			}
			return not()
		case x86asm.Reg:
			if sreg, sw, ok := gpr(src); ok && sw == 64 && dw == 64 && depth < 4 {
				ad, why := r.address(d, sreg, depth+1)
				if why == "" {
					ad.def = d
				}
				return ad, why
			}
		}
	}
	return not()
}

func (r *resolver) hasReloc(i, off int) bool {
	for _, fr := range r.s.Insts[i].Relocs {
		if fr.Off == off {
			return true
		}
	}
	return false
}

// where names instruction i for reasons: its offset in the section.
func (r *resolver) where(i int) string {
	return fmt.Sprintf("0x%x", r.s.Insts[i].Off)
}

// resolve tries to prove that the indirect jump j dispatches through a
// jump table. Otherwise it says why not.
func (r *resolver) resolve(j int) (*JumpTable, string) {
	r.budget = 1 << 16
	r.cur = j
	a := r.asm(j)
	if a.Op != x86asm.JMP || args(a) != 1 {
		return nil, "not a near jump hijack decodes"
	}
	switch x := a.Args[0].(type) {
	case x86asm.Mem:
		return r.absolute(j, j, x)
	case x86asm.Reg:
		reg, w, ok := gpr(x)
		if !ok || w != 64 {
			return nil, "jump through a register hijack does not model"
		}
		defs := r.reach(j, reg)
		if len(defs) != 1 {
			return nil, fmt.Sprintf("%s has %d reaching definitions", reg, len(defs))
		}
		d := defs[0]
		if d == unknownDef {
			return nil, fmt.Sprintf("%s comes from outside the function", reg)
		}
		da := r.asm(d)
		if args(da) == 2 {
			dst, dw, ok := gpr(da.Args[0])
			if ok && dst == reg && dw == 64 {
				switch da.Op {
				case x86asm.MOV:
					if m, ok := da.Args[1].(x86asm.Mem); ok {
						return r.absolute(j, d, m)
					}
				case x86asm.ADD:
					if src, sw, ok := gpr(da.Args[1]); ok && sw == 64 {
						return r.relative(j, d, reg, src)
					}
				case x86asm.LEA:
					m, ok := da.Args[1].(x86asm.Mem)
					if ok && m.Scale == 1 && m.Disp == 0 && m.Segment == 0 {
						x, xw, ok1 := gpr(m.Base)
						y, yw, ok2 := gpr(m.Index)
						if ok1 && ok2 && xw == 64 && yw == 64 {
							return r.relative(j, d, x, y)
						}
					}
				}
			}
		}
		return nil, fmt.Sprintf("%s is computed at %s, not from a jump table", reg, r.where(d))
	}
	return nil, "jump operand hijack does not model"
}

// absolute resolves a dispatch through 8-byte addresses read by load
// (the jump itself or a mov) from memory operand m.
func (r *resolver) absolute(j, load int, m x86asm.Mem) (*JumpTable, string) {
	idx, iw, ok := gpr(m.Index)
	if !ok || iw != 64 || m.Scale != 8 || m.Segment != 0 {
		return nil, "jump through memory that is not indexed by 8-byte entries"
	}
	lay := &r.s.Insts[load].Layout
	var t addr
	switch {
	case m.Base == 0:
		if lay.DispSize != 4 {
			return nil, "table address is not a relocated displacement"
		}
		sec, off, ok := r.fieldTarget(load, int(lay.DispOff), false)
		if !ok {
			return nil, "table address is not a relocated displacement"
		}
		t = addr{sec, off, -1}
	default:
		base, bw, ok := gpr(m.Base)
		if !ok || bw != 64 || lay.DispSize > 0 && r.hasReloc(load, int(lay.DispOff)) {
			return nil, "jump through memory whose base is not a register holding a table"
		}
		var why string
		if t, why = r.address(load, base, 0); why != "" {
			return nil, why
		}
		t.off += m.Disp
	}
	n, guard, why := r.bound(load, idx)
	if why != "" {
		return nil, why
	}
	entries, why := r.entries(t.sec, t.off, 0, false, int(n)+1)
	if why != "" {
		return nil, why
	}
	return &JumpTable{Jump: j, Load: load, Base: t.def, Guard: guard, Sec: t.sec, Off: uint64(t.off), Entries: entries}, ""
}

// relative resolves a dispatch that adds registers x and y at instruction
// add: one holds a 4-byte entry read with movslq from a table, the other
// the address the entries are relative to.
func (r *resolver) relative(j, add int, x, y effect.Reg) (*JumpTable, string) {
	for _, p := range [2][2]effect.Reg{{x, y}, {y, x}} {
		load, ok := r.entryLoad(add, p[0])
		if !ok {
			continue
		}
		t, idx, at, w := r.indexed(load, 4)
		if w != "" {
			return nil, "entry address: " + w
		}
		rel, w := r.address(add, p[1], 0)
		if w != "" {
			return nil, "relative base: " + w
		}
		if rel.sec != t.sec {
			return nil, "entries read from one section, added to an address in another"
		}
		n, guard, w := r.bound(at, idx)
		if w != "" {
			return nil, w
		}
		entries, w := r.entries(t.sec, t.off, rel.off, true, int(n)+1)
		if w != "" {
			return nil, w
		}
		return &JumpTable{Jump: j, Load: load, Base: t.def, Guard: guard, Sec: t.sec, Off: uint64(t.off),
			Relative: true, RelTo: uint64(rel.off), Entries: entries}, ""
	}
	return nil, fmt.Sprintf("neither %s nor %s holds a sign-extended 4-byte entry", x, y)
}

// entryLoad finds the load of the 4-byte entry that reg holds,
// sign-extended, before instruction i: movslq mem,%reg, or (gcc -O0) mov
// mem,%r32 then cltq or movslq %r32,%reg.
func (r *resolver) entryLoad(i int, reg effect.Reg) (int, bool) {
	defs := r.reach(i, reg)
	if len(defs) != 1 || defs[0] == unknownDef {
		return 0, false
	}
	d := defs[0]
	a := r.asm(d)
	var src effect.Reg
	switch {
	case a.Op == x86asm.CDQE && reg == effect.RAX:
		src = effect.RAX
	case a.Op == x86asm.MOVSXD && args(a) == 2:
		dst, dw, ok := gpr(a.Args[0])
		if !ok || dst != reg || dw != 64 {
			return 0, false
		}
		if _, ok := a.Args[1].(x86asm.Mem); ok {
			return d, a.MemBytes == 4
		}
		s, sw, ok := gpr(a.Args[1])
		if !ok || sw != 32 {
			return 0, false
		}
		src = s
	default:
		return 0, false
	}
	defs = r.reach(d, src)
	if len(defs) != 1 || defs[0] == unknownDef {
		return 0, false
	}
	l := r.asm(defs[0])
	if l.Op != x86asm.MOV || args(l) != 2 || l.MemBytes != 4 {
		return 0, false
	}
	if dst, dw, ok := gpr(l.Args[0]); !ok || dst != src || dw != 32 {
		return 0, false
	}
	if _, ok := l.Args[1].(x86asm.Mem); !ok {
		return 0, false
	}
	return defs[0], true
}

// indexed decodes the memory operand of instruction load as a table
// address plus scale times an index register: (%base,%idx,scale) with the
// base holding the table, or (gcc -O0) (%x,%y) with one holding the table
// and the other defined by lea 0(,%idx,scale). It returns the address of
// entry 0, the index register and the instruction before which the index
// is that register's value.
func (r *resolver) indexed(load, scale int) (addr, effect.Reg, int, string) {
	a := r.asm(load)
	var m x86asm.Mem
	found := false
	for _, arg := range a.Args {
		if mm, ok := arg.(x86asm.Mem); ok {
			m, found = mm, true
		}
	}
	lay := &r.s.Insts[load].Layout
	if !found || m.Segment != 0 || lay.DispSize > 0 && r.hasReloc(load, int(lay.DispOff)) {
		return addr{}, 0, 0, "not a register-indexed table read"
	}
	base, bw, ok1 := gpr(m.Base)
	idx, iw, ok2 := gpr(m.Index)
	if !ok1 || !ok2 || bw != 64 || iw != 64 {
		return addr{}, 0, 0, "not a register-indexed table read"
	}
	if int(m.Scale) == scale {
		t, w := r.address(load, base, 0)
		t.off += m.Disp
		return t, idx, load, w
	}
	if m.Scale != 1 {
		return addr{}, 0, 0, fmt.Sprintf("entries of %d bytes read with scale %d", scale, m.Scale)
	}
	why := ""
	for _, p := range [2][2]effect.Reg{{base, idx}, {idx, base}} {
		t, w := r.address(load, p[0], 0)
		if w != "" {
			why = w
			continue
		}
		defs := r.reach(load, p[1])
		if len(defs) != 1 || defs[0] == unknownDef {
			return addr{}, 0, 0, fmt.Sprintf("%s has %d reaching definitions", p[1], len(defs))
		}
		d := defs[0]
		l := r.asm(d)
		ll := &r.s.Insts[d].Layout
		if l.Op != x86asm.LEA || args(l) != 2 {
			return addr{}, 0, 0, fmt.Sprintf("%s is not a scaled index", p[1])
		}
		dst, dw, ok := gpr(l.Args[0])
		lm, ok2 := l.Args[1].(x86asm.Mem)
		if !ok || !ok2 || dst != p[1] || dw != 64 || lm.Base != 0 || int(lm.Scale) != scale || lm.Disp != 0 ||
			lm.Segment != 0 || ll.DispSize > 0 && r.hasReloc(d, int(ll.DispOff)) {
			return addr{}, 0, 0, fmt.Sprintf("%s is not a scaled index", p[1])
		}
		li, lw, ok := gpr(lm.Index)
		if !ok || lw != 64 {
			return addr{}, 0, 0, fmt.Sprintf("%s is not a scaled index", p[1])
		}
		t.off += m.Disp
		return t, li, d, ""
	}
	return addr{}, 0, 0, why
}

// noteOut records, for the jump being resolved, a table entry that leads
// out of the function (symbol sym plus addend; relative entries count
// from relTo, the entry being at eo): into code of this object that is
// not a function's entry, or any relative entry into code (a jump table's
// case in the .cold part; function pointers are addresses), it makes the
// jump no tail call.
func (r *resolver) noteOut(sym *elfobj.Symbol, addend int64, relative bool, eo, relTo int64) {
	ts := r.ix.o.BySection[int(sym.Shndx)]
	if sym.Shndx == elfobj.ShnUndef || sym.Shndx >= 0xff00 || ts == nil {
		return
	}
	t := int64(sym.Value) + addend
	if relative {
		t += relTo - eo
	}
	ti := -1
	if t >= 0 {
		ti = ts.Find(uint64(t))
	}
	fn := funcOf(ts, ti)
	if relative || fn == nil || int64(ts.Insts[fn.Start].Off) != t || strings.Contains(fn.Name, ".cold") {
		if r.intoCode == nil {
			r.intoCode = make(map[int]bool)
		}
		r.intoCode[r.cur] = true
	}
}

// entries decodes n entries of the table at off in data section sec from
// their relocations: each must lead to an instruction of the function, and
// ibr must have taken it the same way (emit keeps it pointing there).
func (r *resolver) entries(sec uint32, off, relTo int64, relative bool, n int) ([]int, string) {
	f := r.ix.o.File
	size := int64(8)
	if relative {
		size = 4
	}
	ds := f.Sections[sec]
	if off < 0 || ds.Type == elf.SHT_NOBITS || off+int64(n)*size > int64(len(ds.Data)) {
		return nil, fmt.Sprintf("table of %d entries at %s+0x%x does not fit in its section", n, ds.Name, off)
	}
	out := make([]int, 0, n)
	for k := int64(0); k < int64(n); k++ {
		eo := uint64(off + k*size)
		rr, ok := r.ix.rela[sec][eo]
		if !ok || rr.index < 0 {
			return nil, fmt.Sprintf("entry %d of %d at %s+0x%x has no relocation", k, n, ds.Name, eo)
		}
		rel := f.Sections[rr.sec].Relocs[rr.index]
		if int(rel.Sym) >= len(f.Symbols) {
			return nil, fmt.Sprintf("entry %d at %s+0x%x: bad symbol", k, ds.Name, eo)
		}
		sym := &f.Symbols[rel.Sym]
		if sym.Shndx == elfobj.ShnUndef || sym.Shndx != uint32(r.s.Index) {
			r.noteOut(sym, rel.Addend, relative, int64(eo), relTo)
			return nil, fmt.Sprintf("entry %d at %s+0x%x leads out of the function's section", k, ds.Name, eo)
		}
		var t int64
		cr := r.ix.ref[[2]int{rr.sec, rr.index}]
		if relative {
			if rel.Type != elf.R_X86_64_PC32 {
				return nil, fmt.Sprintf("entry %d at %s+0x%x is a %s, not a relative entry", k, ds.Name, eo, rel.Type)
			}
			t = int64(sym.Value) + rel.Addend - int64(eo) + relTo
			if cr == nil || !cr.Table || cr.TableBase != uint64(relTo) {
				return nil, fmt.Sprintf("entry %d at %s+0x%x: ibr did not take it as relative to 0x%x", k, ds.Name, eo, relTo)
			}
		} else {
			if rel.Type != elf.R_X86_64_64 {
				return nil, fmt.Sprintf("entry %d at %s+0x%x is a %s, not an address", k, ds.Name, eo, rel.Type)
			}
			t = int64(sym.Value) + rel.Addend
		}
		ti := -1
		if t >= 0 {
			ti = r.s.Find(uint64(t))
		}
		if ti < r.fn.Start || ti >= r.fn.End || int64(r.s.Insts[ti].Off) != t || r.s.Insts[ti].Kind != ibr.Code {
			r.noteOut(sym, rel.Addend, relative, int64(eo), relTo)
			return nil, fmt.Sprintf("entry %d at %s+0x%x does not lead to an instruction of the function", k, ds.Name, eo)
		}
		if cr == nil || cr.Target != r.s || cr.Inst != ti || cr.Delta != 0 {
			return nil, fmt.Sprintf("entry %d at %s+0x%x: ibr links it elsewhere", k, ds.Name, eo)
		}
		out = append(out, ti)
	}
	return out, ""
}

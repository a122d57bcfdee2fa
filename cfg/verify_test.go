package cfg_test

import (
	"debug/elf"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/ibr"
)

// This file checks cfg's jump tables with code of its own, written apart
// from cfg's resolver and simpler: an instruction-level flow graph in
// which every indirect jump reaches every instruction a relocation leads
// to, reaching definitions on it, and the table's entries read from the
// relocations of its data section until the next place code or data
// refers to. Where the two disagree, one of them is wrong.

// flow is the instruction-level flow graph of one function: preds[i]
// are the instructions control may come from into instruction i (outside
// for the entry, for instructions other code refers to and for those no
// edge reaches, such as landing pads). An indirect jump leads to the
// entries known gives it (tables decoded on a coarser graph), else to
// every instruction data or the function's code refers to.
type flow struct {
	p     *cfg.Program
	depth int // of the calls whose callee's tables are being checked
	o     *ibr.Object
	s     *ibr.Section
	fn    *ibr.Func
	preds map[int][]int
	cold  []*ibr.Func // the function's .cold parts, one node (coldNode)
}

// outside stands for control from outside the function; coldNode for
// its .cold parts, entered by its branches and leaving by branches back.
const (
	outside  = -1
	coldNode = -2
)

func newFlow(p *cfg.Program, depth int, s *ibr.Section, fn *ibr.Func, known map[int][]int) *flow {
	o := p.Obj
	f := &flow{p: p, depth: depth, o: o, s: s, fn: fn, preds: make(map[int][]int)}
	in := func(i int) bool { return i >= fn.Start && i < fn.End }
	add := func(to, from int) {
		if !slices.Contains(f.preds[to], from) {
			f.preds[to] = append(f.preds[to], from)
		}
	}
	// The function's .cold parts (gcc's), taken as one node.
	isCold := func(g *ibr.Func) bool { return g != nil && g != fn && strings.HasPrefix(g.Name, fn.Name+".cold") }
	for _, cs := range o.Code {
		for _, g := range cs.Funcs {
			if isCold(g) {
				f.cold = append(f.cold, g)
			}
		}
	}
	var indirect, taken []int
	for k := range o.Refs {
		r := &o.Refs[k]
		if r.Target != s || r.Delta != 0 || !in(r.Inst) {
			continue
		}
		// Call-frame and debug information refer to code without
		// being a way into it.
		rs := o.File.Sections[r.RelaSec]
		if d := o.File.Sections[rs.Info]; d.Flags&elf.SHF_ALLOC == 0 || d.Name == ".eh_frame" {
			continue
		}
		// What the function's indirect jumps may reach: what data
		// (tables) or its own code refers to. A reference that is
		// neither a table entry nor from its own code lets anything
		// enter there.
		from := o.BySection[int(rs.Info)]
		own := from == s && in(s.Find(rs.Relocs[r.Index].Off))
		if from == nil || own {
			taken = append(taken, r.Inst)
		}
		switch {
		case r.Table || own:
		case from != nil && isCold(from.FuncAt(from.Find(rs.Relocs[r.Index].Off))):
			add(r.Inst, coldNode)
		default:
			add(r.Inst, outside)
		}
	}
	for i := range s.Insts {
		l := s.Insts[i].Link
		if l != nil && in(l.Target) && !in(i) {
			if isCold(s.FuncAt(i)) {
				add(l.Target, coldNode)
			} else {
				add(l.Target, outside)
			}
		}
	}
	// The .cold parts are entered by the function's branches into them;
	// by anything else, from outside.
	for _, g := range f.cold {
		gs := g.Section
		for k := range o.Refs {
			r := &o.Refs[k]
			if r.Target != gs || r.Inst < g.Start || r.Inst >= g.End {
				continue
			}
			rs := o.File.Sections[r.RelaSec]
			if d := o.File.Sections[rs.Info]; d.Flags&elf.SHF_ALLOC == 0 || d.Name == ".eh_frame" {
				continue
			}
			from := o.BySection[int(rs.Info)]
			fi := -1
			if from != nil {
				fi = from.Find(rs.Relocs[r.Index].Off)
			}
			switch {
			case from == s && in(fi):
				add(coldNode, fi)
			case from != nil && from.FuncAt(fi) == g:
			default:
				add(coldNode, outside)
			}
		}
		for i := range gs.Insts {
			l := gs.Insts[i].Link
			if l == nil || l.Target < g.Start || l.Target >= g.End || gs.FuncAt(i) == g {
				continue
			}
			if gs == s && in(i) {
				add(coldNode, i)
			} else {
				add(coldNode, outside)
			}
		}
	}
	for i := fn.Start; i < fn.End; i++ {
		x := &s.Insts[i]
		if x.Kind != ibr.Code {
			continue
		}
		falls := true
		switch s.Asm(i).Op {
		case x86asm.JMP:
			falls = false
			if x.Layout.RelSize == 0 {
				indirect = append(indirect, i)
			}
		case x86asm.RET, x86asm.UD2, x86asm.HLT:
			falls = false
		case x86asm.CALL:
			// exit, abort, __stack_chk_fail...: what follows is the
			// next case, not where the call returns.
			for _, fr := range x.Relocs {
				r := o.File.Sections[fr.Sec].Relocs[fr.Index]
				if fr.Off == int(x.Layout.RelOff) && int(r.Sym) < len(o.File.Symbols) && cfg.NoReturn(o.File.Symbols[r.Sym].Name) {
					falls = false
				}
			}
		}
		if x.Link != nil && x.Link.Kind == ibr.LinkBranch && in(x.Link.Target) {
			add(x.Link.Target, i)
		}
		if falls && i+1 < fn.End {
			add(i+1, i)
		}
	}
	for _, j := range indirect {
		if ts, ok := known[j]; ok {
			for _, t := range ts {
				add(t, j)
			}
			continue
		}
		for _, t := range taken {
			add(t, j)
		}
	}
	add(fn.Start, outside)
	// What no edge reaches but alignment padding (a landing pad, which
	// the unwinder enters) may hold anything.
	for i := fn.Start; i < fn.End; i++ {
		if len(f.preds[i]) == 0 && !padding(s, i) {
			add(i, outside)
		}
	}
	return f
}

func padding(s *ibr.Section, i int) bool {
	if s.Insts[i].Kind != ibr.Code {
		return true
	}
	a := s.Asm(i)
	return a.Op == x86asm.NOP || a.Op == x86asm.XCHG && a.Args[0] == a.Args[1]
}

// writes reports whether instruction i may write register reg: calls
// clobber the caller-saved registers.
func (f *flow) writes(i int, reg effect.Reg) bool {
	if i == coldNode {
		for _, g := range f.cold {
			gs := g.Section
			for k := g.Start; k < g.End; k++ {
				y := &gs.Insts[k]
				if y.Kind != ibr.Code {
					continue
				}
				e := effect.Of(gs.Asm(k), &y.Layout, gs.Bytes(k))
				if !e.Known || (e.Def | e.Partial).Has(reg) {
					return true
				}
				switch e.Ctrl {
				case effect.Call, effect.IndirectCall, effect.IndirectJump, effect.Syscall, effect.Interrupt:
					if effect.CallerSaved.Has(reg) {
						return true
					}
				}
			}
		}
		return false
	}
	x := &f.s.Insts[i]
	if x.Kind != ibr.Code {
		return false
	}
	e := effect.Of(f.s.Asm(i), &x.Layout, f.s.Bytes(i))
	if !e.Known || (e.Def | e.Partial).Has(reg) {
		return true
	}
	if f.s.Asm(i).Op != x86asm.CALL || !effect.CallerSaved.Has(reg) {
		return false
	}
	// A call to a function of the object that neither writes reg nor
	// calls or jumps out leaves reg alone (gcc's -fipa-ra counts on it).
	callee := callee(f.o, f.s, i)
	if callee == nil {
		return true
	}
	cs := callee.Section
	for k := callee.Start; k < callee.End; k++ {
		y := &cs.Insts[k]
		if y.Kind != ibr.Code {
			continue
		}
		ce := effect.Of(cs.Asm(k), &y.Layout, cs.Bytes(k))
		if !ce.Known || (ce.Def | ce.Partial).Has(reg) {
			return true
		}
		switch ce.Ctrl {
		case effect.IndirectJump:
			if !f.staysIn(callee, k) {
				return true
			}
		case effect.Call, effect.IndirectCall, effect.Syscall, effect.Interrupt:
			return true
		case effect.Jump, effect.CondJump:
			if y.Link == nil || y.Link.Kind != ibr.LinkBranch || y.Link.Target < callee.Start || y.Link.Target >= callee.End {
				return true
			}
		}
	}
	return false
}

// staysIn reports whether the indirect jump j of fn is a table dispatch
// within fn: cfg says so and decodeTable agrees.
func (f *flow) staysIn(fn *ibr.Func, j int) bool {
	g := f.p.ByFunc[fn]
	if g == nil || f.depth >= 2 {
		return false
	}
	for _, jt := range g.Tables {
		if jt.Jump == j {
			got, why := decodeTable(f.o, g, jt, newFlow(f.p, f.depth+1, g.Sec, fn, nil))
			return why == "" && slices.Equal(got, jt.Entries)
		}
	}
	return false
}

// callee returns the function of the object that the direct call i
// calls (a resolved branch, or a relocation against its section), or nil.
func callee(o *ibr.Object, s *ibr.Section, i int) *ibr.Func {
	x := &s.Insts[i]
	var cs *ibr.Section
	t := -1
	if x.Link != nil && x.Link.Kind == ibr.LinkBranch {
		cs, t = s, x.Link.Target
	}
	for _, fr := range x.Relocs {
		if fr.Off != int(x.Layout.RelOff) {
			continue
		}
		r := o.File.Sections[fr.Sec].Relocs[fr.Index]
		sym := &o.File.Symbols[r.Sym]
		cs = o.BySection[int(sym.Shndx)]
		if cs == nil || sym.Shndx == 0 || sym.Shndx >= 0xff00 {
			return nil
		}
		a := int64(sym.Value) + r.Addend + int64(x.Len) - int64(fr.Off)
		if a < 0 {
			return nil
		}
		t = cs.Find(uint64(a))
		if t < 0 || t >= len(cs.Insts) || int64(cs.Insts[t].Off) != a {
			return nil
		}
	}
	if cs == nil || t < 0 || t >= len(cs.Insts) {
		return nil
	}
	for _, fn := range cs.Funcs {
		if fn.Start == t {
			return fn
		}
	}
	return nil
}

// defs returns the instructions whose write of reg may reach the point
// before instruction i (outside for a value from outside the function).
func (f *flow) defs(i int, reg effect.Reg) []int {
	var out []int
	seen := make(map[int]bool)
	work := slices.Clone(f.preds[i])
	for len(work) > 0 {
		p := work[len(work)-1]
		work = work[:len(work)-1]
		if p == outside {
			if !slices.Contains(out, outside) {
				out = append(out, outside)
			}
			continue
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		if f.writes(p, reg) {
			out = append(out, p)
			continue
		}
		work = append(work, f.preds[p]...)
	}
	return out
}

// the one definition of reg reaching instruction i, or -1.
func (f *flow) def(i int, reg effect.Reg) int {
	d := f.defs(i, reg)
	if len(d) != 1 {
		return -1
	}
	return d[0]
}

type dataAddr struct {
	sec uint32
	off int64
}

// relocAt returns the data address a relocation on the field at off of
// instruction i designates.
func relocAt(o *ibr.Object, s *ibr.Section, i, off int) (dataAddr, bool) {
	f := o.File
	in := &s.Insts[i]
	for _, fr := range in.Relocs {
		if fr.Off != off {
			continue
		}
		r := f.Sections[fr.Sec].Relocs[fr.Index]
		t := int64(f.Symbols[r.Sym].Value) + r.Addend
		switch ibr.ClassOf(r.Type) {
		case ibr.RelocPC:
			t += int64(in.Len) - int64(off)
		case ibr.RelocAbs:
		default:
			return dataAddr{}, false
		}
		sec := f.Symbols[r.Sym].Shndx
		return dataAddr{sec, t}, o.BySection[int(sec)] == nil && sec != 0 && sec < 0xff00
	}
	return dataAddr{}, false
}

func reg64(a x86asm.Arg) (effect.Reg, bool) {
	x, ok := a.(x86asm.Reg)
	if !ok {
		return 0, false
	}
	r, w, ok := effect.GPR(x)
	return r, ok && w == 8
}

// value returns the data address register reg holds before instruction
// i: each of its definitions is a lea of it, a mov of it as an immediate,
// or a copy of a register holding it.
func (f *flow) value(o *ibr.Object, i int, reg effect.Reg, depth int) (dataAddr, bool) {
	ds := f.defs(i, reg)
	if len(ds) == 0 || depth > 4 {
		return dataAddr{}, false
	}
	var v dataAddr
	for k, d := range ds {
		if d == outside {
			return dataAddr{}, false
		}
		x, ok := f.valueAt(o, d, reg, depth)
		if !ok || k > 0 && x != v {
			return dataAddr{}, false
		}
		v = x
	}
	return v, true
}

func (f *flow) valueAt(o *ibr.Object, d int, reg effect.Reg, depth int) (dataAddr, bool) {
	a := f.s.Asm(d)
	lay := &f.s.Insts[d].Layout
	x, ok := a.Args[0].(x86asm.Reg)
	if !ok {
		return dataAddr{}, false
	}
	dst, w, ok := effect.GPR(x)
	if !ok || dst != reg || w < 4 || x >= x86asm.AH && x <= x86asm.BH {
		return dataAddr{}, false
	}
	switch a.Op {
	case x86asm.LEA:
		if m, ok := a.Args[1].(x86asm.Mem); ok && m.Base == x86asm.RIP && w == 8 {
			return relocAt(o, f.s, d, int(lay.DispOff))
		}
	case x86asm.MOV:
		if _, ok := a.Args[1].(x86asm.Imm); ok && lay.ImmSize >= 4 {
			return relocAt(o, f.s, d, int(lay.ImmOff))
		}
		if src, ok := reg64(a.Args[1]); ok && w == 8 {
			return f.value(o, d, src, depth+1)
		}
	}
	return dataAddr{}, false
}

// memOf returns the memory operand of instruction i.
func memOf(s *ibr.Section, i int) (x86asm.Mem, bool) {
	for _, a := range s.Asm(i).Args {
		if m, ok := a.(x86asm.Mem); ok {
			return m, true
		}
	}
	return x86asm.Mem{}, false
}

// decodeTable decodes, on its own, the table the dispatch jt.Jump goes
// through: the address the entry is read from (the relocated displacement
// of the load, or the one definition of its base register), the address
// relative entries are added to (the one definition of the register added
// to the entry), and the entries, from the data section's relocations,
// from that address on until an entry has no relocation leading into the
// function or another place code or data refers to begins. It returns the
// targets in table order, or why it could not tell; a reason that starts
// with MISMATCH is a disagreement with cfg.
func decodeTable(o *ibr.Object, g *cfg.Graph, jt *cfg.JumpTable, fl *flow) ([]int, string) {
	f, s, fn := o.File, g.Sec, g.Func
	m, ok := memOf(s, jt.Load)
	if !ok {
		return nil, "MISMATCH the load has no memory operand"
	}
	// The load must feed the jump: its register, through an add, lea or
	// sign extension, or the jump itself.
	if jt.Load != jt.Jump && !feeds(fl, jt.Load, jt.Jump) {
		return nil, fmt.Sprintf("MISMATCH the load at 0x%x does not reach the jump", s.Insts[jt.Load].Off)
	}
	var t dataAddr
	switch {
	case m.Base == 0:
		if t, ok = relocAt(o, s, jt.Load, int(s.Insts[jt.Load].Layout.DispOff)); !ok {
			return nil, "no relocation on the displacement"
		}
	default:
		regs := []x86asm.Reg{m.Base}
		if m.Scale == 1 {
			// gcc -O0: (%x,%y), one of them the table.
			regs = append(regs, m.Index)
		}
		found := false
		for _, x := range regs {
			r, ok := reg64(x)
			if !ok {
				continue
			}
			if v, ok := fl.value(o, jt.Load, r, 0); ok {
				t, found = v, true
				break
			}
		}
		if !found {
			return nil, "base register has no one definition with a data address"
		}
	}
	t.off += m.Disp
	if t.sec != jt.Sec || uint64(t.off) != jt.Off {
		return nil, fmt.Sprintf("MISMATCH table at %s+0x%x, cfg says %s+0x%x", f.Sections[t.sec].Name, t.off, f.Sections[jt.Sec].Name, jt.Off)
	}
	relTo := t.off
	if jt.Relative {
		rt, why := addedTo(o, fl, jt.Jump)
		if why != "" {
			return nil, why
		}
		if rt.sec != t.sec || uint64(rt.off) != jt.RelTo {
			return nil, fmt.Sprintf("MISMATCH entries relative to %s+0x%x, cfg says 0x%x", f.Sections[rt.sec].Name, rt.off, jt.RelTo)
		}
		relTo = rt.off
	}
	// Relocations of the table's section, and the places code or data
	// refers to in it.
	relocs := make(map[uint64]int)
	anchors := make(map[uint64]bool)
	for ri, rs := range f.Sections {
		if rs.Type != elf.SHT_RELA {
			continue
		}
		for k, r := range rs.Relocs {
			if rs.Info == t.sec {
				if _, dup := relocs[r.Off]; dup {
					relocs[r.Off] = -1
				} else {
					relocs[r.Off] = ri<<32 | k
				}
			}
			if f.Symbols[r.Sym].Shndx != t.sec || ibr.ClassOf(r.Type) == ibr.RelocOther || rs.Info == t.sec && ibr.ClassOf(r.Type) == ibr.RelocPC {
				continue
			}
			a := int64(f.Symbols[r.Sym].Value) + r.Addend
			if cs := o.BySection[int(rs.Info)]; cs != nil && ibr.ClassOf(r.Type) == ibr.RelocPC {
				if i := cs.Find(r.Off); i >= 0 && i < len(cs.Insts) {
					a += int64(cs.Insts[i].End()) - int64(r.Off)
				}
			}
			anchors[uint64(a)] = true
		}
	}
	size := int64(8)
	if jt.Relative {
		size = 4
	}
	var out []int
	for k := int64(0); ; k++ {
		eo := uint64(t.off + k*size)
		if k > 0 && anchors[eo] {
			break
		}
		ref, ok := relocs[eo]
		if !ok || ref < 0 {
			break
		}
		r := f.Sections[ref>>32].Relocs[ref&(1<<32-1)]
		if f.Symbols[r.Sym].Shndx != uint32(s.Index) {
			break
		}
		a := int64(f.Symbols[r.Sym].Value) + r.Addend
		if jt.Relative {
			if r.Type != elf.R_X86_64_PC32 {
				break
			}
			a += relTo - int64(eo)
		} else if r.Type != elf.R_X86_64_64 {
			break
		}
		if a < 0 {
			break
		}
		i := s.Find(uint64(a))
		if i < fn.Start || i >= fn.End || int64(s.Insts[i].Off) != a {
			break
		}
		out = append(out, i)
	}
	return out, ""
}

// feeds reports whether the value instruction load writes reaches the
// indirect jump j's register through at most a few adds, leas, sign
// extensions and copies, each the one definition of what it reads.
func feeds(fl *flow, load, j int) bool {
	x, ok := fl.s.Asm(j).Args[0].(x86asm.Reg)
	if !ok {
		return false
	}
	r, _, _ := effect.GPR(x)
	type point struct {
		at  int
		reg effect.Reg
	}
	work := []point{{j, r}}
	for n := 0; len(work) > 0 && n < 16; n++ {
		p := work[0]
		work = work[1:]
		d := fl.def(p.at, p.reg)
		if d < 0 {
			continue
		}
		if d == load {
			return true
		}
		a := fl.s.Asm(d)
		switch a.Op {
		case x86asm.ADD, x86asm.MOVSXD, x86asm.MOV:
			if src, ok := a.Args[1].(x86asm.Reg); ok {
				sr, _, _ := effect.GPR(src)
				work = append(work, point{d, sr})
			}
			if a.Op == x86asm.ADD {
				work = append(work, point{d, p.reg})
			}
		case x86asm.CDQE:
			work = append(work, point{d, effect.RAX})
		case x86asm.LEA:
			if m, ok := a.Args[1].(x86asm.Mem); ok {
				for _, y := range []x86asm.Reg{m.Base, m.Index} {
					if yr, ok := reg64(y); ok {
						work = append(work, point{d, yr})
					}
				}
			}
		}
	}
	return false
}

// addedTo returns the data address added to a relative entry before the
// indirect jump j: jmp *%r after add %x,%r or lea (%x,%y),%r, one operand
// of which holds a data address.
func addedTo(o *ibr.Object, fl *flow, j int) (dataAddr, string) {
	x, ok := fl.s.Asm(j).Args[0].(x86asm.Reg)
	if !ok {
		return dataAddr{}, "MISMATCH a relative dispatch that does not jump through a register"
	}
	r, _, _ := effect.GPR(x)
	d := fl.def(j, r)
	if d < 0 {
		return dataAddr{}, "jump register has no one definition"
	}
	a := fl.s.Asm(d)
	var cands []effect.Reg
	switch a.Op {
	case x86asm.ADD:
		cands = append(cands, r)
		if y, ok := reg64(a.Args[1]); ok {
			cands = append(cands, y)
		}
	case x86asm.LEA:
		if m, ok := a.Args[1].(x86asm.Mem); ok {
			for _, y := range []x86asm.Reg{m.Base, m.Index} {
				if yr, ok := reg64(y); ok {
					cands = append(cands, yr)
				}
			}
		}
	}
	for _, c := range cands {
		if v, ok := fl.value(o, d, c, 0); ok {
			return v, ""
		}
	}
	return dataAddr{}, fmt.Sprintf("no register added at 0x%x holds a data address", fl.s.Insts[d].Off)
}

// tally counts what verifyTables saw.
type tally struct {
	funcs, tables, unchecked, unresolved, tail int
}

func (a *tally) add(b tally) {
	a.funcs += b.funcs
	a.tables += b.tables
	a.unchecked += b.unchecked
	a.unresolved += b.unresolved
	a.tail += b.tail
}

func (a tally) String() string {
	return fmt.Sprintf("%d functions, %d jump-table dispatches resolved (%d not checked), %d indirect jumps unresolved (%d as tail calls, %d unknown)",
		a.funcs, a.tables, a.unchecked, a.unresolved, a.tail, a.unresolved-a.tail)
}

// verifyTables checks every resolved table of p against decodeTable and
// the graph: the dispatch's successors are the table's targets; and that
// every unresolved indirect jump leaves its block as an unknown jump or a
// tail call. Tables decodeTable cannot tell are logged, not failed.
func verifyTables(t *testing.T, name string, p *cfg.Program) tally {
	t.Helper()
	var n tally
	for _, g := range p.Graphs {
		n.funcs++
		// Decode on the coarsest graph, then again with the edges of
		// the tables decoded so far, until nothing more decodes.
		known := make(map[int][]int)
		for len(g.Tables) > 0 {
			fl := newFlow(p, 0, g.Sec, g.Func, known)
			more := false
			for _, jt := range g.Tables {
				if _, ok := known[jt.Jump]; ok {
					continue
				}
				if got, why := decodeTable(p.Obj, g, jt, fl); why == "" {
					known[jt.Jump] = got
					more = true
				}
			}
			if !more {
				break
			}
		}
		fl := newFlow(p, 0, g.Sec, g.Func, known)
		for _, jt := range g.Tables {
			n.tables++
			got, why := decodeTable(p.Obj, g, jt, fl)
			where := fmt.Sprintf("%s: %s: jmp at 0x%x", name, g.Func.Name, g.Sec.Insts[jt.Jump].Off)
			switch {
			case strings.HasPrefix(why, "MISMATCH"):
				t.Errorf("%s: %s", where, why)
			case why != "":
				n.unchecked++
				t.Logf("%s: not checked: %s", where, why)
			case !slices.Equal(got, jt.Entries):
				t.Errorf("%s: cfg's table has %d entries %v, its relocations %d %v", where, len(jt.Entries), offsets(g, jt.Entries), len(got), offsets(g, got))
			}
			b := g.BlockOf(jt.Jump)
			if b == nil || !b.Table || b.End-1 != jt.Jump {
				t.Errorf("%s: the jump does not end a block marked as a table dispatch", where)
				continue
			}
			var succ []int
			for _, s := range b.Succs {
				succ = append(succ, s.Start)
			}
			want := slices.Clone(jt.Targets())
			slices.Sort(succ)
			slices.Sort(want)
			if !slices.Equal(succ, want) {
				t.Errorf("%s: successors %v, table targets %v", where, offsets(g, succ), offsets(g, want))
			}
		}
		for _, ij := range g.Indirect {
			n.unresolved++
			if ij.TailCall {
				n.tail++
			}
			b := g.BlockOf(ij.Inst)
			if b == nil || b.Table || b.Exits&(cfg.ExitIndirect|cfg.ExitTailCall) == 0 {
				t.Errorf("%s: %s: unresolved jump at 0x%x leaves the function neither as an unknown jump nor as a tail call", name, g.Func.Name, g.Sec.Insts[ij.Inst].Off)
			}
		}
	}
	return n
}

func offsets(g *cfg.Graph, is []int) []string {
	var out []string
	for _, i := range is {
		out = append(out, fmt.Sprintf("%x", g.Sec.Insts[i].Off))
	}
	return out
}

package kit

import (
	"debug/elf"
	"fmt"

	"golang.org/x/arch/x86/x86asm"

	"hijack/elfobj"
	"hijack/ibr"
	"hijack/snippet"
)

// DispRel returns the relocation of the 32-bit displacement of instruction
// i of s, if it has one, as Address takes it: for a PC-relative type
// (R_X86_64_PC32), the addend counts from the end of the instruction.
func DispRel(f *elfobj.File, s *ibr.Section, i int) (Rel, bool) {
	in := &s.Insts[i]
	if in.Layout.DispSize != 4 {
		return Rel{}, false
	}
	for _, fr := range in.Relocs {
		if fr.Off != int(in.Layout.DispOff) {
			continue
		}
		r := f.Sections[fr.Sec].Relocs[fr.Index]
		rel := Rel{Type: r.Type, Sym: r.Sym, Addend: r.Addend}
		if ibr.ClassOf(r.Type) == ibr.RelocPC {
			rel.Addend += int64(in.Len) - int64(fr.Off)
		}
		return rel, true
	}
	return Rel{}, false
}

// Address returns the memory operand m of an instrumented instruction as
// inserted code can use it to compute the same address (with LeaQ), plus
// extra bytes. shift is how far the inserted code moved rsp (Save's
// result), which an rsp-based address makes up for. m's segment is left
// to the caller (lea ignores it). rel is the relocation of m's
// displacement (DispRel finds it; the zero Rel is none); link is the
// section place a RIP-relative operand without relocation refers to. Only
// 64-bit addresses are supported.
func (b *Builder) Address(m x86asm.Mem, rel Rel, link *ibr.Link, shift int32, extra int64) (snippet.Operand, error) {
	base, ok1 := AsmReg(m.Base)
	index, ok2 := AsmReg(m.Index)
	switch {
	case m.Base == x86asm.RIP && rel.Type == elf.R_X86_64_PC32:
		return b.RIP(Indexed(rel.Sym), rel.Addend+extra), nil
	case m.Base == x86asm.RIP && rel.Type != 0:
		return snippet.Operand{}, fmt.Errorf("a RIP-relative address relocated with %v", rel.Type)
	case m.Base == x86asm.RIP && link != nil:
		return b.RIP(Link(link.Target, link.Delta), extra), nil
	case !ok1 || !ok2:
		return snippet.Operand{}, fmt.Errorf("unsupported address registers %v %v (32-bit addressing?)", m.Base, m.Index)
	}
	if base == snippet.RSP {
		extra += int64(shift)
	}
	var op snippet.Operand
	if rel.Type != 0 {
		op = b.Abs(Indexed(rel.Sym), rel.Type, rel.Addend+extra)
		if base != snippet.NoReg {
			op = op.Base(base)
		}
	} else {
		disp := m.Disp + extra
		if disp != int64(int32(disp)) {
			return snippet.Operand{}, fmt.Errorf("displacement %#x out of range", disp)
		}
		op = snippet.Mem(base, int32(disp))
	}
	if index != snippet.NoReg {
		op = op.Index(index, m.Scale)
	}
	return op, nil
}

// Rel is the relocation of an instrumented instruction's displacement.
type Rel struct {
	Type elf.R_X86_64 // 0: none
	Sym  uint32       // symbol index
	// Addend is the target's offset from the symbol: for a PC-relative
	// field, the ELF addend plus the distance from the field to the end
	// of the instruction.
	Addend int64
}

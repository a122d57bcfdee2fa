package ibr

import (
	"cmp"
	"debug/elf"
	"slices"

	"hijack/elfobj"
)

// CodeRef is a relocation, in any section, whose target is a location in a
// code section. When code moves, emit recomputes the addend so that the
// relocation refers to the same instruction.
type CodeRef struct {
	RelaSec int // ELF index of the SHT_RELA section
	Index   int // index of the entry in its Relocs
	Target  *Section
	// Inst is the index of the target in Target.Insts (len(Insts) for the
	// end of the section); Delta is the offset from its start (non-zero
	// only inside data or padding).
	Inst  int
	Delta int64
	// Adjust is the part of the target location that symbol+addend does
	// not express: target = sym.Value + Addend + Adjust. A PC-relative
	// field in code counts from the end of its instruction (Adjust = end -
	// field), an entry of a PC-relative jump table from the table's base
	// (Adjust = base - field).
	Adjust int64
	// Table is set for an entry of a PC-relative jump table; TableBase is
	// then the table's offset in its section.
	Table     bool
	TableBase uint64
}

// RelocClass groups relocation types by how their target is computed.
type RelocClass uint8

const (
	// RelocOther: the target is not a location found by symbol+addend
	// (GOT, TLS, size relocations); moving code never changes the addend.
	RelocOther RelocClass = iota
	// RelocAbs: the target is symbol+addend.
	RelocAbs
	// RelocPC: the field holds symbol+addend-field; where the target is
	// depends on what the PC-relative value is added to.
	RelocPC
)

// ClassOf returns the class of relocation type t.
func ClassOf(t elf.R_X86_64) RelocClass {
	switch t {
	case elf.R_X86_64_64, elf.R_X86_64_32, elf.R_X86_64_32S, elf.R_X86_64_16, elf.R_X86_64_8, elf.R_X86_64_GOTOFF64:
		return RelocAbs
	case elf.R_X86_64_PC32, elf.R_X86_64_PLT32, elf.R_X86_64_PC64, elf.R_X86_64_PC16, elf.R_X86_64_PC8:
		return RelocPC
	}
	return RelocOther
}

type anchor struct {
	off uint64
	sec *Section // code section whose instruction refers to off
	fn  int32    // function of that instruction, or -1
}

// fieldEnd returns the end of the instruction holding a field at off in a
// code section, for PC-relative arithmetic. Where the section could not be
// decoded, the field is assumed to end the instruction.
func (s *Section) fieldEnd(off uint64, w int) uint64 {
	if i := s.Find(off); i >= 0 && i < len(s.Insts) && s.Insts[i].Kind == Code {
		return uint64(s.Insts[i].End())
	}
	return off + uint64(w)
}

// resolveRefs finds every relocation whose target lies in code, links it to
// its target instruction, and marks sections whose references it cannot
// account for.
func (o *Object) resolveRefs(relocs map[int][]int) error {
	f := o.File
	// Anchors: places in data sections that code refers to, such as the
	// base of a jump table.
	anchors := make(map[uint32][]anchor)
	for _, s := range o.Code {
		for _, ri := range relocs[s.Index] {
			for _, r := range f.Sections[ri].Relocs {
				sym := &f.Symbols[r.Sym]
				if sym.Shndx == elfobj.ShnUndef || sym.Shndx >= 0xffff0000 || o.BySection[int(sym.Shndx)] != nil {
					continue
				}
				t := int64(sym.Value) + r.Addend
				switch ClassOf(r.Type) {
				case RelocPC:
					t += int64(s.fieldEnd(r.Off, elfobj.RelocSize(r.Type)) - r.Off)
				case RelocAbs:
				default:
					continue
				}
				fn := int32(-1)
				if i := s.Find(r.Off); i >= 0 && i < len(s.Insts) {
					fn = s.Insts[i].Func
				}
				anchors[sym.Shndx] = append(anchors[sym.Shndx], anchor{uint64(t), s, fn})
			}
		}
	}
	for _, a := range anchors {
		slices.SortFunc(a, func(x, y anchor) int { return cmp.Compare(x.off, y.off) })
	}

	for ri, rs := range f.Sections {
		if rs.Type != elf.SHT_RELA {
			continue
		}
		from := o.BySection[int(rs.Info)]
		for k, r := range rs.Relocs {
			sym := &f.Symbols[r.Sym]
			if sym.Shndx == elfobj.ShnUndef || sym.Shndx >= 0xffff0000 {
				continue
			}
			c := o.BySection[int(sym.Shndx)]
			if c == nil {
				continue
			}
			class := ClassOf(r.Type)
			if class == RelocOther {
				if sym.Type() == elf.STT_SECTION && r.Type != elf.R_X86_64_NONE && r.Type != elf.R_X86_64_SIZE32 && r.Type != elf.R_X86_64_SIZE64 {
					c.fail("relocation %s against section %s in %s cannot follow moved code", r.Type, c.Elf.Name, rs.Name)
				}
				continue
			}
			ref := CodeRef{RelaSec: ri, Index: k, Target: c}
			if class == RelocPC {
				if from != nil {
					ref.Adjust = int64(from.fieldEnd(r.Off, elfobj.RelocSize(r.Type)) - r.Off)
				} else if base, ok := tableBase(anchors[rs.Info], c, int64(sym.Value)+r.Addend, r.Off); ok {
					ref.Adjust, ref.Table, ref.TableBase = int64(base)-int64(r.Off), true, base
				}
			}
			t := int64(sym.Value) + r.Addend + ref.Adjust
			ti := -1
			if t >= 0 {
				ti = c.Find(uint64(t))
			}
			if ti < 0 {
				c.fail("relocation %s in %s at 0x%x refers to 0x%x outside %s", r.Type, rs.Name, r.Off, t, c.Elf.Name)
				continue
			}
			ref.Inst = ti
			if ti < len(c.Insts) {
				tgt := &c.Insts[ti]
				ref.Delta = t - int64(tgt.Off)
				if tgt.Kind == Code && ref.Delta != 0 && !debugInfo(f, rs) {
					c.fail("relocation %s in %s at 0x%x refers to %s, inside an instruction", r.Type, rs.Name, r.Off, c.Where(uint64(t)))
					continue
				}
				if from != nil && tgt.Kind == Code && !c.isFuncStart(ti) && !from.isBranchField(r.Off) {
					c.fail("code at %s takes the address of the label %s inside a function (computed goto?): label differences may be folded into constants", from.Where(r.Off), c.Where(uint64(t)))
					continue
				}
			}
			o.Refs = append(o.Refs, ref)
		}
	}
	return nil
}

// debugInfo reports whether relocation section rs applies to a section
// that is not loaded (debug information): its references may point inside
// an instruction (gcc's DWARF 4 location lists end ranges at the last byte
// of a call), and keep that offset within the instruction when code moves.
func debugInfo(f *elfobj.File, rs *elfobj.Section) bool {
	return int(rs.Info) < len(f.Sections) && f.Sections[rs.Info].Flags&elf.SHF_ALLOC == 0
}

// tableBase finds the base of the PC-relative jump table that an entry at
// off (with symbol+addend sa) belongs to: the nearest place at or below off
// that code refers to, provided the entry then leads into the function that
// refers to it. Otherwise the entry is relative to itself (as in .eh_frame
// or `.long f - .`).
func tableBase(as []anchor, c *Section, sa int64, off uint64) (uint64, bool) {
	i, _ := slices.BinarySearchFunc(as, off+1, func(a anchor, v uint64) int { return cmp.Compare(a.off, v) })
	if i == 0 {
		return 0, false
	}
	a := as[i-1]
	t := sa - int64(off-a.off)
	if t < 0 {
		return 0, false
	}
	ti := c.Find(uint64(t))
	if ti < 0 || ti >= len(c.Insts) || c.Insts[ti].Kind != Code || int64(c.Insts[ti].Off) != t {
		return 0, false
	}
	if a.sec == c && a.fn >= 0 {
		// A table's entries lead into the function that loads it.
		if fn := c.Funcs[a.fn]; ti < fn.Start || ti >= fn.End {
			return 0, false
		}
	}
	return a.off, true
}

// isBranchField reports whether off is the displacement of a branch.
func (s *Section) isBranchField(off uint64) bool {
	i := s.Find(off)
	if i < 0 || i >= len(s.Insts) || s.Insts[i].Kind != Code {
		return false
	}
	l := &s.Insts[i].Layout
	return l.RelSize > 0 && uint64(s.Insts[i].Off)+uint64(l.RelOff) == off
}

// Package ibr builds hijack's intermediate binary representation (IBR) of a
// relocatable object: every code section decoded into a chain of
// instructions, every relocation attached to the instruction field it
// patches, and every reference into code, whether a relocation from any
// section or a branch or RIP-relative operand the assembler resolved, turned
// into a link to the target instruction. Offsets are computed again only
// when the object is written (package emit), so code can be inserted
// anywhere.
//
// Build is conservative: where it cannot prove that it understood a code
// section completely (bytes that belong to no function, an undecodable
// instruction, a branch into the middle of an instruction, a relocation on
// something that is not an instruction field, code whose label differences
// the assembler may have folded into constants) the section is marked not
// rewritable, with the reason, and insertions into it are refused. Such a
// section is written back unchanged.
package ibr

import (
	"debug/elf"
	"fmt"
	"slices"

	"golang.org/x/arch/x86/x86asm"

	"hijack/elfobj"
	"hijack/ibr/x86len"
)

// Kind says what an Inst holds.
type Kind uint8

const (
	// Code is a decoded instruction.
	Code Kind = iota
	// Data is bytes inside a code section that are not code (an
	// STT_OBJECT range, a constant table). They move as a whole and keep
	// their alignment.
	Data
	// Pad is alignment padding between functions. It is dropped and made
	// again when the section is laid out.
	Pad
)

func (k Kind) String() string {
	switch k {
	case Code:
		return "code"
	case Data:
		return "data"
	case Pad:
		return "pad"
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Object is the IBR of one relocatable object.
type Object struct {
	File *elfobj.File
	// Name is the object's file name (or archive(member)), for messages
	// and for what presets record about it.
	Name string
	// Executable: who compiled the object says it is for an executable
	// (or a static archive for executables), not a shared library, which
	// its relocations may not show; set by the caller (rewrite.Options).
	Executable bool
	// Code holds one entry per code section with contents, in section order.
	Code []*Section
	// BySection maps an ELF section index to its code section, if any.
	BySection map[int]*Section
	// Funcs lists every function of every code section, in section and
	// address order.
	Funcs []*Func
	// Refs lists every relocation, in any section, whose target lies in a
	// code section: the links emit uses to keep them pointing at the same
	// instruction after code moves.
	Refs []CodeRef
}

// Section is one decoded code section.
type Section struct {
	Index int // ELF section index
	Elf   *elfobj.Section
	// Insts is the instruction chain, in address order, covering the whole
	// section without gaps.
	Insts []Inst
	Funcs []*Func
	// Problem is empty when the section is understood completely and may be
	// rewritten; otherwise it says why not, and the section is left as is.
	Problem string
	// Insertions counts instructions with code inserted before them.
	Insertions int

	// asm holds the x86asm decoding of every instruction, made on first
	// use: moving code needs only the layouts, analyses need semantics.
	asm []x86asm.Inst
	// taken holds the code on the taken paths of conditional jumps, by
	// instruction (InsertTaken): few, so not a field of every Inst.
	taken map[int]*takenPath
	// stackShift holds what ShiftStack added to the displacements of
	// rsp-based operands, by instruction: few, so not a field of every
	// Inst.
	stackShift map[int]int32
}

// Asm returns the x86asm decoding of instruction i. Op is 0 when x86asm
// cannot decode it or it is not an instruction (data, padding, a split-off
// prefix): the instruction is still moved correctly, but analyses must
// treat it as unknown.
func (s *Section) Asm(i int) *x86asm.Inst {
	if s.asm == nil {
		s.asm = make([]x86asm.Inst, len(s.Insts))
		for k := range s.Insts {
			in := &s.Insts[k]
			if in.Kind == Code && in.Flags&Prefix == 0 {
				s.asm[k] = semantics(s.Elf.Data[in.Off:in.End()], &in.Layout)
			}
		}
	}
	return &s.asm[i]
}

// Rewritable reports whether code may be inserted into the section.
func (s *Section) Rewritable() bool { return s.Problem == "" }

// Inst is one element of the instruction chain. A section holds one per
// instruction (about one per 4 bytes of code), so the fields are ordered
// to pack (96 bytes): the chain is most of the rewriter's memory.
type Inst struct {
	Off uint32 // offset in the original section
	Len uint32 // length of the original bytes
	// Func is the index in Section.Funcs of the function the instruction
	// belongs to, or -1.
	Func int32
	// nBefore is how many of inserted come before the instruction.
	nBefore uint32
	Kind    Kind
	// Flags mark the split-prefix idiom, see Prefix and Glued.
	Flags Flags
	// Layout gives the position of every field of a Code instruction.
	Layout x86len.Layout
	// Relocs are the relocations whose field lies in this instruction.
	Relocs []FieldReloc
	// Link is set for a branch or a RIP-relative operand whose
	// displacement the assembler resolved without a relocation.
	Link *Link
	// inserted holds the code inserted before the instruction (the first
	// nBefore), then the code inserted after it: one slice for both,
	// since most instructions get neither and few get both.
	inserted []*Snippet
}

// Before returns the code inserted before the instruction, in order.
// Control that reaches the instruction (fall-through, branches, symbols,
// jump tables, landing pads) reaches the inserted code first.
func (in *Inst) Before() []*Snippet { return in.inserted[:in.nBefore:in.nBefore] }

// After returns the code inserted after the instruction, in order, run
// only when control falls through from it to the next element (branches
// to the next element skip it): code on a fall-through edge.
func (in *Inst) After() []*Snippet { return in.inserted[in.nBefore:] }

// Inserted returns all the code inserted at the instruction: Before, then
// After.
func (in *Inst) Inserted() []*Snippet { return in.inserted }

// Flags describe unusual elements of the chain.
type Flags uint8

const (
	// Prefix marks legacy prefix bytes split off the instruction after
	// them because a branch targets that instruction directly, as in
	// glibc's "je 1f; lock; 1: cmpxchg" (skip the lock when
	// single-threaded). The prefix applies to the next element.
	Prefix Flags = 1 << iota
	// Glued marks an instruction that must follow the element before it
	// directly: nothing may be inserted between them. It is the
	// instruction after a Prefix (the prefix would apply to inserted
	// code), and the call after a dynamic TLS address load (the linker
	// relaxes the two as one sequence).
	Glued
)

// InsertAfter inserts code after instruction i, on the fall-through path
// to the next element only. Code inserted earlier runs first. The caller
// must know that i can fall through; i must not be a prefix glued to the
// next instruction.
func (s *Section) InsertAfter(i int, sn *Snippet) error {
	if !s.Rewritable() {
		return fmt.Errorf("section %s is not rewritable: %s", s.Elf.Name, s.Problem)
	}
	if i < 0 || i+1 >= len(s.Insts) || s.Insts[i].Kind != Code || s.Insts[i].Flags&Prefix != 0 {
		return fmt.Errorf("section %s: cannot insert after element %d", s.Elf.Name, i)
	}
	if s.Insts[i+1].Flags&Glued != 0 {
		return fmt.Errorf("%s: cannot insert between an instruction and the one glued to it", s.Where(uint64(s.Insts[i].Off)))
	}
	if err := s.checkSnippet(i, sn); err != nil {
		return err
	}
	in := &s.Insts[i]
	if len(in.inserted) == 0 {
		s.Insertions++
	}
	in.inserted = append(in.inserted, sn)
	return nil
}

// CanInsertAfter reports whether code may be inserted after instruction i
// (on its fall-through path): i is an instruction, not a prefix, and the
// next one is not glued to it. Whether i falls through is the caller's to
// know.
func (s *Section) CanInsertAfter(i int) bool {
	return s.Rewritable() && i >= 0 && i+1 < len(s.Insts) && s.Insts[i].Kind == Code &&
		s.Insts[i].Flags&Prefix == 0 && s.Insts[i+1].Flags&Glued == 0
}

// CanInsertBefore reports whether code may be inserted before instruction
// i.
func (s *Section) CanInsertBefore(i int) bool {
	return s.Rewritable() && i >= 0 && i < len(s.Insts) && s.Insts[i].Kind == Code && s.Insts[i].Flags&Glued == 0
}

// FieldReloc is a relocation attached to the field it patches.
type FieldReloc struct {
	Index int // index in the relocation section's Relocs
	Sec   int // ELF index of the SHT_RELA section
	Off   int // offset of the field from the instruction start
	Size  int // width of the field
}

// LinkKind says which field of an instruction a Link patches.
type LinkKind uint8

const (
	// LinkBranch is the rel8/rel32 displacement of a jump, call, loop or
	// xbegin.
	LinkBranch LinkKind = iota
	// LinkRIP is the disp32 of a RIP-relative memory operand.
	LinkRIP
)

// Link is a PC-relative reference the assembler resolved inside one section.
type Link struct {
	Kind LinkKind
	// Target is the index in Section.Insts of the instruction referred to;
	// len(Insts) means the end of the section.
	Target int
	// Delta is the offset of the referenced byte from the target's start;
	// it is non-zero only for references into Data.
	Delta int64
}

// Func is a function: a range of the instruction chain starting at an
// STT_FUNC symbol (or an untyped label that starts code).
type Func struct {
	Name    string
	Sym     uint32 // symbol index
	Section *Section
	// Start and End delimit the function's instructions in Section.Insts.
	Start, End int
}

// Snippet is code inserted before an instruction, with its own relocations
// and links.
type Snippet struct {
	Code   []byte
	Relocs []SnippetReloc
	// Links are 32-bit PC-relative fields that refer to an element of the
	// same section (a RIP-relative operand copied from the instruction the
	// snippet instruments, a jump to an original instruction) or to the
	// snippet's other part: emit resolves them after layout, without
	// relocations.
	Links []SnippetLink
	// Cold, when not nil, is the snippet's out-of-line part: code that
	// runs rarely (a miss path), which emit places after the last element
	// of the function the snippet is inserted into (after the section's
	// last one outside functions), so that the code that runs often stays
	// dense in the instruction cache and its hit path has no taken jump.
	// The two parts reach each other only through links (LinkHot,
	// LinkCold); control never falls into or out of the cold part. A
	// cold part has no cold part of its own.
	Cold *Snippet
}

// SnippetReloc is a relocation inside a Snippet. The symbol is SymIndex
// when non-zero, else the symbol named Sym; emit adds an undefined global
// symbol of that name when the object has none.
type SnippetReloc struct {
	Off      int
	Type     elf.R_X86_64
	Sym      string
	SymIndex uint32
	Addend   int64
}

// SnippetLink is a PC-relative disp32 at Off in a snippet, counted from End
// (the end of the snippet instruction that holds it), referring to Delta
// bytes after the start of instruction Target of the section. A Target
// that is an instruction's start (Delta 0) means the start of the code
// inserted before it, as for branches. With To set, Delta counts from the
// start of a part of the same snippet instead, and Target is unused.
type SnippetLink struct {
	Off, End int
	Target   int
	Delta    int64
	To       LinkTo
}

// LinkTo says what a SnippetLink's Delta counts from.
type LinkTo uint8

const (
	// LinkInst: the start of instruction Target.
	LinkInst LinkTo = iota
	// LinkHot: the start of the snippet whose Cold part holds the link
	// (Delta up to its length: the end is where the code after it
	// starts).
	LinkHot
	// LinkCold: the start of the Cold part of the snippet that holds the
	// link (in its hot part, or in the cold part itself).
	LinkCold
)

// End returns the offset just past the instruction in the original section.
func (in *Inst) End() uint32 { return in.Off + in.Len }

// Bytes returns the original bytes of the instruction.
func (s *Section) Bytes(i int) []byte {
	in := &s.Insts[i]
	return s.Elf.Data[in.Off:in.End()]
}

// Find returns the index of the instruction containing offset off, or
// len(Insts) when off is the end of the section, or -1 when off is beyond
// it.
func (s *Section) Find(off uint64) int {
	n := len(s.Insts)
	if off == uint64(len(s.Elf.Data)) {
		return n
	}
	if off > uint64(len(s.Elf.Data)) {
		return -1
	}
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if uint64(s.Insts[m].End()) <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// InsertBefore inserts code before instruction i of the section. Code
// inserted earlier runs first.
func (s *Section) InsertBefore(i int, sn *Snippet) error {
	if !s.Rewritable() {
		return fmt.Errorf("section %s is not rewritable: %s", s.Elf.Name, s.Problem)
	}
	if i < 0 || i >= len(s.Insts) || s.Insts[i].Kind != Code {
		return fmt.Errorf("section %s: no instruction at index %d", s.Elf.Name, i)
	}
	if s.Insts[i].Flags&Glued != 0 {
		return fmt.Errorf("%s: cannot insert between a prefix and its instruction", s.Where(uint64(s.Insts[i].Off)))
	}
	if err := s.checkSnippet(i, sn); err != nil {
		return err
	}
	in := &s.Insts[i]
	if len(in.inserted) == 0 {
		s.Insertions++
	}
	in.inserted = slices.Insert(in.inserted, int(in.nBefore), sn)
	in.nBefore++
	return nil
}

// checkSnippet validates the relocations and links of code to insert at
// instruction i.
func (s *Section) checkSnippet(i int, sn *Snippet) error {
	if sn.Cold != nil && sn.Cold.Cold != nil {
		return fmt.Errorf("section %s+0x%x: inserted code has a cold part with a cold part", s.Elf.Name, s.Insts[i].Off)
	}
	for _, part := range [2]*Snippet{sn, sn.Cold} {
		if part == nil {
			continue
		}
		for _, r := range part.Relocs {
			w := elfobj.RelocSize(r.Type)
			if w < 0 || r.Off < 0 || r.Off+w > len(part.Code) {
				return fmt.Errorf("section %s+0x%x: inserted code has a bad relocation %s at %d", s.Elf.Name, s.Insts[i].Off, r.Type, r.Off)
			}
		}
	}
	return s.checkLinks(i, sn, nil)
}

// checkLinks validates the links of sn, the cold part of hot when hot is
// not nil.
func (s *Section) checkLinks(i int, sn, hot *Snippet) error {
	if hot == nil && sn.Cold != nil {
		if err := s.checkLinks(i, sn.Cold, sn); err != nil {
			return err
		}
	}
	for _, l := range sn.Links {
		ok := l.Off >= 0 && l.Off+4 <= l.End && l.End <= len(sn.Code)
		switch l.To {
		case LinkInst:
			ok = ok && l.Target >= 0 && l.Target <= len(s.Insts)
		case LinkHot:
			ok = ok && hot != nil && l.Delta >= 0 && l.Delta <= int64(len(hot.Code))
		case LinkCold:
			cold := sn.Cold // (from the hot part; else within the cold part itself)
			if hot != nil {
				cold = sn
			}
			ok = ok && cold != nil && l.Delta >= 0 && l.Delta < int64(len(cold.Code))
		default:
			ok = false
		}
		if !ok {
			return fmt.Errorf("section %s+0x%x: inserted code has a bad link at %d", s.Elf.Name, s.Insts[i].Off, l.Off)
		}
	}
	return nil
}

package elfobj

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"strings"
)

// ErrNotRelocatable is wrapped by the error Read returns for executables and
// shared objects, so that callers can give users the right advice.
var ErrNotRelocatable = errors.New("hijack rewrites relocatable objects: pass the .o files before linking")

// File is an ELF64 x86-64 relocatable object.
type File struct {
	// Ident is e_ident as read (OS ABI and ABI version are kept).
	Ident   [elf.EI_NIDENT]byte
	Version uint32 // e_version
	Flags   uint32 // e_flags

	// Sections are in section-header order; Sections[0] is the null section.
	Sections []*Section
	// ShStrNdx is the index of the section-name string table.
	ShStrNdx int

	// Symbols is the content of the SHT_SYMTAB section (index SymtabNdx),
	// including the null symbol at index 0. Relocations refer to symbols by
	// their index in this slice.
	Symbols   []Symbol
	SymtabNdx int // 0 if the object has no symbol table

	// MaxSize bounds the size of the object Write produces; 0 means no
	// bound. Read sets it to OutputLimit of the input's size; code that
	// adds bytes of its own (inserted code, new sections) raises it by as
	// much. Write fails with ErrTooLarge rather than allocate past it, so
	// that a size or alignment nobody validated cannot exhaust memory.
	MaxSize uint64
}

// MaxGrowth and GrowthPlus bound what rewriting may add to an object
// besides the bytes it inserts: re-encoded branches (2 -> 6 bytes), call
// frame and line program advances that no longer fit one byte (1 -> up to
// 11), padding made again before functions (at most 15 bytes each). Real
// objects grow by less than 1.2x this way (rewrite's TestGrowth: libz.a
// members and the test corpus, every preset); see OutputLimit.
const (
	MaxGrowth  = 16
	GrowthPlus = 1 << 20
)

// OutputLimit returns the initial MaxSize for an input of n bytes:
// MaxGrowth times n plus GrowthPlus.
func OutputLimit(n int) uint64 { return MaxGrowth*uint64(n) + GrowthPlus }

// ErrTooLarge is wrapped by the error Write returns when the object would
// exceed File.MaxSize.
var ErrTooLarge = fmt.Errorf("the rewritten object would exceed its size limit (%dx the input plus the inserted code)", MaxGrowth)

// Section is one section of a File.
type Section struct {
	Name    string
	NameOff uint32 // offset of Name in the section-name string table
	Type    elf.SectionType
	Flags   elf.SectionFlag
	Addr    uint64
	Link    uint32
	Info    uint32
	Align   uint64
	Entsize uint64

	// Data is the section's contents. It is nil for SHT_NOBITS sections,
	// whose size is Size. For SHT_SYMTAB, SHT_SYMTAB_SHNDX and SHT_RELA
	// sections Data is ignored by Write: they are generated from
	// File.Symbols and Relocs.
	Data []byte
	// Size is the size of a SHT_NOBITS section; for other sections Write
	// uses len(Data) (or the generated table size).
	Size uint64

	// Relocs holds the parsed entries of a SHT_RELA section. The section
	// they apply to is Info, the symbol table is Link.
	Relocs []Rela
}

// Rela is one relocation entry of a SHT_RELA section.
type Rela struct {
	Off    uint64       // r_offset: where in the target section the field lies
	Type   elf.R_X86_64 // relocation type
	Sym    uint32       // index into File.Symbols
	Addend int64
}

// Target returns the section and offset relocation r designates: its
// symbol's section and value plus the addend. A symbol not defined in a
// section of this object (undefined, absolute, common) or a target before
// the section's start is an error.
func (f *File) Target(r Rela) (sec int, off uint64, err error) {
	sym := &f.Symbols[r.Sym]
	if sym.Shndx == ShnUndef || sym.Shndx >= 0xffff0000 {
		return 0, 0, fmt.Errorf("relocation against %q, which is not defined in this object", sym.Name)
	}
	t := int64(sym.Value) + r.Addend
	if t < 0 {
		return 0, 0, fmt.Errorf("relocation against %q refers before its section", sym.Name)
	}
	return int(sym.Shndx), uint64(t), nil
}

// Symbol is one entry of the symbol table.
type Symbol struct {
	Name    string
	NameOff uint32 // offset of Name in the symbol string table
	Info    byte   // binding << 4 | type
	Other   byte   // visibility
	// Shndx is the section index the symbol is defined in (extended
	// indices are resolved), or ShnUndef, ShnAbs or ShnCommon (or another
	// reserved index, as 0xffff0000|SHN_xxx).
	Shndx uint32
	Value uint64
	Size  uint64
}

// Bind returns the symbol's binding.
func (s *Symbol) Bind() elf.SymBind { return elf.ST_BIND(s.Info) }

// Type returns the symbol's type.
func (s *Symbol) Type() elf.SymType { return elf.ST_TYPE(s.Info) }

// IsDefinedIn reports whether the symbol is defined in section ndx.
func (s *Symbol) IsDefinedIn(ndx int) bool {
	return ndx > 0 && s.Shndx == uint32(ndx) && !isSpecialShndx(s.Shndx)
}

// Reserved section indices as they appear in Symbol.Shndx. They lie outside
// the range of real (possibly extended) section indices.
const (
	ShnUndef  uint32 = 0
	ShnAbs    uint32 = 0xffff0000 | uint32(elf.SHN_ABS)
	ShnCommon uint32 = 0xffff0000 | uint32(elf.SHN_COMMON)
)

func isSpecialShndx(x uint32) bool { return x == ShnUndef || x >= 0xffff0000 }

// IsCode reports whether the section holds executable code.
func (s *Section) IsCode() bool {
	return s.Flags&elf.SHF_EXECINSTR != 0 && s.Type == elf.SHT_PROGBITS
}

// Len returns the size of the section's contents.
func (s *Section) Len() uint64 {
	if s.Type == elf.SHT_NOBITS {
		return s.Size
	}
	return uint64(len(s.Data))
}

// RelocSections returns, for every section index, the indices of the
// SHT_RELA sections that apply to it.
func (f *File) RelocSections() map[int][]int {
	m := make(map[int][]int)
	for i, s := range f.Sections {
		if s.Type == elf.SHT_RELA {
			m[int(s.Info)] = append(m[int(s.Info)], i)
		}
	}
	return m
}

// SectionName returns a printable name for section ndx, for messages.
func (f *File) SectionName(ndx int) string {
	if ndx > 0 && ndx < len(f.Sections) {
		return f.Sections[ndx].Name
	}
	return fmt.Sprintf("section#%d", ndx)
}

// AddSection appends a section, entering its name into the section-name
// string table, and returns its index. Appending keeps every existing index
// valid.
func (f *File) AddSection(s *Section) int {
	shstr := f.Sections[f.ShStrNdx]
	s.NameOff = uint32(len(shstr.Data))
	shstr.Data = append(append(shstr.Data, s.Name...), 0)
	f.Sections = append(f.Sections, s)
	return len(f.Sections) - 1
}

// AddSymbol adds a symbol and returns its index. Global and weak symbols are
// appended at the end of the table. Local symbols must precede all global
// ones in ELF, so a local symbol is inserted after the last local one and
// every relocation and group that refers to a later symbol is renumbered.
func (f *File) AddSymbol(sym Symbol) uint32 {
	strtab := f.Sections[f.Sections[f.SymtabNdx].Link]
	sym.NameOff = 0
	if sym.Name != "" {
		sym.NameOff = uint32(len(strtab.Data))
		strtab.Data = append(append(strtab.Data, sym.Name...), 0)
	}
	if sym.Bind() != elf.STB_LOCAL {
		f.Symbols = append(f.Symbols, sym)
		return uint32(len(f.Symbols) - 1)
	}
	at := uint32(f.firstGlobal())
	f.Symbols = append(f.Symbols, Symbol{})
	copy(f.Symbols[at+1:], f.Symbols[at:])
	f.Symbols[at] = sym
	for _, s := range f.Sections {
		for i := range s.Relocs {
			if s.Relocs[i].Sym >= at {
				s.Relocs[i].Sym++
			}
		}
		if s.Type == elf.SHT_GROUP && s.Info >= at && s.Link == uint32(f.SymtabNdx) {
			s.Info++
		}
	}
	return at
}

// firstGlobal returns the index of the first non-local symbol.
func (f *File) firstGlobal() int {
	for i := 1; i < len(f.Symbols); i++ {
		if f.Symbols[i].Bind() != elf.STB_LOCAL {
			return i
		}
	}
	return len(f.Symbols)
}

// FindSymbol returns the index of the first symbol with the given name, or
// 0 if there is none.
func (f *File) FindSymbol(name string) uint32 {
	for i := 1; i < len(f.Symbols); i++ {
		if f.Symbols[i].Name == name {
			return uint32(i)
		}
	}
	return 0
}

// ErrLTO is matched (errors.Is) by every *LTOError.
var ErrLTO = errors.New("LTO object")

// LTOError is the error Read returns for link-time optimisation objects
// that hold compiler IR instead of machine code: gcc -flto without
// -ffat-lto-objects (GIMPLE in .gnu.lto_* sections, symbol
// __gnu_lto_slim) and clang -flto (LLVM bitcode, not ELF at all). A link
// compiles them anew, so rewriting them cannot instrument anything.
type LTOError struct {
	IR string // "GIMPLE IR" or "LLVM bitcode"
}

func (e *LTOError) Error() string { return "LTO object (" + e.IR + "): compile with -fno-lto" }

// Is makes errors.Is(err, ErrLTO) true.
func (e *LTOError) Is(target error) bool { return target == ErrLTO }

// IsBitcode reports whether data is LLVM bitcode ("BC" 0xC0DE), bare or in
// the bitcode wrapper (0x0B17C0DE).
func IsBitcode(data []byte) bool {
	return bytes.HasPrefix(data, []byte("BC\xc0\xde")) || bytes.HasPrefix(data, []byte("\xde\xc0\x17\x0b"))
}

// IsLTOSection reports whether a section holds LTO IR: gcc's GIMPLE
// (.gnu.lto_*) and the early debug information that goes with it
// (.gnu.debuglto_*), and LLVM's embedded bitcode for fat LTO (.llvm.lto).
func IsLTOSection(name string) bool {
	return strings.HasPrefix(name, ".gnu.lto_") || strings.HasPrefix(name, ".gnu.debuglto_") || name == ".llvm.lto"
}

// IsLTOMarker reports whether a symbol only marks an object as gcc LTO
// output (__gnu_lto_slim, __gnu_lto_v1 of older gcc).
func IsLTOMarker(name string) bool { return strings.HasPrefix(name, "__gnu_lto_") }

// HasLTO reports whether the object carries LTO IR sections.
func (f *File) HasLTO() bool {
	for _, s := range f.Sections {
		if IsLTOSection(s.Name) {
			return true
		}
	}
	return false
}

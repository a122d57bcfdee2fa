package kit

import (
	"debug/elf"
	"fmt"
	"hash/fnv"

	"hijack/elfobj"
	"hijack/ibr"
)

// Object is what a preset adds to one object file: sections, local
// symbols, code of its own, constructors and destructors. Sections and
// symbols are added in call order, so the same calls give the same object.
type Object struct {
	File *elfobj.File
}

// NewObject starts adding to f, which needs a symbol table.
func NewObject(f *elfobj.File) (*Object, error) {
	if f.SymtabNdx == 0 {
		return nil, fmt.Errorf("the object has no symbol table")
	}
	return &Object{File: f}, nil
}

// ObjectID identifies an object to a runtime: the FNV-1a hash of its
// code sections' original bytes and its name (vptrace/ABI.md, the
// descriptors' id). Call it before any code goes in.
func ObjectID(o *ibr.Object) uint64 {
	h := fnv.New64a()
	for _, s := range o.Code {
		h.Write(s.Elf.Data)
	}
	h.Write([]byte(o.Name))
	return h.Sum64()
}

// SectionKind is what a new section holds.
type SectionKind uint8

const (
	// ReadOnly is data the program reads (SHT_PROGBITS, allocated).
	ReadOnly SectionKind = iota
	// Writable is data the program writes (SHT_PROGBITS, allocated and
	// writable).
	Writable
	// TLS is per-thread data that starts zero (SHT_NOBITS, a .tbss):
	// every thread gets its own copy. Give it a size with SetSize.
	TLS
	// Text is code (SHT_PROGBITS, allocated and executable): see SetCode.
	Text
)

var kinds = [...]struct {
	typ   elf.SectionType
	flags elf.SectionFlag
}{
	ReadOnly: {elf.SHT_PROGBITS, elf.SHF_ALLOC},
	Writable: {elf.SHT_PROGBITS, elf.SHF_ALLOC | elf.SHF_WRITE},
	TLS:      {elf.SHT_NOBITS, elf.SHF_ALLOC | elf.SHF_WRITE | elf.SHF_TLS},
	Text:     {elf.SHT_PROGBITS, elf.SHF_ALLOC | elf.SHF_EXECINSTR},
}

// AddSection adds an empty section called name of the given kind and
// alignment and returns its index, which stays valid.
func (x *Object) AddSection(name string, kind SectionKind, align uint64) int {
	k := kinds[kind]
	return x.File.AddSection(&elfobj.Section{Name: name, Type: k.typ, Flags: k.flags, Align: align})
}

// SetSize sets the size of a TLS section.
func (x *Object) SetSize(sec int, size uint64) { x.File.Sections[sec].Size = size }

// SetData sets the contents of a ReadOnly or Writable section.
func (x *Object) SetData(sec int, data []byte) { x.File.Sections[sec].Data = data }

// DataReloc is a relocation of a ReadOnly or Writable section's data: at
// Off, of type Type, against the symbol called Sym (which the object
// defines), plus Addend.
type DataReloc struct {
	Off    uint64
	Type   elf.R_X86_64
	Sym    string
	Addend int64
}

// RelocateData gives the data of section sec (ReadOnly or Writable) its
// relocations, in a new relocation section .rela<name>. Call it once per
// section, after every local symbol was added (AddLocal).
func (x *Object) RelocateData(sec int, relocs []DataReloc) error {
	rs := make([]elfobj.Rela, 0, len(relocs))
	for _, r := range relocs {
		k := x.File.FindSymbol(r.Sym)
		if k == 0 {
			return fmt.Errorf("%s+%#x: no symbol %s", x.File.Sections[sec].Name, r.Off, r.Sym)
		}
		rs = append(rs, elfobj.Rela{Off: r.Off, Type: r.Type, Sym: k, Addend: r.Addend})
	}
	x.addRela(sec, rs)
	return nil
}

// AddLocal adds a local symbol called name of type typ (STT_OBJECT,
// STT_FUNC, STT_TLS) in section sec, at offset 0 and of size 0 until
// SetSymbol. Inserted code refers to it as Named(name). The name must be
// new to the object. Add local symbols before any code refers to a symbol
// by index (Indexed): a local symbol goes before every global one and
// renumbers them.
func (x *Object) AddLocal(name string, typ elf.SymType, sec int) error {
	if x.File.FindSymbol(name) != 0 {
		return fmt.Errorf("the object already has a symbol %s", name)
	}
	x.File.AddSymbol(elfobj.Symbol{Name: name, Info: byte(elf.STB_LOCAL)<<4 | byte(typ), Shndx: uint32(sec)})
	return nil
}

// SetSymbol sets the offset in its section and the size of the symbol
// called name.
func (x *Object) SetSymbol(name string, value, size uint64) error {
	k := x.File.FindSymbol(name)
	if k == 0 {
		return fmt.Errorf("no symbol %s", name)
	}
	x.File.Symbols[k].Value, x.File.Symbols[k].Size = value, size
	return nil
}

// SetCode makes code the contents of the Text section sec, and its
// relocations those of a new relocation section .rela<name>. A
// relocation to a name the object does not define adds an undefined
// global symbol (a runtime entry point). The code cannot have links: it
// is not in a section of the original code.
func (x *Object) SetCode(sec int, code *ibr.Snippet) error {
	f := x.File
	if code.Cold != nil {
		return fmt.Errorf("code of its own for %s has a cold part (Builder.Cold): a section's own code is laid out as written", f.Sections[sec].Name)
	}
	if len(code.Links) > 0 {
		return fmt.Errorf("code of its own for %s refers to original code without relocation", f.Sections[sec].Name)
	}
	f.Sections[sec].Data = code.Code
	rs := make([]elfobj.Rela, 0, len(code.Relocs))
	for _, r := range code.Relocs {
		rs = append(rs, elfobj.Rela{Off: uint64(r.Off), Type: r.Type, Sym: x.symbol(r), Addend: r.Addend})
	}
	x.addRela(sec, rs)
	return nil
}

// symbol returns the index of the symbol r refers to, adding an undefined
// global one for a name the object lacks.
func (x *Object) symbol(r ibr.SnippetReloc) uint32 {
	if r.SymIndex != 0 {
		return r.SymIndex
	}
	if k := x.File.FindSymbol(r.Sym); k != 0 {
		return k
	}
	return x.File.AddSymbol(elfobj.Symbol{Name: r.Sym, Info: byte(elf.STB_GLOBAL)<<4 | byte(elf.STT_NOTYPE)})
}

func (x *Object) addRela(sec int, rs []elfobj.Rela) {
	f := x.File
	f.AddSection(&elfobj.Section{Name: ".rela" + f.Sections[sec].Name, Type: elf.SHT_RELA, Flags: elf.SHF_INFO_LINK,
		Link: uint32(f.SymtabNdx), Info: uint32(sec), Align: 8, Entsize: 24, Relocs: rs})
}

// NoPriority is the priority of constructors and destructors that run in
// link order, after those with a priority.
const NoPriority = -1

// Constructor has the function called sym (defined in the object) run
// when its module (program or library) is loaded, from .init_array, or
// from .init_array.NNNNN with priority 0..65535: the linker sorts those by
// priority and puts them before the plain ones, so that a lower priority
// runs earlier.
func (x *Object) Constructor(sym string, priority int) error {
	return x.arrayEntry(".init_array", elf.SHT_INIT_ARRAY, sym, priority)
}

// Destructor has the function called sym run when its module exits or is
// unloaded, from .fini_array or from .fini_array.NNNNN with priority
// 0..65535. Destructors run in reverse order: the plain ones first, then
// those with a priority, the highest first: priority 0 runs after every
// other destructor of the module.
func (x *Object) Destructor(sym string, priority int) error {
	return x.arrayEntry(".fini_array", elf.SHT_FINI_ARRAY, sym, priority)
}

func (x *Object) arrayEntry(name string, typ elf.SectionType, sym string, priority int) error {
	if priority != NoPriority {
		if priority < 0 || priority > 65535 {
			return fmt.Errorf("%s: priority %d out of 0..65535", name, priority)
		}
		name += fmt.Sprintf(".%05d", priority)
	}
	k := x.File.FindSymbol(sym)
	if k == 0 {
		return fmt.Errorf("%s: no symbol %s", name, sym)
	}
	sec := x.File.AddSection(&elfobj.Section{Name: name, Type: typ, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Align: 8, Entsize: 8, Data: make([]byte, 8)})
	x.addRela(sec, []elfobj.Rela{{Off: 0, Type: elf.R_X86_64_64, Sym: k}})
	return nil
}

// StringTable is a table of NUL-terminated strings, each stored once: Add
// returns the offset of a string, the same one for the same string.
type StringTable struct {
	data []byte
	idx  map[string]uint32
}

// Add returns the offset of s in the table, adding it if it is new.
func (t *StringTable) Add(s string) uint32 {
	if off, ok := t.idx[s]; ok {
		return off
	}
	if t.idx == nil {
		t.idx = make(map[string]uint32)
	}
	off := uint32(len(t.data))
	t.data = append(append(t.data, s...), 0)
	t.idx[s] = off
	return off
}

// Bytes returns the table's contents (not a copy).
func (t *StringTable) Bytes() []byte { return t.data }

// Len returns the table's size in bytes.
func (t *StringTable) Len() int { return len(t.data) }

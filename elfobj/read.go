package elfobj

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/bits"
)

const (
	ehdrSize  = 64
	shdrSize  = 64
	symSize   = 24
	relaSize  = 24
	maxShnum  = 1 << 24 // far beyond any real object; bounds allocations on corrupt input
	shnXindex = 0xffff
	// maxAlign bounds sh_addralign. gcc refuses alignments above 2^28
	// ("exceeds object file maximum") and LLVM above 2^32; a larger value
	// is a corrupt header, and alignments drive the writer's layout.
	maxAlign = 1 << 32
	// maxNobits bounds the size of SHT_NOBITS sections: x86-64 user
	// space has 2^47 bytes, and sizes beyond overflow the arithmetic of
	// whoever adds offsets to them.
	maxNobits = 1 << 47
)

var le = binary.LittleEndian

// Read parses an ELF64 little-endian x86-64 relocatable object. The
// returned File shares no memory with data. Errors are one line, names
// from the object made Printable.
func Read(data []byte) (*File, error) {
	f, err := read(data)
	if err != nil {
		return nil, PrintableError(err)
	}
	return f, nil
}

func read(data []byte) (*File, error) {
	if IsBitcode(data) {
		return nil, &LTOError{IR: "LLVM bitcode"}
	}
	data = bytes.Clone(data)
	if len(data) < elf.EI_NIDENT || string(data[:4]) != elf.ELFMAG {
		return nil, fmt.Errorf("not an ELF file")
	}
	f := &File{MaxSize: OutputLimit(len(data))}
	copy(f.Ident[:], data)
	switch elf.Class(data[elf.EI_CLASS]) {
	case elf.ELFCLASS64:
	case elf.ELFCLASS32:
		return nil, fmt.Errorf("32-bit ELF (ELFCLASS32) is not supported: hijack rewrites x86-64 objects")
	default:
		return nil, fmt.Errorf("invalid ELF class %d", data[elf.EI_CLASS])
	}
	if elf.Data(data[elf.EI_DATA]) != elf.ELFDATA2LSB {
		return nil, fmt.Errorf("big-endian or invalid ELF data encoding %d: hijack rewrites little-endian x86-64 objects", data[elf.EI_DATA])
	}
	if data[elf.EI_VERSION] != byte(elf.EV_CURRENT) {
		return nil, fmt.Errorf("unknown ELF version %d", data[elf.EI_VERSION])
	}
	if len(data) < ehdrSize {
		return nil, fmt.Errorf("truncated ELF header (%d bytes)", len(data))
	}
	etype := elf.Type(le.Uint16(data[16:]))
	machine := elf.Machine(le.Uint16(data[18:]))
	switch etype {
	case elf.ET_REL:
	case elf.ET_EXEC, elf.ET_DYN:
		return nil, fmt.Errorf("%s: %w", etype, ErrNotRelocatable)
	default:
		return nil, fmt.Errorf("ELF type %s: %w", etype, ErrNotRelocatable)
	}
	if machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("machine %s is not supported: hijack rewrites x86-64 objects", machine)
	}
	f.Version = le.Uint32(data[20:])
	f.Flags = le.Uint32(data[48:])
	shoff := le.Uint64(data[40:])
	shentsize := le.Uint16(data[58:])
	shnum := uint64(le.Uint16(data[60:]))
	shstrndx := uint32(le.Uint16(data[62:]))
	if shoff == 0 {
		return nil, fmt.Errorf("object has no section header table")
	}
	if shentsize != shdrSize {
		return nil, fmt.Errorf("section header size %d, want %d", shentsize, shdrSize)
	}
	if shoff > uint64(len(data)) || uint64(len(data))-shoff < shdrSize {
		return nil, fmt.Errorf("section header table at 0x%x is beyond the end of the file (%d bytes)", shoff, len(data))
	}
	// Extended numbering: section 0 holds the real count and string-table index.
	if shnum == 0 {
		shnum = le.Uint64(data[shoff+32:])
	}
	if shstrndx == shnXindex {
		shstrndx = le.Uint32(data[shoff+40:])
	}
	if shnum == 0 || shnum > maxShnum || shnum > (uint64(len(data))-shoff)/shdrSize {
		return nil, fmt.Errorf("section header table (%d entries at 0x%x) does not fit in the file (%d bytes)", shnum, shoff, len(data))
	}
	if uint64(shstrndx) >= shnum || shstrndx == 0 {
		return nil, fmt.Errorf("section name table index %d out of range (%d sections)", shstrndx, shnum)
	}
	f.ShStrNdx = int(shstrndx)

	f.Sections = make([]*Section, shnum)
	for i := range f.Sections {
		h := data[shoff+uint64(i)*shdrSize:]
		s := &Section{
			NameOff: le.Uint32(h[0:]),
			Type:    elf.SectionType(le.Uint32(h[4:])),
			Flags:   elf.SectionFlag(le.Uint64(h[8:])),
			Addr:    le.Uint64(h[16:]),
			Link:    le.Uint32(h[40:]),
			Info:    le.Uint32(h[44:]),
			Align:   le.Uint64(h[48:]),
			Entsize: le.Uint64(h[56:]),
		}
		off, size := le.Uint64(h[24:]), le.Uint64(h[32:])
		f.Sections[i] = s
		if i == 0 {
			// Section 0 may carry extended numbering; nothing else.
			s.Size, s.Link = 0, 0
			continue
		}
		if s.Type == elf.SHT_NOBITS {
			s.Size = size
			continue
		}
		if s.Type == elf.SHT_NULL {
			continue
		}
		if off > uint64(len(data)) || size > uint64(len(data))-off {
			return nil, fmt.Errorf("section %d: contents at 0x%x size 0x%x are beyond the end of the file (%d bytes)", i, off, size, len(data))
		}
		s.Data = data[off : off+size : off+size]
		s.Size = size
	}
	shstr := f.Sections[shstrndx]
	if shstr.Type != elf.SHT_STRTAB {
		return nil, fmt.Errorf("section name table (section %d) has type %s, want SHT_STRTAB", shstrndx, shstr.Type)
	}
	for i, s := range f.Sections[1:] {
		name, ok := cstring(shstr.Data, s.NameOff)
		if !ok {
			return nil, fmt.Errorf("section %d: name offset 0x%x outside the section name table", i+1, s.NameOff)
		}
		s.Name = name
	}
	if err := f.readSymtab(); err != nil {
		return nil, err
	}
	for i, s := range f.Sections {
		if err := f.checkSection(i, s); err != nil {
			return nil, fmt.Errorf("section %d (%s): %w", i, s.Name, err)
		}
	}
	// gcc marks objects with GIMPLE only (no -ffat-lto-objects) with this
	// symbol; their .text is empty.
	if f.HasLTO() && f.FindSymbol("__gnu_lto_slim") != 0 {
		return nil, &LTOError{IR: "GIMPLE IR"}
	}
	return f, nil
}

// cstring returns the NUL-terminated string at off in tab.
func cstring(tab []byte, off uint32) (string, bool) {
	if uint64(off) >= uint64(len(tab)) {
		return "", off == 0
	}
	end := bytes.IndexByte(tab[off:], 0)
	if end < 0 {
		return "", false
	}
	return string(tab[off : int(off)+end]), true
}

func (f *File) readSymtab() error {
	var shndx []byte
	for i, s := range f.Sections {
		switch s.Type {
		case elf.SHT_SYMTAB:
			if f.SymtabNdx != 0 {
				return fmt.Errorf("section %d (%s): second symbol table (first is section %d)", i, s.Name, f.SymtabNdx)
			}
			f.SymtabNdx = i
		case elf.SHT_SYMTAB_SHNDX:
			shndx = s.Data
		}
	}
	if f.SymtabNdx == 0 {
		return nil
	}
	st := f.Sections[f.SymtabNdx]
	where := func(format string, args ...any) error {
		return fmt.Errorf("section %d (%s): %s", f.SymtabNdx, st.Name, fmt.Sprintf(format, args...))
	}
	if st.Entsize != symSize {
		return where("symbol entry size %d, want %d", st.Entsize, symSize)
	}
	if len(st.Data)%symSize != 0 {
		return where("size 0x%x is not a multiple of the entry size", len(st.Data))
	}
	if int(st.Link) <= 0 || int(st.Link) >= len(f.Sections) || f.Sections[st.Link].Type != elf.SHT_STRTAB {
		return where("link %d does not name a string table", st.Link)
	}
	strtab := f.Sections[st.Link].Data
	n := len(st.Data) / symSize
	if n == 0 {
		return where("empty symbol table")
	}
	if int(st.Info) > n {
		return where("first global index %d beyond %d symbols", st.Info, n)
	}
	f.Symbols = make([]Symbol, n)
	for i := range f.Symbols {
		e := st.Data[i*symSize:]
		sym := Symbol{
			NameOff: le.Uint32(e[0:]),
			Info:    e[4],
			Other:   e[5],
			Shndx:   uint32(le.Uint16(e[6:])),
			Value:   le.Uint64(e[8:]),
			Size:    le.Uint64(e[16:]),
		}
		name, ok := cstring(strtab, sym.NameOff)
		if !ok {
			return where("symbol %d: name offset 0x%x outside the string table", i, sym.NameOff)
		}
		sym.Name = name
		switch {
		case sym.Shndx == shnXindex:
			if len(shndx) < (i+1)*4 {
				return where("symbol %d (%s): extended section index missing", i, name)
			}
			sym.Shndx = le.Uint32(shndx[i*4:])
			if sym.Shndx >= 0xffff0000 {
				return where("symbol %d (%s): extended section index %d out of range", i, name, sym.Shndx)
			}
		case sym.Shndx >= uint32(elf.SHN_LORESERVE):
			sym.Shndx |= 0xffff0000
		}
		if !isSpecialShndx(sym.Shndx) && sym.Shndx >= uint32(len(f.Sections)) {
			return where("symbol %d (%s): section index %d out of range", i, name, sym.Shndx)
		}
		f.Symbols[i] = sym
	}
	return nil
}

func (f *File) checkSection(i int, s *Section) error {
	nsec := uint32(len(f.Sections))
	if s.Align > 1 && s.Align&(s.Align-1) != 0 {
		return fmt.Errorf("alignment %d is not a power of two", s.Align)
	}
	if s.Align > maxAlign {
		return fmt.Errorf("alignment 2^%d is larger than any toolchain produces (at most 2^32)", bits.TrailingZeros64(s.Align))
	}
	if s.Type == elf.SHT_NOBITS && s.Size > maxNobits {
		return fmt.Errorf("size 0x%x is larger than the x86-64 address space", s.Size)
	}
	switch s.Type {
	case elf.SHT_RELA:
		if s.Link != uint32(f.SymtabNdx) || f.SymtabNdx == 0 {
			return fmt.Errorf("link %d is not the symbol table", s.Link)
		}
		if s.Info == 0 || s.Info >= nsec {
			return fmt.Errorf("target section %d out of range", s.Info)
		}
		if s.Entsize != relaSize {
			return fmt.Errorf("relocation entry size %d, want %d", s.Entsize, relaSize)
		}
		if len(s.Data)%relaSize != 0 {
			return fmt.Errorf("size 0x%x is not a multiple of the entry size", len(s.Data))
		}
		target := f.Sections[s.Info]
		targetLen := target.Len()
		if target.Flags&elf.SHF_COMPRESSED != 0 {
			// Offsets count in the uncompressed contents (Elf64_Chdr.ch_size).
			if len(target.Data) < 24 {
				return fmt.Errorf("compressed target section %s has no compression header", target.Name)
			}
			targetLen = le.Uint64(target.Data[8:])
		}
		s.Relocs = make([]Rela, len(s.Data)/relaSize)
		for k := range s.Relocs {
			e := s.Data[k*relaSize:]
			info := le.Uint64(e[8:])
			r := Rela{Off: le.Uint64(e[0:]), Type: elf.R_X86_64(info & 0xffffffff), Sym: uint32(info >> 32), Addend: int64(le.Uint64(e[16:]))}
			if int(r.Sym) >= len(f.Symbols) {
				return fmt.Errorf("relocation %d at 0x%x: symbol index %d out of range", k, r.Off, r.Sym)
			}
			w := RelocSize(r.Type)
			if w < 0 {
				return fmt.Errorf("relocation %d at 0x%x: unsupported type %s", k, r.Off, r.Type)
			}
			if target.Type != elf.SHT_NOBITS && (r.Off > targetLen || uint64(w) > targetLen-r.Off) {
				return fmt.Errorf("relocation %d at 0x%x: field beyond the end of %s (size 0x%x)", k, r.Off, target.Name, targetLen)
			}
			s.Relocs[k] = r
		}
	case elf.SHT_REL:
		return fmt.Errorf("SHT_REL relocations are not used on x86-64 and are not supported")
	case elf.SHT_GROUP:
		if s.Link != uint32(f.SymtabNdx) || f.SymtabNdx == 0 {
			return fmt.Errorf("group link %d is not the symbol table", s.Link)
		}
		if int(s.Info) >= len(f.Symbols) {
			return fmt.Errorf("group signature symbol %d out of range", s.Info)
		}
		if len(s.Data) < 4 || len(s.Data)%4 != 0 {
			return fmt.Errorf("group contents of size %d are malformed", len(s.Data))
		}
		for k := 4; k < len(s.Data); k += 4 {
			if m := le.Uint32(s.Data[k:]); m == 0 || m >= nsec {
				return fmt.Errorf("group member %d out of range", m)
			}
		}
	case elf.SHT_SYMTAB_SHNDX:
		if s.Link != uint32(f.SymtabNdx) || f.SymtabNdx == 0 {
			return fmt.Errorf("link %d is not the symbol table", s.Link)
		}
		if len(s.Data) != len(f.Symbols)*4 {
			return fmt.Errorf("size 0x%x does not match %d symbols", len(s.Data), len(f.Symbols))
		}
	}
	return nil
}

// RelocSize returns the width in bytes of the field a relocation of type t
// patches, 0 for R_X86_64_NONE, or -1 for types hijack does not know.
func RelocSize(t elf.R_X86_64) int {
	switch t {
	case elf.R_X86_64_NONE:
		return 0
	case elf.R_X86_64_64, elf.R_X86_64_PC64, elf.R_X86_64_GOTOFF64, elf.R_X86_64_GOTPC64,
		elf.R_X86_64_GOT64, elf.R_X86_64_GOTPCREL64, elf.R_X86_64_GOTPLT64, elf.R_X86_64_PLTOFF64,
		elf.R_X86_64_SIZE64, elf.R_X86_64_DTPOFF64, elf.R_X86_64_TPOFF64, elf.R_X86_64_DTPMOD64:
		return 8
	case elf.R_X86_64_PC32, elf.R_X86_64_PLT32, elf.R_X86_64_32, elf.R_X86_64_32S,
		elf.R_X86_64_GOT32, elf.R_X86_64_GOTPCREL, elf.R_X86_64_GOTPCRELX, elf.R_X86_64_REX_GOTPCRELX,
		elf.R_X86_64_TLSGD, elf.R_X86_64_TLSLD, elf.R_X86_64_DTPOFF32, elf.R_X86_64_GOTTPOFF,
		elf.R_X86_64_TPOFF32, elf.R_X86_64_GOTPC32, elf.R_X86_64_SIZE32, elf.R_X86_64_GOTPC32_TLSDESC:
		return 4
	case elf.R_X86_64_16, elf.R_X86_64_PC16:
		return 2
	case elf.R_X86_64_8, elf.R_X86_64_PC8:
		return 1
	case elf.R_X86_64_TLSDESC_CALL:
		return 0
	}
	return -1
}

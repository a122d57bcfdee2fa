package elfobj

import (
	"debug/elf"
	"fmt"
	"math"
)

// Write lays out the object and returns its bytes. Section contents are
// written as they are, except the symbol table, its extended-index table and
// relocation sections, which are generated from Symbols and Relocs. Sections
// keep their order and indices.
func (f *File) Write() ([]byte, error) {
	if err := f.prepareTables(); err != nil {
		return nil, err
	}
	n := len(f.Sections)
	offsets := make([]uint64, n)
	off := uint64(ehdrSize)
	limit := uint64(math.MaxInt) // what make can allocate at all
	if f.MaxSize != 0 {
		limit = min(f.MaxSize, limit)
	}
	tooLarge := func() error { return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit) }
	for i, s := range f.Sections {
		if i == 0 || s.Type == elf.SHT_NOBITS || s.Type == elf.SHT_NULL {
			continue
		}
		if s.Align > 1 && s.Align&(s.Align-1) != 0 {
			return nil, fmt.Errorf("section %d (%s): alignment %d is not a power of two", i, s.Name, s.Align)
		}
		off = alignUp(off, min(max(s.Align, 1), maxFileAlign))
		offsets[i] = off
		if uint64(len(s.Data)) > limit-min(off, limit) {
			return nil, tooLarge()
		}
		off += uint64(len(s.Data))
	}
	shoff := alignUp(off, 8)
	if uint64(n) > (limit-min(shoff, limit))/shdrSize {
		return nil, tooLarge()
	}
	out := make([]byte, shoff+uint64(n)*shdrSize)

	copy(out, f.Ident[:])
	le.PutUint16(out[16:], uint16(elf.ET_REL))
	le.PutUint16(out[18:], uint16(elf.EM_X86_64))
	le.PutUint32(out[20:], f.Version)
	le.PutUint64(out[40:], shoff)
	le.PutUint32(out[48:], f.Flags)
	le.PutUint16(out[52:], ehdrSize)
	le.PutUint16(out[58:], shdrSize)
	shnum, shstrndx := uint16(n), uint16(f.ShStrNdx)
	if n >= int(elf.SHN_LORESERVE) {
		shnum = 0
	}
	if f.ShStrNdx >= int(elf.SHN_LORESERVE) {
		shstrndx = shnXindex
	}
	le.PutUint16(out[60:], shnum)
	le.PutUint16(out[62:], shstrndx)

	for i, s := range f.Sections {
		copy(out[offsets[i]:], s.Data)
		h := out[shoff+uint64(i)*shdrSize:]
		size := uint64(len(s.Data))
		if s.Type == elf.SHT_NOBITS {
			size = s.Size
		}
		link := s.Link
		if i == 0 {
			size, link = 0, 0
			if shnum == 0 {
				size = uint64(n)
			}
			if shstrndx == shnXindex {
				link = uint32(f.ShStrNdx)
			}
		}
		le.PutUint32(h[0:], s.NameOff)
		le.PutUint32(h[4:], uint32(s.Type))
		le.PutUint64(h[8:], uint64(s.Flags))
		le.PutUint64(h[16:], s.Addr)
		le.PutUint64(h[24:], offsets[i])
		le.PutUint64(h[32:], size)
		le.PutUint32(h[40:], link)
		le.PutUint32(h[44:], s.Info)
		le.PutUint64(h[48:], s.Align)
		le.PutUint64(h[56:], s.Entsize)
	}
	return out, nil
}

// prepareTables regenerates the symbol table, its extended-index table and
// the relocation sections from their parsed form.
func (f *File) prepareTables() error {
	if f.SymtabNdx != 0 {
		st := f.Sections[f.SymtabNdx]
		st.Data = make([]byte, len(f.Symbols)*symSize)
		var xndx []byte
		needX := false
		st.Info = uint32(f.firstGlobal())
		for i, sym := range f.Symbols {
			if sym.Bind() == elf.STB_LOCAL && uint32(i) > st.Info {
				return fmt.Errorf("symbol table: local symbol %d (%s) follows global symbols", i, sym.Name)
			}
			e := st.Data[i*symSize:]
			le.PutUint32(e[0:], sym.NameOff)
			e[4], e[5] = sym.Info, sym.Other
			shndx := sym.Shndx
			switch {
			case isSpecialShndx(shndx):
				shndx &= 0xffff
			case shndx >= uint32(elf.SHN_LORESERVE):
				shndx, needX = shnXindex, true
			}
			le.PutUint16(e[6:], uint16(shndx))
			le.PutUint64(e[8:], sym.Value)
			le.PutUint64(e[16:], sym.Size)
		}
		for _, s := range f.Sections {
			if s.Type == elf.SHT_SYMTAB_SHNDX {
				xndx = make([]byte, len(f.Symbols)*4)
				for i, sym := range f.Symbols {
					if le.Uint16(st.Data[i*symSize+6:]) == shnXindex {
						le.PutUint32(xndx[i*4:], sym.Shndx)
					}
				}
				s.Data = xndx
			}
		}
		if needX && xndx == nil {
			return fmt.Errorf("symbol table needs extended section indices but the object has no SHT_SYMTAB_SHNDX section")
		}
	}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA {
			continue
		}
		s.Data = make([]byte, len(s.Relocs)*relaSize)
		for k, r := range s.Relocs {
			e := s.Data[k*relaSize:]
			le.PutUint64(e[0:], r.Off)
			le.PutUint64(e[8:], uint64(r.Sym)<<32|uint64(r.Type))
			le.PutUint64(e[16:], uint64(r.Addend))
		}
	}
	return nil
}

// maxFileAlign caps the alignment of section contents in the file. The
// ELF gABI asks sh_addr, not sh_offset, to honour sh_addralign, and linkers
// copy a relocatable object's sections to addresses of their own; gas pads
// the file to every alignment (a section aligned to 2^28 starts 256 MiB
// into the object), which Write does only up to a page.
const maxFileAlign = 4096

func alignUp(x, a uint64) uint64 { return (x + a - 1) &^ (a - 1) }

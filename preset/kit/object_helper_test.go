package kit_test

import (
	"debug/elf"
	"os"
	"testing"

	"hijack/elfobj"
	"hijack/emit"
	"hijack/ibr"
)

// fn is a function of a test object: its name and machine code.
type fn struct {
	name string
	code []byte
}

// reloc is a relocation of a test object's .text against a named symbol
// (an undefined global one, added on first use).
type reloc struct {
	off    uint64
	typ    elf.R_X86_64
	sym    string
	addend int64
}

// newObject builds, as an assembler would, a relocatable object whose
// .text holds the functions one after the other (each a global STT_FUNC
// symbol), with a .bss of 64 bytes holding the local object "x", and
// decodes it. It stands in for compiled code where the test needs exact
// instructions and no tools.
func newObject(t testing.TB, fns []fn, relocs []reloc) *ibr.Object {
	t.Helper()
	o, err := buildObject(fns, relocs)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func buildObject(fns []fn, relocs []reloc) (*ibr.Object, error) {
	f := &elfobj.File{Version: 1}
	copy(f.Ident[:], elf.ELFMAG)
	f.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	f.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	f.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	f.Sections = []*elfobj.Section{{}, {Name: ".shstrtab", Type: elf.SHT_STRTAB, Align: 1, Data: []byte{0}}}
	f.ShStrNdx = 1
	f.Sections[1].NameOff = 1
	f.Sections[1].Data = append(f.Sections[1].Data, ".shstrtab\x00"...)
	strtab := f.AddSection(&elfobj.Section{Name: ".strtab", Type: elf.SHT_STRTAB, Align: 1, Data: []byte{0}})
	f.SymtabNdx = f.AddSection(&elfobj.Section{Name: ".symtab", Type: elf.SHT_SYMTAB, Link: uint32(strtab), Align: 8, Entsize: 24})
	f.Symbols = []elfobj.Symbol{{}}
	var code []byte
	for _, fn := range fns {
		code = append(code, fn.code...)
	}
	text := f.AddSection(&elfobj.Section{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Align: 16, Data: code})
	bss := f.AddSection(&elfobj.Section{Name: ".bss", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Align: 8, Size: 64})
	f.AddSymbol(elfobj.Symbol{Name: "x", Info: byte(elf.STB_LOCAL)<<4 | byte(elf.STT_OBJECT), Shndx: uint32(bss), Size: 64})
	off := uint64(0)
	for _, fn := range fns {
		f.AddSymbol(elfobj.Symbol{Name: fn.name, Info: byte(elf.STB_GLOBAL)<<4 | byte(elf.STT_FUNC), Shndx: uint32(text), Value: off, Size: uint64(len(fn.code))})
		off += uint64(len(fn.code))
	}
	if len(relocs) > 0 {
		var rs []elfobj.Rela
		for _, r := range relocs {
			k := f.FindSymbol(r.sym)
			if k == 0 {
				k = f.AddSymbol(elfobj.Symbol{Name: r.sym, Info: byte(elf.STB_GLOBAL)<<4 | byte(elf.STT_NOTYPE)})
			}
			rs = append(rs, elfobj.Rela{Off: r.off, Type: r.typ, Sym: k, Addend: r.addend})
		}
		f.AddSection(&elfobj.Section{Name: ".rela.text", Type: elf.SHT_RELA, Flags: elf.SHF_INFO_LINK, Link: uint32(f.SymtabNdx), Info: uint32(text), Align: 8, Entsize: 24, Relocs: rs})
	}
	// Through the writer and reader, as a real object comes in.
	data, err := f.Write()
	if err != nil {
		return nil, err
	}
	if f, err = elfobj.Read(data); err != nil {
		return nil, err
	}
	return ibr.Build(f)
}

// writeObject lays out o's code with what was inserted (emit.Emit) and
// writes the object to path.
func writeObject(t *testing.T, o *ibr.Object, path string) {
	t.Helper()
	if err := emit.Emit(o, func(w string) { t.Log(w) }); err != nil {
		t.Fatal(err)
	}
	data, err := o.File.Write()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Package objmut makes structured mutants of real ELF relocatable objects
// for robustness tests and fuzz corpora: it knows where the fields that
// drive a reader's allocations and indexing lie (header counts and
// offsets, section sizes, alignments, links and infos, relocation offsets,
// types and symbol indices, symbol sections, values and sizes, group
// members, .eh_frame record lengths, CIE pointers, augmentations and call
// frame programs, LSDAs, DWARF unit headers, compression headers, string
// table terminators, code bytes) and sets them to boundary values.
//
// Mutants are derived deterministically from a seed, so a failure names a
// mutant that can be made again; the objects themselves are compiled from
// sources by the tests (see Corpus), never committed.
package objmut

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"

	"hijack/internal/leb128"
)

var le = binary.LittleEndian

// Mutant is one mutated object.
type Mutant struct {
	// Name says what was changed, e.g. "sec9(.eh_frame).sh_addralign=0x8000000000000000".
	Name string
	Data []byte
}

// field is a place in the object a mutation may set.
type field struct {
	what string
	off  int
	size int // 1, 2, 4 or 8; 0 marks a byte region of length n
	n    int
	vals []uint64
	// program marks a region holding call frame instructions: a mutation
	// puts an instruction with extreme operands at its start.
	program bool
	// leb marks a region that starts with a LEB128 number: a mutation
	// writes a boundary value there (as long as the region allows).
	leb bool
}

// Fields are grouped by what they belong to, so that a draw reaches every
// part of the object, not only the numerous relocation entries.
type fields struct {
	groups map[string][]field
	order  []string
}

func (fs *fields) add(group string, f field) {
	if fs.groups == nil {
		fs.groups = make(map[string][]field)
	}
	if _, ok := fs.groups[group]; !ok {
		fs.order = append(fs.order, group)
	}
	fs.groups[group] = append(fs.groups[group], f)
}

// Mutate returns n mutants of obj, each with one to three fields changed,
// drawn with the given seed. obj must be an ELF64 object that debug/elf
// reads; otherwise Mutate returns nil.
func Mutate(obj []byte, seed uint64, n int) []Mutant {
	fs, err := locate(obj)
	if err != nil || len(fs.order) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	out := make([]Mutant, 0, n)
	for k := 0; k < n; k++ {
		d := bytes.Clone(obj)
		var names []string
		for j, m := 0, 1+rng.IntN(3); j < m; j++ {
			g := fs.groups[fs.order[rng.IntN(len(fs.order))]]
			f := g[rng.IntN(len(g))]
			names = append(names, apply(d, f, rng))
		}
		out = append(out, Mutant{Name: strings.Join(names, "+"), Data: d})
	}
	return out
}

// apply sets field f of d to one of its values (or scrambles a region) and
// says what it did.
func apply(d []byte, f field, rng *rand.Rand) string {
	if f.program && rng.IntN(2) == 0 {
		// DW_CFA_def_cfa_expression, expression, val_expression (with a
		// register), advance_loc1/2/4 and set_loc with extreme operands,
		// an unknown opcode.
		ops := [][]byte{
			append([]byte{0x0f}, leb128.AppendUleb(nil, 1<<63, leb128.MaxLen)...),
			append([]byte{0x10, 0x06}, leb128.AppendUleb(nil, ^uint64(0), leb128.MaxLen)...),
			append([]byte{0x16, 0x07}, leb128.AppendUleb(nil, ^uint64(0)-0x3f, leb128.MaxLen)...),
			{0x0f, 0x7f},
			{0x02, 0xff}, {0x03, 0xff, 0xff}, {0x04, 0xff, 0xff, 0xff, 0xff}, {0x04, 0x00, 0x00, 0x00, 0x80},
			{0x01, 0, 0, 0, 0, 0, 0, 0, 0}, {0x7f}, {0x3f}, {0x1c},
		}
		op := ops[rng.IntN(len(ops))]
		if len(op) <= f.n {
			copy(d[f.off:], op)
			return fmt.Sprintf("%s=% x", f.what, op)
		}
	}
	if f.leb {
		vals := []uint64{0, 0x7f, 0x3fff, 1 << 32, 1 << 63, ^uint64(0), ^uint64(0) - 0x40}
		v := vals[rng.IntN(len(vals))]
		if enc := leb128.AppendUleb(nil, v, 0); len(enc) <= f.n {
			copy(d[f.off:], enc)
			return fmt.Sprintf("%s=leb(%#x)", f.what, v)
		}
	}
	if f.size == 0 && f.n >= 11 && rng.IntN(3) == 0 {
		// A region: a LEB128 number of boundary value, as lengths and
		// offsets in call frame programs, LSDAs and DWARF are encoded,
		// after an opcode that takes one half of the time (call frame
		// expressions and advances, DWARF extended opcodes).
		p := rng.IntN(f.n - 10)
		what := fmt.Sprintf("%s+%d=", f.what, p)
		if rng.IntN(2) == 0 {
			op := []byte{0x0f, 0x10, 0x16, 0x0e, 0x02, 0x00, 0x01, 0x09}[rng.IntN(8)]
			d[f.off+p] = op
			p++
			what += fmt.Sprintf("%#x,", op)
		}
		v := []uint64{1 << 63, ^uint64(0), ^uint64(0) - 0x40, 1 << 32, 0xffffffff, 0x7fffffff, uint64(f.n)}[rng.IntN(7)]
		copy(d[f.off+p:], leb128.AppendUleb(nil, v, leb128.MaxLen))
		return fmt.Sprintf("%sleb(%#x)", what, v)
	}
	if f.size == 0 {
		// A region: overwrite 1..4 bytes with interesting or random bytes.
		var what []string
		for j, m := 0, 1+rng.IntN(4); j < m && f.n > 0; j++ {
			p := rng.IntN(f.n)
			v := []byte{0x00, 0xff, 0x7f, 0x80, 0x01, byte(rng.Uint32())}[rng.IntN(6)]
			d[f.off+p] = v
			what = append(what, fmt.Sprintf("+%d=%#x", p, v))
		}
		return f.what + strings.Join(what, ",")
	}
	var v uint64
	if len(f.vals) == 0 || rng.IntN(5) == 0 {
		v = rng.Uint64()
	} else {
		v = f.vals[rng.IntN(len(f.vals))]
	}
	switch f.size {
	case 1:
		v &= 0xff
		d[f.off] = byte(v)
	case 2:
		v &= 0xffff
		le.PutUint16(d[f.off:], uint16(v))
	case 4:
		v &= 0xffffffff
		le.PutUint32(d[f.off:], uint32(v))
	case 8:
		le.PutUint64(d[f.off:], v)
	}
	return fmt.Sprintf("%s=%#x", f.what, v)
}

// near returns values around x: x itself, its neighbours, and the wrap.
func near(x uint64, extra ...uint64) []uint64 {
	return append([]uint64{0, x, x + 1, x - 1, x + 4, x + 8, x - 8, x + 24, x * 2, ^uint64(0), 1 << 31, 1 << 32, 1 << 63}, extra...)
}

// locate finds the mutable fields of obj.
func locate(obj []byte) (*fields, error) {
	ef, err := elf.NewFile(bytes.NewReader(obj))
	if err != nil {
		return nil, err
	}
	if ef.Class != elf.ELFCLASS64 || len(obj) < 64 {
		return nil, fmt.Errorf("not ELF64")
	}
	fs := &fields{}
	size := uint64(len(obj))
	shoff := int(le.Uint64(obj[0x28:]))
	shnum := uint64(len(ef.Sections))
	// The ELF header.
	fs.add("ehdr", field{what: "e_shoff", off: 0x28, size: 8, vals: near(uint64(shoff), size, size-64)})
	fs.add("ehdr", field{what: "e_shnum", off: 0x3c, size: 2, vals: near(shnum, 0xff00, 0xffff)})
	fs.add("ehdr", field{what: "e_shstrndx", off: 0x3e, size: 2, vals: near(uint64(le.Uint16(obj[0x3e:])), shnum, 0xffff)})
	fs.add("ehdr", field{what: "e_shentsize", off: 0x3a, size: 2, vals: []uint64{0, 40, 63, 65, 128}})
	fs.add("ehdr", field{what: "e_type", off: 0x10, size: 2, vals: []uint64{0, 2, 3, 4, 0xfe00}})
	fs.add("ehdr", field{what: "e_ident", off: 4, size: 0, n: 12})

	aligns := []uint64{0, 1, 3, 6, 16, 4096, 1 << 21, 1 << 28, 1 << 32, 1 << 33, 1 << 40, 1 << 62, 1 << 63}
	types := []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 14, 15, 16, 17, 18, 0x6ffffff6, 0x70000001, 0xffffffff}
	idx := []uint64{0, 1, shnum - 1, shnum, shnum + 1, 0xff00, 0xfff1, 0xfff2, 0xffff, 0x10000, 0xffffffff}
	for i, s := range ef.Sections {
		h := shoff + i*64
		if h+64 > len(obj) {
			break
		}
		g := fmt.Sprintf("sec%d(%s)", i, s.Name)
		fs.add("shdr", field{what: g + ".sh_type", off: h + 4, size: 4, vals: types})
		fs.add("shdr", field{what: g + ".sh_flags", off: h + 8, size: 8, vals: []uint64{0, 2, 4, 6, 0x10, 0x30, 0x200, 0x400, 0x800, 0x80000000, uint64(s.Flags) ^ 0x800, uint64(s.Flags) ^ 0x200, uint64(s.Flags) ^ 4}})
		fs.add("shdr", field{what: g + ".sh_offset", off: h + 24, size: 8, vals: near(s.Offset, size, size-s.Size)})
		fs.add("shdr", field{what: g + ".sh_size", off: h + 32, size: 8, vals: near(s.Size, size, size-s.Offset, s.Size-24, s.Size+24, 1<<40)})
		fs.add("shdr", field{what: g + ".sh_link", off: h + 40, size: 4, vals: append(idx, uint64(i))})
		fs.add("shdr", field{what: g + ".sh_info", off: h + 44, size: 4, vals: append(idx, uint64(i), uint64(s.Info)+1)})
		fs.add("align", field{what: g + ".sh_addralign", off: h + 48, size: 8, vals: aligns})
		fs.add("shdr", field{what: g + ".sh_entsize", off: h + 56, size: 8, vals: []uint64{0, 1, 8, 16, 23, 24, 25, 1 << 32, 1 << 63}})
		fs.add("shdr", field{what: g + ".sh_name", off: h, size: 4, vals: []uint64{0, 1, 0xffff, 0xffffffff}})
		if s.Type == elf.SHT_NOBITS || s.Offset+s.Size > size {
			continue
		}
		off, n := int(s.Offset), int(s.Size)
		switch {
		case s.Type == elf.SHT_RELA:
			locateRela(fs, g, obj[off:off+n], off, ef)
		case s.Type == elf.SHT_SYMTAB:
			locateSymtab(fs, g, obj[off:off+n], off, shnum)
		case s.Type == elf.SHT_GROUP:
			for k := 0; k+4 <= n; k += 4 {
				fs.add("group", field{what: fmt.Sprintf("%s[%d]", g, k/4), off: off + k, size: 4, vals: append(idx, uint64(i), 0x1, 0x2)})
			}
		case s.Type == elf.SHT_STRTAB && n > 0:
			fs.add("strtab", field{what: g + ".last", off: off + n - 1, size: 1, vals: []uint64{'A', 0}})
		case s.Flags&elf.SHF_COMPRESSED != 0 && n >= 24:
			fs.add("dwarf", field{what: g + ".ch_type", off: off, size: 4, vals: []uint64{0, 1, 2, 0xffffffff}})
			fs.add("dwarf", field{what: g + ".ch_size", off: off + 8, size: 8, vals: near(le.Uint64(obj[off+8:]), 1<<40)})
			fs.add("dwarf", field{what: g + ".zlib", off: off + 24, size: 0, n: min(n-24, 64)})
		case s.Name == ".eh_frame":
			locateEHFrame(fs, g, obj[off:off+n], off)
		case s.Name == ".gcc_except_table" || strings.HasPrefix(s.Name, ".gcc_except_table."):
			locateLSDA(fs, g, obj[off:off+n], off)
		case strings.HasPrefix(s.Name, ".debug_"):
			locateDWARF(fs, g, s.Name, obj[off:off+n], off)
		case s.Flags&elf.SHF_EXECINSTR != 0 && n > 0:
			fs.add("code", field{what: g, off: off, size: 0, n: n})
		}
	}
	return fs, nil
}

func locateRela(fs *fields, g string, b []byte, off int, ef *elf.File) {
	var nsyms uint64
	if syms, err := ef.Symbols(); err == nil {
		nsyms = uint64(len(syms)) + 1
	}
	// At most 64 entries per section, spread over it: the draw should not
	// be dominated by the largest relocation section.
	n := len(b) / 24
	step := max(1, n/64)
	for k := 0; k < n; k += step {
		e := off + k*24
		w := fmt.Sprintf("%s[%d]", g, k)
		r := le.Uint64(b[k*24:])
		info := le.Uint64(b[k*24+8:])
		fs.add("reloc", field{what: w + ".r_offset", off: e, size: 8, vals: near(r, 1<<32)})
		fs.add("reloc", field{what: w + ".r_sym", off: e + 12, size: 4, vals: []uint64{0, 1, nsyms - 1, nsyms, nsyms + 1, uint64(info>>32) + 1, 0xffffff, 0xffffffff}})
		fs.add("reloc", field{what: w + ".r_type", off: e + 8, size: 4, vals: []uint64{0, 1, 2, 4, 9, 10, 11, 19, 22, 24, 32, 33, 34, 36, 37, 41, 42, 43, 44, 0xff}})
		fs.add("reloc", field{what: w + ".r_addend", off: e + 16, size: 8, vals: []uint64{0, 1, ^uint64(0), ^uint64(3), 1 << 31, 1<<31 - 1, 1 << 63, 1<<63 - 1, 0x1000}})
	}
}

func locateSymtab(fs *fields, g string, b []byte, off int, shnum uint64) {
	n := len(b) / 24
	step := max(1, n/64)
	for k := 1; k < n; k += step {
		e := off + k*24
		w := fmt.Sprintf("%s[%d]", g, k)
		v := le.Uint64(b[k*24+8:])
		sz := le.Uint64(b[k*24+16:])
		fs.add("symbol", field{what: w + ".st_shndx", off: e + 6, size: 2, vals: []uint64{0, 1, 2, shnum - 1, shnum, 0xff00, 0xfff1, 0xfff2, 0xffff}})
		fs.add("symbol", field{what: w + ".st_value", off: e + 8, size: 8, vals: near(v, v+sz, 1<<32)})
		fs.add("symbol", field{what: w + ".st_size", off: e + 16, size: 8, vals: near(sz, 1<<32, 1<<63-1)})
		fs.add("symbol", field{what: w + ".st_info", off: e + 4, size: 1, vals: []uint64{0x00, 0x01, 0x02, 0x03, 0x04, 0x06, 0x0a, 0x10, 0x12, 0x11, 0x22, 0xa2, 0x1a}})
		fs.add("symbol", field{what: w + ".st_name", off: e, size: 4, vals: []uint64{0, 1, 0xffff, 0xffffffff}})
	}
}

// locateEHFrame walks the CIEs and FDEs of an .eh_frame section.
func locateEHFrame(fs *fields, g string, b []byte, off int) {
	for p := 0; p+8 <= len(b); {
		l := int(le.Uint32(b[p:]))
		if l == 0 || l == 0xffffffff || p+4+l > len(b) {
			break
		}
		w := fmt.Sprintf("%s@%#x", g, p)
		id := le.Uint32(b[p+4:])
		fs.add("ehframe", field{what: w + ".length", off: off + p, size: 4, vals: []uint64{0, 1, 3, 4, uint64(l) - 4, uint64(l) + 4, uint64(len(b)), 0xfffffff0, 0xffffffff}})
		fs.add("ehframe", field{what: w + ".id", off: off + p + 4, size: 4, vals: []uint64{0, 1, uint64(p + 4), uint64(p + 5), uint64(id) + 4, uint64(id) - 4, 0xffffffff}})
		if id != 0 && l >= 16 {
			fs.add("ehframe", field{what: w + ".pc_range", off: off + p + 12, size: 4, vals: []uint64{0, 1, 0x7fffffff, 0xffffffff}})
		}
		// The body: augmentation, LEB128 operands, the call frame program.
		if l > 8 {
			fs.add("ehframe", field{what: w + ".body", off: off + p + 8, size: 0, n: l - 4})
		}
		// The program of an FDE as gcc and clang write them (CIE
		// augmentation "zR" or "zPLR", 4-byte pc_begin and pc_range, a
		// one-byte augmentation length).
		if id != 0 && l >= 13 && b[p+16] < 0x80 {
			if at := p + 17 + int(b[p+16]); at < p+4+l {
				fs.add("ehframe", field{what: w + ".cfa", off: off + at, size: 0, n: p + 4 + l - at, program: true})
			}
		}
		p += 4 + l
	}
}

// locateDWARF marks the headers of DWARF units and the rest of the section
// as a region.
func locateDWARF(fs *fields, g, name string, b []byte, off int) {
	if len(b) < 12 {
		return
	}
	switch name {
	case ".debug_info", ".debug_line", ".debug_rnglists", ".debug_loclists", ".debug_aranges", ".debug_addr", ".debug_frame":
		l := uint64(le.Uint32(b))
		fs.add("dwarf", field{what: g + ".unit_length", off: off, size: 4, vals: near(l, 0xfffffff0, 0xffffffff)})
		fs.add("dwarf", field{what: g + ".version", off: off + 4, size: 2, vals: []uint64{0, 1, 2, 3, 4, 5, 6, 0xffff}})
		fs.add("dwarf", field{what: g + ".header", off: off + 6, size: 0, n: min(len(b)-6, 32)})
	}
	fs.add("dwarf", field{what: g, off: off, size: 0, n: len(b)})
}

// locateLSDA marks the header fields of the first LSDA of a
// .gcc_except_table section and the section as a region.
func locateLSDA(fs *fields, g string, b []byte, off int) {
	fs.add("lsda", field{what: g, off: off, size: 0, n: len(b)})
	if len(b) < 4 {
		return
	}
	fs.add("lsda", field{what: g + ".lpstart_enc", off: off, size: 1, vals: []uint64{0, 0x1b, 0xff}})
	fs.add("lsda", field{what: g + ".ttype_enc", off: off + 1, size: 1, vals: []uint64{0x00, 0x03, 0x0c, 0x9b, 0xff}})
	p := 2
	if b[1] != 0xff {
		fs.add("lsda", field{what: g + ".ttype_off", off: off + p, size: 0, n: len(b) - p, leb: true})
		for p < len(b) && b[p]&0x80 != 0 {
			p++
		}
		p++
	}
	if p+1 >= len(b) {
		return
	}
	fs.add("lsda", field{what: g + ".cs_enc", off: off + p, size: 1, vals: []uint64{0x01, 0x03, 0x09, 0x0b, 0x04, 0x0f}})
	fs.add("lsda", field{what: g + ".cs_len", off: off + p + 1, size: 0, n: len(b) - p - 1, leb: true})
}

// Field is a place Mutate may change, for tests that make one mutation on
// purpose.
type Field struct {
	What string // as in Mutant.Name, without the value
	Off  int    // offset in the object
	Size int    // 1, 2, 4 or 8 for a number; 0 for a region of N bytes
	N    int
}

// Fields lists the places Mutate may change in obj.
func Fields(obj []byte) ([]Field, error) {
	fs, err := locate(obj)
	if err != nil {
		return nil, err
	}
	var out []Field
	for _, g := range fs.order {
		for _, f := range fs.groups[g] {
			out = append(out, Field{What: f.what, Off: f.off, Size: f.size, N: f.n})
		}
	}
	return out, nil
}

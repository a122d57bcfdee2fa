package e2e

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Identity: rewriting with rules that select no function must leave every
// section's contents, every relocation and every symbol as they were. The
// file layout (offsets, the order of strings in string tables) may change;
// everything a linker or debugger reads must not.

func TestIdentity(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	needFile(t, cfg.none, "e2e/testdata/rules/none.yaml")

	type input struct{ name, path string }
	var inputs []input
	// compiled testdata, several flavours
	compiled := []struct {
		cc    string
		flags []string
		srcs  []string
	}{
		{"gcc", []string{"-O2", "-g"}, []string{"demo/main.c", "demo/hashtab.c", "demo/text.c", "gdb/deep.c", "zlib/driver.c"}},
		{"gcc", []string{"-O0"}, []string{"demo/main.c", "gdb/main.c"}},
		{"gcc", []string{"-O2", "-ffunction-sections", "-fdata-sections", "-fcf-protection"}, []string{"demo/hashtab.c", "sqlite/driver.c"}},
		{"gcc", []string{"-O2", "-fPIC"}, []string{"demo/hashtab.c"}},
		{"clang", []string{"-O2", "-g"}, []string{"demo/main.c", "gdb/deep.c"}},
		{"g++", []string{"-std=c++17", "-O2", "-g"}, []string{"cxx/main.cpp", "cxx/thrower.cpp", "cxx/shapes.cpp"}},
		{"clang++", []string{"-std=c++17", "-O2"}, []string{"cxx/shapes.cpp"}},
	}
	for _, c := range compiled {
		for _, s := range c.srcs {
			name := fmt.Sprintf("%s%s/%s", c.cc, strings.Join(c.flags, ""), strings.ReplaceAll(s, "/", "-"))
			inputs = append(inputs, input{name: name, path: s + "\x00" + c.cc + "\x00" + strings.Join(c.flags, "\x00")})
		}
	}
	for _, lib := range []debLib{debLibs["zlib"], debLibs["sqlite"]} {
		inputs = append(inputs, input{name: lib.archive, path: "archive\x00" + lib.archive + "\x00" + lib.pkg})
	}

	for _, in := range inputs {
		in := in
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			parts := strings.Split(in.path, "\x00")
			dir := workDir(t)
			var objs []string
			if parts[0] == "archive" {
				archive := needArchive(t, debLib{archive: parts[1], pkg: parts[2]})
				objs = extractArchive(t, archive, filepath.Join(dir, "members"))
			} else {
				objs = []string{compile(t, parts[1], parts[2:], testdata(parts[0]))}
			}
			orig, outs := rewriteAll(t, cfg.none, objs, dir)
			bad := 0
			for i := range orig {
				if err := sameObject(orig[i], outs[i]); err != nil {
					bad++
					if bad <= 5 {
						t.Errorf("%s: %v", filepath.Base(orig[i]), err)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d objects changed by a rewrite that selects no function (rules %s); artifacts kept in %s",
					bad, len(orig), rel(cfg.none), rel(dir))
			}
		})
	}
}

// sameObject compares two ELF relocatable objects section by section and
// returns the first difference.
func sameObject(a, b string) error {
	fa, err := elf.Open(a)
	if err != nil {
		return fmt.Errorf("original: %v", err)
	}
	defer fa.Close()
	fb, err := elf.Open(b)
	if err != nil {
		return fmt.Errorf("rewritten: %v", err)
	}
	defer fb.Close()

	ha, hb := fa.FileHeader, fb.FileHeader
	if ha.Class != hb.Class || ha.Data != hb.Data || ha.OSABI != hb.OSABI || ha.Type != hb.Type || ha.Machine != hb.Machine || ha.Entry != hb.Entry {
		return fmt.Errorf("ELF header: %+v != %+v", ha, hb)
	}
	if len(fa.Sections) != len(fb.Sections) {
		return fmt.Errorf("section count %d != %d (original %s; rewritten %s)", len(fa.Sections), len(fb.Sections), sectionNames(fa), sectionNames(fb))
	}
	for i := range fa.Sections {
		sa, sb := fa.Sections[i], fb.Sections[i]
		where := fmt.Sprintf("section [%d] %s", i, sa.Name)
		if sa.Name != sb.Name {
			return fmt.Errorf("%s: name %q != %q", where, sa.Name, sb.Name)
		}
		if sa.Type != sb.Type || sa.Flags != sb.Flags || sa.Addr != sb.Addr || sa.Addralign != sb.Addralign || sa.Entsize != sb.Entsize || sa.Size != sb.Size {
			return fmt.Errorf("%s: header differs: type %v/%v flags %v/%v addr %#x/%#x align %d/%d entsize %d/%d size %d/%d",
				where, sa.Type, sb.Type, sa.Flags, sb.Flags, sa.Addr, sb.Addr, sa.Addralign, sb.Addralign, sa.Entsize, sb.Entsize, sa.Size, sb.Size)
		}
		if linkName(fa, sa.Link) != linkName(fb, sb.Link) {
			return fmt.Errorf("%s: sh_link %s != %s", where, linkName(fa, sa.Link), linkName(fb, sb.Link))
		}
		switch sa.Type {
		case elf.SHT_RELA, elf.SHT_REL:
			if linkName(fa, sa.Info) != linkName(fb, sb.Info) {
				return fmt.Errorf("%s: sh_info (target) %s != %s", where, linkName(fa, sa.Info), linkName(fb, sb.Info))
			}
			if err := sameRelocs(fa, fb, sa, sb); err != nil {
				return fmt.Errorf("%s: %v", where, err)
			}
			continue
		case elf.SHT_SYMTAB, elf.SHT_DYNSYM:
			if sa.Info != sb.Info {
				return fmt.Errorf("%s: sh_info (first global) %d != %d", where, sa.Info, sb.Info)
			}
			continue // compared below as symbols
		case elf.SHT_STRTAB, elf.SHT_NOBITS:
			continue // string tables may be re-laid out; names are compared where used
		}
		if sa.Info != sb.Info {
			return fmt.Errorf("%s: sh_info %d != %d", where, sa.Info, sb.Info)
		}
		da, err1 := sa.Data()
		db, err2 := sb.Data()
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%s: reading contents: %v / %v", where, err1, err2)
		}
		if !bytes.Equal(da, db) {
			off := 0
			for off < len(da) && off < len(db) && da[off] == db[off] {
				off++
			}
			return fmt.Errorf("%s: contents differ at offset %#x (of %#x bytes)", where, off, len(da))
		}
	}
	syma, err1 := fa.Symbols()
	symb, err2 := fb.Symbols()
	if err1 != nil && err1 != elf.ErrNoSymbols || err2 != nil && err2 != elf.ErrNoSymbols {
		return fmt.Errorf("symbols: %v / %v", err1, err2)
	}
	if len(syma) != len(symb) {
		return fmt.Errorf("symbol count %d != %d", len(syma), len(symb))
	}
	for i := range syma {
		x, y := symbolKey(fa, syma[i]), symbolKey(fb, symb[i])
		if x != y {
			return fmt.Errorf("symbol %d: %s != %s", i+1, x, y)
		}
	}
	return nil
}

func sectionNames(f *elf.File) string {
	var s []string
	for _, sec := range f.Sections {
		s = append(s, sec.Name)
	}
	return strings.Join(s, " ")
}

func linkName(f *elf.File, idx uint32) string {
	if idx == 0 {
		return "-"
	}
	if int(idx) < len(f.Sections) {
		return fmt.Sprintf("%s(%d)", f.Sections[idx].Name, idx)
	}
	return fmt.Sprintf("#%d", idx)
}

func shndxName(f *elf.File, idx elf.SectionIndex) string {
	switch idx {
	case elf.SHN_UNDEF:
		return "UND"
	case elf.SHN_ABS:
		return "ABS"
	case elf.SHN_COMMON:
		return "COM"
	}
	if int(idx) < len(f.Sections) {
		return f.Sections[idx].Name
	}
	return fmt.Sprintf("#%d", idx)
}

func symbolKey(f *elf.File, s elf.Symbol) string {
	return fmt.Sprintf("%q value=%#x size=%d info=%#x other=%#x section=%s", s.Name, s.Value, s.Size, s.Info, s.Other, shndxName(f, s.Section))
}

// symbolName names the symbol a relocation refers to; section symbols are
// named by their section.
func relocSymbol(f *elf.File, syms []elf.Symbol, idx uint32) string {
	if idx == 0 {
		return "-"
	}
	if int(idx) > len(syms) {
		return fmt.Sprintf("#%d", idx)
	}
	s := syms[idx-1]
	if elf.ST_TYPE(s.Info) == elf.STT_SECTION {
		return "section:" + shndxName(f, s.Section)
	}
	return s.Name
}

type reloc struct {
	off  uint64
	typ  uint32
	sym  string
	add  int64
	desc string
}

func readRelocs(f *elf.File, s *elf.Section) ([]reloc, error) {
	data, err := s.Data()
	if err != nil {
		return nil, err
	}
	syms, _ := f.Symbols()
	var out []reloc
	ent := 24
	if s.Type == elf.SHT_REL {
		ent = 16
	}
	if len(data)%ent != 0 {
		return nil, fmt.Errorf("size %d is not a multiple of %d", len(data), ent)
	}
	for i := 0; i+ent <= len(data); i += ent {
		off := binary.LittleEndian.Uint64(data[i:])
		info := binary.LittleEndian.Uint64(data[i+8:])
		var add int64
		if ent == 24 {
			add = int64(binary.LittleEndian.Uint64(data[i+16:]))
		}
		r := reloc{off: off, typ: uint32(info), sym: relocSymbol(f, syms, uint32(info>>32)), add: add}
		r.desc = fmt.Sprintf("offset %#x %v %s%+d", r.off, elf.R_X86_64(r.typ), r.sym, r.add)
		out = append(out, r)
	}
	return out, nil
}

func sameRelocs(fa, fb *elf.File, sa, sb *elf.Section) error {
	ra, err := readRelocs(fa, sa)
	if err != nil {
		return fmt.Errorf("original: %v", err)
	}
	rb, err := readRelocs(fb, sb)
	if err != nil {
		return fmt.Errorf("rewritten: %v", err)
	}
	if len(ra) != len(rb) {
		return fmt.Errorf("relocation count %d != %d", len(ra), len(rb))
	}
	for i := range ra {
		if ra[i].desc != rb[i].desc {
			return fmt.Errorf("relocation %d: %s != %s", i, ra[i].desc, rb[i].desc)
		}
	}
	return nil
}

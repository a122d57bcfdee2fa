package elfobj

import (
	"debug/elf"
	"fmt"
)

// RemoveSections deletes the sections drop selects, and with them the
// relocation sections that apply to them, the symbols defined in them,
// their memberships in section groups (and groups left empty), and the
// symbols dropSym selects (nil: none). Every index that remains (sections,
// symbols, links, infos, group members, relocation symbols) is renumbered.
// It fails, changing nothing, if what remains refers to something removed:
// a relocation to a removed symbol, a link to a removed section, the
// section name table, symbol table or its string table.
func (f *File) RemoveSections(drop func(*Section) bool, dropSym func(*Symbol) bool) error {
	n := len(f.Sections)
	gone := make([]bool, n)
	for i, s := range f.Sections {
		gone[i] = i > 0 && drop(s)
	}
	for i, s := range f.Sections {
		if s.Type == elf.SHT_RELA && int(s.Info) < n && gone[s.Info] {
			gone[i] = true
		}
	}
	// Group members that go; a group left without members goes too.
	members := make(map[int][]uint32)
	for i, s := range f.Sections {
		if s.Type != elf.SHT_GROUP || gone[i] || len(s.Data) < 4 {
			continue
		}
		var keep []uint32
		for k := 4; k+4 <= len(s.Data); k += 4 {
			if m := le.Uint32(s.Data[k:]); int(m) >= n || !gone[m] {
				keep = append(keep, m)
			}
		}
		members[i] = keep
		if len(keep) == 0 {
			gone[i] = true
		}
	}
	for _, k := range []int{f.ShStrNdx, f.SymtabNdx} {
		if k > 0 && gone[k] {
			return fmt.Errorf("section %d (%s) cannot be removed", k, f.Sections[k].Name)
		}
	}
	if f.SymtabNdx > 0 && gone[f.Sections[f.SymtabNdx].Link] {
		return fmt.Errorf("the symbol table's string table cannot be removed")
	}
	secMap := make([]uint32, n)
	k := uint32(0)
	for i := range f.Sections {
		if !gone[i] {
			secMap[i] = k
			k++
		}
	}
	// Symbols defined in removed sections go.
	symGone := make([]bool, len(f.Symbols))
	symMap := make([]uint32, len(f.Symbols))
	k = 0
	for i := range f.Symbols {
		sym := &f.Symbols[i]
		symGone[i] = i > 0 && (!isSpecialShndx(sym.Shndx) && int(sym.Shndx) < n && gone[sym.Shndx] ||
			dropSym != nil && dropSym(sym))
		if !symGone[i] {
			symMap[i] = k
			k++
		}
	}
	// Check that nothing kept refers to something removed.
	for i, s := range f.Sections {
		if gone[i] {
			continue
		}
		for _, r := range s.Relocs {
			if int(r.Sym) < len(symGone) && symGone[r.Sym] {
				return fmt.Errorf("section %s: relocation at 0x%x refers to %s, which is removed", s.Name, r.Off, f.symName(r.Sym))
			}
		}
		if linksSection(s) && s.Link > 0 && int(s.Link) < n && gone[s.Link] {
			return fmt.Errorf("section %s: linked to section %s, which is removed", s.Name, f.Sections[s.Link].Name)
		}
		if s.Type == elf.SHT_GROUP && int(s.Info) < len(symGone) && symGone[s.Info] {
			return fmt.Errorf("section %s: group signature %s is removed", s.Name, f.symName(s.Info))
		}
	}
	// Renumber.
	var secs []*Section
	for i, s := range f.Sections {
		if gone[i] {
			continue
		}
		if linksSection(s) && int(s.Link) < n {
			s.Link = secMap[s.Link]
		}
		switch {
		case s.Type == elf.SHT_GROUP:
			if int(s.Info) < len(symMap) {
				s.Info = symMap[s.Info]
			}
			d := append([]byte(nil), s.Data[:4]...)
			for _, m := range members[i] {
				if int(m) < n {
					m = secMap[m]
				}
				d = le.AppendUint32(d, m)
			}
			s.Data = d
		case s.Type == elf.SHT_RELA || s.Flags&elf.SHF_INFO_LINK != 0:
			if int(s.Info) < n {
				s.Info = secMap[s.Info]
			}
		}
		for j := range s.Relocs {
			s.Relocs[j].Sym = symMap[s.Relocs[j].Sym]
		}
		secs = append(secs, s)
	}
	var syms []Symbol
	for i, sym := range f.Symbols {
		if symGone[i] {
			continue
		}
		if !isSpecialShndx(sym.Shndx) && int(sym.Shndx) < n {
			sym.Shndx = secMap[sym.Shndx]
		}
		syms = append(syms, sym)
	}
	f.ShStrNdx = int(secMap[f.ShStrNdx])
	if f.SymtabNdx > 0 {
		f.SymtabNdx = int(secMap[f.SymtabNdx])
	}
	f.Sections, f.Symbols = secs, syms
	return nil
}

// linksSection reports whether sh_link of s is a section index.
func linksSection(s *Section) bool {
	switch s.Type {
	case elf.SHT_RELA, elf.SHT_REL, elf.SHT_SYMTAB, elf.SHT_DYNSYM, elf.SHT_GROUP, elf.SHT_SYMTAB_SHNDX,
		elf.SHT_HASH, elf.SHT_GNU_HASH, elf.SHT_DYNAMIC, elf.SHT_GNU_VERSYM, elf.SHT_GNU_VERDEF, elf.SHT_GNU_VERNEED:
		return true
	}
	return s.Flags&elf.SHF_LINK_ORDER != 0
}

func (f *File) symName(k uint32) string {
	if int(k) < len(f.Symbols) && f.Symbols[k].Name != "" {
		return fmt.Sprintf("symbol %d (%s)", k, f.Symbols[k].Name)
	}
	return fmt.Sprintf("symbol %d", k)
}

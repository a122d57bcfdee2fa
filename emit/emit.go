// Package emit writes an IBR with insertions back into its ELF object: it
// lays out every code section that received code again (re-encoding
// branches, relaxing rel8 to rel32 until every branch reaches), and makes
// everything that referred to the old layout follow: relocation offsets and
// addends in every section, symbol values and sizes, .eh_frame FDE ranges
// and CFA advances, and the call-site tables of C++ exception handling
// (.gcc_except_table). Code sections without insertions are left exactly as
// they are.
package emit

import (
	"cmp"
	"debug/elf"
	"fmt"
	"math"
	"slices"

	"hijack/elfobj"
	"hijack/ibr"
)

// Emit applies the insertions recorded in o to o.File. Warnings about
// things that stay approximate go to warn.
func Emit(o *ibr.Object, warn func(string)) error {
	f := o.File
	maps := make(map[int]*codeMap)
	for _, s := range o.Code {
		if s.Insertions == 0 {
			continue
		}
		if !s.Rewritable() {
			return fmt.Errorf("section %s: code was inserted into a section that is not rewritable: %s", s.Elf.Name, s.Problem)
		}
		m := newCodeMap(s)
		m.relax()
		limit := uint64(math.MaxUint32) // the code map's offsets are 32-bit
		if f.MaxSize != 0 {
			limit = min(limit, f.MaxSize)
		}
		if n := m.size; n > limit {
			return fmt.Errorf("section %s: %w: %d bytes of code, more than %d bytes in all", s.Elf.Name, elfobj.ErrTooLarge, n, limit)
		}
		maps[s.Index] = m
	}
	if len(maps) == 0 {
		return nil
	}
	// Everything below reads the old relocations and symbols, so it runs
	// before any of them changes.
	rebuilt, err := rewriteEHFrames(f, maps)
	if err != nil {
		return err
	}
	dbg, err := rewriteDebugInfo(f, maps, warn)
	if err != nil {
		return err
	}
	for idx, rb := range dbg {
		rebuilt[idx] = rb
	}
	newData := make(map[int][]byte)
	for idx, m := range maps {
		d, err := m.write()
		if err != nil {
			return err
		}
		newData[idx] = d
	}
	if err := remapRefs(o, maps); err != nil {
		return err
	}
	remapFieldOffsets(f, maps)
	remapSymbols(f, maps)
	if err := applyRebuilt(f, rebuilt); err != nil {
		return err
	}
	for idx, d := range newData {
		f.Sections[idx].Data = d
		f.Sections[idx].Size = uint64(len(d))
		f.Sections[idx].Align = max(f.Sections[idx].Align, maps[idx].align)
	}
	if err := addSnippetRelocs(f, maps); err != nil {
		return err
	}
	return nil
}

// newValue returns the value symbol k has after the layout change.
func newValue(f *elfobj.File, maps map[int]*codeMap, k uint32) (uint64, error) {
	sym := &f.Symbols[k]
	m := maps[int(sym.Shndx)]
	if m == nil || sym.Shndx >= 0xffff0000 {
		return sym.Value, nil
	}
	return m.addrOf(sym.Value)
}

// remapRefs recomputes the addend of every relocation that refers to moved
// code so that it refers to the same instruction.
func remapRefs(o *ibr.Object, maps map[int]*codeMap) error {
	f := o.File
	type update struct {
		sec, idx int
		addend   int64
	}
	var ups []update
	for _, ref := range o.Refs {
		m := maps[ref.Target.Index]
		if m == nil {
			continue
		}
		r := f.Sections[ref.RelaSec].Relocs[ref.Index]
		nv, err := newValue(f, maps, r.Sym)
		if err != nil {
			return err
		}
		t := int64(m.addr(ref.Inst, ref.Delta))
		ups = append(ups, update{ref.RelaSec, ref.Index, t - int64(nv) - ref.Adjust})
	}
	for _, u := range ups {
		f.Sections[u.sec].Relocs[u.idx].Addend = u.addend
	}
	return nil
}

// remapFieldOffsets moves the offsets of relocations that patch moved code.
func remapFieldOffsets(f *elfobj.File, maps map[int]*codeMap) {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA {
			continue
		}
		m := maps[int(s.Info)]
		if m == nil {
			continue
		}
		for k := range s.Relocs {
			s.Relocs[k].Off = m.fieldOf(s.Relocs[k].Off)
		}
	}
}

// remapSymbols moves symbols defined in moved code; a symbol's size follows
// its end.
func remapSymbols(f *elfobj.File, maps map[int]*codeMap) {
	for k := range f.Symbols {
		sym := &f.Symbols[k]
		m := maps[int(sym.Shndx)]
		if m == nil || sym.Shndx >= 0xffff0000 {
			continue
		}
		start, err := m.addrOf(sym.Value)
		if err != nil {
			continue // Build checked every symbol that starts code.
		}
		if sym.Size > 0 {
			if end, err := m.addrOf(sym.Value + sym.Size); err == nil {
				sym.Size = end - start
			}
		}
		if sym.Type() == elf.STT_SECTION {
			sym.Size = 0
		}
		sym.Value = start
	}
}

// addSnippetRelocs adds the relocations of inserted code to the relocation
// sections of the code sections, creating them where missing.
func addSnippetRelocs(f *elfobj.File, maps map[int]*codeMap) error {
	relocs := f.RelocSections()
	syms := make(map[string]uint32)
	idxs := make([]int, 0, len(maps))
	for idx := range maps {
		idxs = append(idxs, idx)
	}
	slices.Sort(idxs)
	for _, idx := range idxs {
		m := maps[idx]
		// Counted first: the relocations go straight into the section's,
		// grown once (vptrace inserts a few per site: appending them to
		// a slice of their own, then to the section's, was a sixth of
		// what a vptrace rewrite allocated).
		n := 0
		for i := range m.sec.Insts {
			for _, sn := range m.sec.Insts[i].Inserted() {
				n += len(sn.Relocs)
			}
		}
		for _, c := range m.cold {
			n += len(c.sn.Cold.Relocs)
		}
		if n == 0 {
			continue
		}
		var rs *elfobj.Section
		if rr := relocs[idx]; len(rr) > 0 {
			rs = f.Sections[rr[0]]
		} else {
			if f.SymtabNdx == 0 {
				return fmt.Errorf("inserted code needs relocations but the object has no symbol table")
			}
			code := f.Sections[idx]
			rs = &elfobj.Section{Name: ".rela" + code.Name, Type: elf.SHT_RELA, Flags: elf.SHF_INFO_LINK,
				Link: uint32(f.SymtabNdx), Info: uint32(idx), Align: 8, Entsize: 24}
			if code.Flags&elf.SHF_GROUP != 0 {
				rs.Flags |= elf.SHF_GROUP
				defer addToGroup(f, idx, rs)
			}
			f.AddSection(rs)
		}
		rs.Relocs = slices.Grow(rs.Relocs, n)
		add := func(pos uint64, sns []*ibr.Snippet) {
			for _, sn := range sns {
				for _, r := range sn.Relocs {
					k, ok := r.SymIndex, r.SymIndex != 0
					if !ok {
						if k, ok = syms[r.Sym]; !ok {
							k = symbolFor(f, r.Sym)
							syms[r.Sym] = k
						}
					}
					rs.Relocs = append(rs.Relocs, elfobj.Rela{Off: pos + uint64(r.Off), Type: r.Type, Sym: k, Addend: r.Addend})
				}
				pos += uint64(len(sn.Code))
			}
		}
		for i := range m.sec.Insts {
			add(uint64(m.group[i]), m.sec.Insts[i].Before())
			add(uint64(m.after[i]), m.sec.Insts[i].After())
		}
		for _, c := range m.cold {
			add(uint64(c.at), []*ibr.Snippet{c.sn.Cold})
		}
		slices.SortStableFunc(rs.Relocs, func(a, b elfobj.Rela) int { return cmp.Compare(a.Off, b.Off) })
	}
	return nil
}

// symbolFor returns the index of the symbol inserted code refers to by
// name, adding an undefined global symbol if the object has none.
func symbolFor(f *elfobj.File, name string) uint32 {
	if k := f.FindSymbol(name); k != 0 {
		return k
	}
	return f.AddSymbol(elfobj.Symbol{Name: name, Info: byte(elf.STB_GLOBAL)<<4 | byte(elf.STT_NOTYPE)})
}

// addToGroup makes a new relocation section a member of the COMDAT group
// of the code section it applies to.
func addToGroup(f *elfobj.File, code int, rs *elfobj.Section) {
	idx := -1
	for i, s := range f.Sections {
		if s == rs {
			idx = i
		}
	}
	for _, g := range f.Sections {
		if g.Type != elf.SHT_GROUP {
			continue
		}
		for k := 4; k+4 <= len(g.Data); k += 4 {
			if int(le32(g.Data[k:])) == code {
				g.Data = append(g.Data, 0, 0, 0, 0)
				put32(g.Data[len(g.Data)-4:], uint32(idx))
				return
			}
		}
	}
}

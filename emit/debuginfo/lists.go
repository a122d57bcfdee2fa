package debuginfo

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"hijack/internal/leb128"
)

// listKind says how a referenced place in a list section is read.
type listKind uint8

const (
	listRanges4 listKind = iota + 1 // .debug_ranges (DWARF 2-4)
	listLoc4                        // .debug_loc (DWARF 2-4)
	listRng5                        // .debug_rnglists
	listLoc5                        // .debug_loclists
	listOpaque                      // location views (DW_AT_GNU_locviews): copied as they are
)

// listUse is a reference to a list from a unit.
type listUse struct {
	kind listKind
	u    *dwUnit // nil when only an offset table refers to the list
}

// listUses collects, per section and offset, the references to lists.
type listUses map[int]map[uint64][]listUse

func (l listUses) add(sec int, off uint64, use listUse) {
	m := l[sec]
	if m == nil {
		m = make(map[uint64][]listUse)
		l[sec] = m
	}
	m[off] = append(m[off], use)
}

// kindOfListSection returns the list kind of a section name.
func kindOfListSection(name string) listKind {
	switch name {
	case ".debug_ranges":
		return listRanges4
	case ".debug_loc":
		return listLoc4
	case ".debug_rnglists":
		return listRng5
	case ".debug_loclists":
		return listLoc5
	}
	return 0
}

// rewriteInfo patches constant-class addresses in every .debug_info and
// rewrites the list sections its units refer to.
func (d *debugRewrite) rewriteInfo(install func(int, *Section, error)) {
	uses := make(listUses)
	tables := make(map[[2]uint64]*dwUnit) // offset table (section, base) -> unit
	walked := true
	for _, sec := range d.byName[".debug_info"] {
		if err := d.readable(sec); err != nil {
			install(sec, nil, err)
			walked = false
			continue
		}
		data := bytes.Clone(d.data(sec))
		changed := false
		err := d.walkInfo(sec, func(u *dwUnit, e *dwDIE) error {
			if e.off == u.dies {
				if u.hasRngBase {
					tables[[2]uint64{uint64(u.rngBaseSec), u.rngBase}] = u
				}
				if u.hasLocBase {
					tables[[2]uint64{uint64(u.locBaseSec), u.locBase}] = u
				}
			}
			c, err := d.patchDIE(u, e, data)
			if err != nil {
				d.warnf("section %s: DIE at 0x%x: %v", d.f.SectionName(sec), e.off, err)
			}
			changed = changed || c
			for i := range e.attrs {
				if err := d.collectList(u, &e.attrs[i], uses); err != nil {
					d.warnf("section %s: DIE at 0x%x: %v", d.f.SectionName(sec), e.off, err)
				}
			}
			return nil
		})
		if err != nil {
			install(sec, nil, fmt.Errorf("%v (not understood)", err))
			walked = false
			continue
		}
		if changed {
			install(sec, patchedSection(data), nil)
		}
	}
	var listSecs []int
	for _, name := range []string{".debug_ranges", ".debug_loc", ".debug_rnglists", ".debug_loclists"} {
		listSecs = append(listSecs, d.byName[name]...)
	}
	for _, sec := range listSecs {
		if !walked {
			install(sec, nil, fmt.Errorf("its lists could not be found because .debug_info was not understood"))
			continue
		}
		switch kindOfListSection(d.f.Sections[sec].Name) {
		case listRanges4, listLoc4:
			rb, err := d.rewriteLists4(sec, uses[sec])
			install(sec, rb, err)
		case listRng5, listLoc5:
			rb, err := d.rewriteLists5(sec, uses[sec], tables)
			install(sec, rb, err)
		}
	}
}

// patchDIE recomputes DW_AT_high_pc and DW_AT_entry_pc of constant class
// (offsets from DW_AT_low_pc) in data. It reports whether it changed
// anything.
func (d *debugRewrite) patchDIE(u *dwUnit, e *dwDIE, data []byte) (bool, error) {
	low := e.find(dwAtLowPC)
	changed := false
	for _, name := range []uint64{dwAtLowPC, dwAtCallReturnPC, dwAtCallPC} {
		if a := e.find(name); a != nil && dwIsConstForm(a.form) {
			return false, fmt.Errorf("address attribute 0x%x of constant class (form 0x%x) is not understood", name, a.form)
		}
	}
	for _, name := range []uint64{dwAtHighPC, dwAtEntryPC} {
		a := e.find(name)
		if a == nil || !dwIsConstForm(a.form) {
			continue
		}
		what := "DW_AT_high_pc"
		if name == dwAtEntryPC {
			what = "DW_AT_entry_pc"
		}
		if low == nil {
			return changed, fmt.Errorf("%s of constant class without DW_AT_low_pc is not understood", what)
		}
		base, err := d.addrAttr(u, low)
		if err != nil {
			return changed, fmt.Errorf("DW_AT_low_pc: %w", err)
		}
		if !d.moved(base) {
			continue
		}
		nv, err := d.mapDelta(base, a.val)
		if err != nil {
			return changed, fmt.Errorf("%s: %w", what, err)
		}
		if nv == a.val {
			continue
		}
		if a.form == dwFormImplicitConst {
			return changed, fmt.Errorf("%s in DW_FORM_implicit_const cannot change", what)
		}
		if err := dwPutConst(data[a.off:a.off+a.size], a.form, nv); err != nil {
			return changed, fmt.Errorf("%s: %w", what, err)
		}
		changed = true
	}
	return changed, nil
}

// collectList records the list an attribute refers to, if any.
func (d *debugRewrite) collectList(u *dwUnit, a *dwAttr, uses listUses) error {
	isRange := a.name == dwAtRanges || a.name == dwAtStartScope
	isLoc := dwIsLoclistAttr(a.name)
	if !isRange && !isLoc && a.name != dwAtGNULocviews {
		return nil
	}
	switch a.form {
	case dwFormSecOffset, dwFormData4, dwFormData8:
		if a.form != dwFormSecOffset {
			// DWARF 2 and 3 used data4/data8 for list offsets; constants
			// are only taken for offsets when a relocation says so.
			if _, ok := d.reloc(u.sec, a.off); !ok || u.version >= 4 {
				return nil
			}
		}
		dflt := ".debug_loc"
		switch {
		case isRange && u.version >= 5:
			dflt = ".debug_rnglists"
		case isRange:
			dflt = ".debug_ranges"
		case u.version >= 5:
			dflt = ".debug_loclists"
		}
		sec, off, err := d.secRef(u.sec, a.off, a.val, dflt)
		if err != nil {
			return err
		}
		kind := kindOfListSection(d.f.Sections[sec].Name)
		if kind == 0 {
			return nil // a split DWARF or unknown section
		}
		if a.name == dwAtGNULocviews {
			kind = listOpaque
		}
		uses.add(sec, off, listUse{kind, u})
	case dwFormRnglistx, dwFormLoclistx:
		base, bsec, ok := u.rngBase, u.rngBaseSec, u.hasRngBase
		kind := listRng5
		if a.form == dwFormLoclistx {
			base, bsec, ok, kind = u.locBase, u.locBaseSec, u.hasLocBase, listLoc5
		}
		if !ok {
			return fmt.Errorf("list index %d in a unit without a list base", a.val)
		}
		b := d.data(bsec)
		at := base + a.val*uint64(u.offSize)
		r := &dwReader{b: b, p: at}
		v := r.uN(u.offSize)
		if r.err != nil {
			return fmt.Errorf("list index %d beyond %s", a.val, d.f.SectionName(bsec))
		}
		uses.add(bsec, base+v, listUse{kind, u})
	}
	return nil
}

// unitFor returns the unit all uses of a list agree on.
func unitFor(us []listUse) (*dwUnit, listKind, error) {
	var u *dwUnit
	var kind listKind
	for _, x := range us {
		if x.kind == listOpaque {
			if kind != 0 && kind != listOpaque {
				return nil, 0, fmt.Errorf("used both as a list and as location views")
			}
			kind = listOpaque
			continue
		}
		if kind != 0 && kind != x.kind {
			return nil, 0, fmt.Errorf("used as two kinds of list")
		}
		kind = x.kind
		if x.u == nil {
			continue
		}
		if u != nil && u != x.u && (u.base != x.u.base || u.addrSize != x.u.addrSize || u.addrBase != x.u.addrBase || u.addrSec != x.u.addrSec) {
			return nil, 0, fmt.Errorf("shared by units with different base addresses")
		}
		u = x.u
	}
	return u, kind, nil
}

// rewriteLists4 patches the range and location lists of a DWARF 2-4
// .debug_ranges or .debug_loc section in place: entries relative to a base
// address (the unit's, or a base address selection entry's) get new
// offsets; entries with relocations follow by themselves.
func (d *debugRewrite) rewriteLists4(sec int, uses map[uint64][]listUse) (*Section, error) {
	old := d.data(sec)
	data := bytes.Clone(old)
	isLoc := kindOfListSection(d.f.Sections[sec].Name) == listLoc4
	offs := make([]uint64, 0, len(uses))
	for off := range uses {
		offs = append(offs, off)
	}
	slices.Sort(offs)
	done := make(map[uint64]uint64)
	for _, off := range offs {
		u, kind, err := unitFor(uses[off])
		if err != nil {
			d.warnf("section %s: list at 0x%x: %v: left as it was", d.f.SectionName(sec), off, err)
			continue
		}
		if kind == listOpaque || u == nil {
			continue
		}
		ps, err := d.patchList4(sec, off, u, isLoc)
		for _, p := range ps {
			if v, ok := done[p.at]; ok && v != p.v {
				err = fmt.Errorf("lists sharing an entry at 0x%x give it different values", p.at)
			}
		}
		if err != nil {
			d.warnf("section %s: list at 0x%x: %v: left as it was", d.f.SectionName(sec), off, err)
			continue
		}
		for _, p := range ps {
			done[p.at] = p.v
			if u.addrSize == 8 {
				binary.LittleEndian.PutUint64(data[p.at:], p.v)
			} else {
				put32(data[p.at:], uint32(p.v))
			}
		}
	}
	if bytes.Equal(data, old) {
		return nil, nil
	}
	return patchedSection(data), nil
}

// listPatch is a new value for an address field of a DWARF 2-4 list.
type listPatch struct{ at, v uint64 }

// patchList4 computes the new values of the fields of the list at off.
func (d *debugRewrite) patchList4(sec int, off uint64, u *dwUnit, isLoc bool) ([]listPatch, error) {
	as := uint64(u.addrSize)
	maxAddr := uint64(1)<<(8*as) - 1
	if as == 8 {
		maxAddr = ^uint64(0)
	}
	base := u.base
	var ps []listPatch
	r := &dwReader{b: d.data(sec), p: off}
	for {
		bf := r.p
		bv := r.uN(int(as))
		ef := r.p
		ev := r.uN(int(as))
		if r.err != nil {
			return nil, fmt.Errorf("entry at 0x%x: %w", bf, r.err)
		}
		_, rb := d.reloc(sec, bf)
		_, re := d.reloc(sec, ef)
		if !rb && !re && bv == 0 && ev == 0 {
			break // end of list
		}
		if !rb && bv == maxAddr {
			loc, err := d.locAt(sec, ef, ev)
			if err != nil {
				return nil, fmt.Errorf("base address selection at 0x%x: %w", bf, err)
			}
			base = loc
			continue
		}
		switch {
		case rb != re:
			return nil, fmt.Errorf("entry at 0x%x mixes a relocated and a constant address", bf)
		case !rb && d.moved(base):
			nb, err := d.mapDelta(base, bv)
			if err != nil {
				return nil, fmt.Errorf("entry at 0x%x: %w", bf, err)
			}
			ne, err := d.mapDelta(base, ev)
			if err != nil {
				return nil, fmt.Errorf("entry at 0x%x: %w", bf, err)
			}
			if nb == 0 && ne == 0 {
				return nil, fmt.Errorf("entry at 0x%x would become an end of list", bf)
			}
			if ne > maxAddr {
				return nil, fmt.Errorf("entry at 0x%x: offset does not fit", bf)
			}
			ps = append(ps, listPatch{bf, nb}, listPatch{ef, ne})
		}
		if isLoc {
			n := r.u16()
			r.skip(n)
			if r.err != nil {
				return nil, fmt.Errorf("entry at 0x%x: %w", bf, r.err)
			}
		}
	}
	return ps, nil
}

// listUnit is one unit (contribution) of .debug_rnglists or
// .debug_loclists.
type listUnit struct {
	start, arr, arrEnd, end uint64
	offSize, addrSize       int
}

// rewriteLists5 rebuilds a .debug_rnglists or .debug_loclists section:
// entries may change size, so lists move; unit lengths, offset tables and
// every reference into the section follow.
func (d *debugRewrite) rewriteLists5(sec int, uses map[uint64][]listUse, tables map[[2]uint64]*dwUnit) (*Section, error) {
	data := d.data(sec)
	isLoc := kindOfListSection(d.f.Sections[sec].Name) == listLoc5
	kind := listRng5
	if isLoc {
		kind = listLoc5
	}
	all := make(map[uint64][]listUse)
	for off, us := range uses {
		all[off] = append(all[off], us...)
	}
	b := newDwBuilder(data)
	var units []listUnit
	bounds := []uint64{0, uint64(len(data))}
	r := &dwReader{b: data}
	for r.p < uint64(len(data)) {
		lu := listUnit{start: r.p}
		_, lu.offSize, lu.end = r.initialLength()
		version := r.u16()
		lu.addrSize = int(r.u8())
		seg := r.u8()
		count := r.u32()
		lu.arr = r.p
		if r.err != nil {
			return nil, fmt.Errorf("unit at 0x%x: %w", lu.start, r.err)
		}
		if version != 5 || seg != 0 || (lu.addrSize != 4 && lu.addrSize != 8) {
			return nil, fmt.Errorf("unit at 0x%x: version %d, segment selector size %d, address size %d are not understood", lu.start, version, seg, lu.addrSize)
		}
		lu.arrEnd = lu.arr + count*uint64(lu.offSize)
		if count > uint64(len(data)) || lu.arrEnd > lu.end {
			return nil, fmt.Errorf("unit at 0x%x: offset table beyond the unit", lu.start)
		}
		bounds = append(bounds, lu.start, lu.arr, lu.arrEnd, lu.end)
		tu := tables[[2]uint64{uint64(sec), lu.arr}]
		for i := uint64(0); i < count; i++ {
			field := lu.arr + i*uint64(lu.offSize)
			v := r.uN(lu.offSize)
			t := lu.arr + v
			if t < lu.arrEnd || t >= lu.end {
				return nil, fmt.Errorf("offset table entry at 0x%x points outside its unit", field)
			}
			bounds = append(bounds, t)
			all[t] = append(all[t], listUse{kind, tu})
			arr, os := lu.arr, lu.offSize
			b.fixup(func(mapOff func(uint64) (uint64, error), out []byte) error {
				nf, err := mapOff(field)
				if err != nil {
					return err
				}
				na, err := mapOff(arr)
				if err != nil {
					return err
				}
				nt, err := mapOff(t)
				if err != nil {
					return err
				}
				if os == 4 {
					put32(out[nf:], uint32(nt-na))
				} else {
					binary.LittleEndian.PutUint64(out[nf:], nt-na)
				}
				return nil
			})
		}
		b.fixLength(lu.start, lu.end, lu.offSize)
		units = append(units, lu)
		r.p = lu.end
	}
	for off := range all {
		bounds = append(bounds, off)
	}
	bounds = append(bounds, d.targets[sec]...)
	bounds = dwBounds(bounds, uint64(len(data)))
	ui := 0
	var carry *listCarry // a list that runs on into the chunk at hand
	isList := func(off uint64) bool {
		_, k2, err := unitFor(all[off])
		return err == nil && k2 == kind
	}
	for k := 0; k+1 < len(bounds); k++ {
		lo, hi := bounds[k], bounds[k+1]
		in := carry
		carry = nil
		for ui < len(units) && units[ui].end <= lo {
			ui++
		}
		us, ok := all[lo]
		if !ok || ui >= len(units) || lo < units[ui].arrEnd {
			b.copy(lo, hi)
			continue
		}
		u, k2, err := unitFor(us)
		if err == nil && k2 != kind {
			b.copy(lo, hi) // location views
			continue
		}
		if err == nil {
			m := b.mark()
			var end uint64
			if end, carry, err = d.rewriteList5(sec, b, lo, hi, &units[ui], u, isLoc, in, isList); err == nil {
				b.copy(end, hi)
				continue
			}
			b.reset(m)
		}
		d.warnf("section %s: list at 0x%x: %v: left as it was", d.f.SectionName(sec), lo, err)
		b.copy(lo, hi)
	}
	return b.finish()
}

// listCarry is the state of a list that runs on into another list: gcc
// lets lists share their tails.
type listCarry struct {
	base     codeLoc
	haveBase bool
}

// rewriteList5 rewrites one DWARF 5 list starting at lo, up to its end or
// to hi, where another list starts. It returns the old offset just past
// what it rewrote and, if the list runs on into the list at hi, its state
// there. in is the state of a list that ran into this one: the entries
// here must mean the same in both.
func (d *debugRewrite) rewriteList5(sec int, b *dwBuilder, lo, hi uint64, lu *listUnit, u *dwUnit, isLoc bool, in *listCarry, isList func(uint64) bool) (uint64, *listCarry, error) {
	data := d.data(sec)
	r := &dwReader{b: data[:hi], p: lo}
	var base codeLoc
	haveBase := false
	if u != nil && u.hasBase {
		base, haveBase = u.base, true
	}
	ownBase := false // whether this list has set its base yet
	addrx := func(idx uint64) (codeLoc, error) {
		if u == nil {
			return codeLoc{}, fmt.Errorf("address index without a known unit")
		}
		return d.addrIndex(u, idx)
	}
	// length re-encodes a ULEB128 field [at, r.p) holding a length from
	// start.
	length := func(at uint64, start codeLoc, v uint64) error {
		if !d.moved(start) {
			b.copy(at, r.p)
			return nil
		}
		nv, err := d.mapDelta(start, v)
		if err != nil {
			return err
		}
		d.uleb(b, at, r.p, v, nv)
		return nil
	}
	as := lu.addrSize
	// Entry kinds, by list type.
	const (
		eEnd = iota
		eBaseX
		eStartxEndx
		eStartxLength
		eOffsetPair
		eDefault
		eBase
		eStartEnd
		eStartLength
		eViewPair
		eUnknown
	)
	kindOf := func(op uint64) int {
		if isLoc {
			if op <= 9 {
				return int(op)
			}
			return eUnknown
		}
		switch op {
		case 0, 1, 2, 3, 4:
			return int(op)
		case 5:
			return eBase
		case 6:
			return eStartEnd
		case 7:
			return eStartLength
		}
		return eUnknown
	}
	for {
		at := r.p
		if at == hi && hi < lu.end && isList(hi) {
			return hi, &listCarry{base, haveBase}, nil
		}
		op := r.u8()
		if r.err != nil {
			return 0, nil, fmt.Errorf("entry at 0x%x: list runs past 0x%x", at, hi)
		}
		b.copy(at, r.p)
		hasExpr := isLoc
		switch kindOf(op) {
		case eEnd:
			return r.p, nil, nil
		case eBaseX:
			f := r.p
			idx := r.uleb()
			b.copy(f, r.p)
			loc, err := addrx(idx)
			if err != nil {
				return 0, nil, fmt.Errorf("entry at 0x%x: %w", at, err)
			}
			base, haveBase, ownBase = loc, true, true
			hasExpr = false
		case eStartxEndx:
			f := r.p
			r.uleb()
			r.uleb()
			b.copy(f, r.p)
		case eStartxLength:
			f := r.p
			idx := r.uleb()
			b.copy(f, r.p)
			f = r.p
			l := r.uleb()
			if r.err != nil {
				break
			}
			start, err := addrx(idx)
			if err == nil {
				err = length(f, start, l)
			}
			if err != nil {
				return 0, nil, fmt.Errorf("entry at 0x%x: %w", at, err)
			}
		case eOffsetPair:
			f1 := r.p
			v1 := r.uleb()
			f2 := r.p
			v2 := r.uleb()
			if r.err != nil {
				break
			}
			if d.hasRelocIn(sec, f1, r.p) {
				return 0, nil, fmt.Errorf("entry at 0x%x: offset pair with a relocation", at)
			}
			if !haveBase {
				return 0, nil, fmt.Errorf("entry at 0x%x: offset pair without a base address", at)
			}
			if in != nil && !ownBase && (!in.haveBase || in.base != base) {
				return 0, nil, fmt.Errorf("entry at 0x%x: lists sharing this tail have different base addresses", at)
			}
			if !d.moved(base) {
				b.copy(f1, r.p)
				break
			}
			n1, err := d.mapDelta(base, v1)
			if err != nil {
				return 0, nil, fmt.Errorf("entry at 0x%x: %w", at, err)
			}
			n2, err := d.mapDelta(base, v2)
			if err != nil {
				return 0, nil, fmt.Errorf("entry at 0x%x: %w", at, err)
			}
			d.uleb(b, f1, f2, v1, n1)
			d.uleb(b, f2, r.p, v2, n2)
		case eDefault:
		case eBase:
			f := r.p
			v := r.uN(as)
			if r.err != nil {
				break
			}
			b.copy(f, r.p)
			loc, err := d.locAt(sec, f, v)
			if err != nil {
				return 0, nil, fmt.Errorf("entry at 0x%x: %w", at, err)
			}
			base, haveBase, ownBase = loc, true, true
			hasExpr = false
		case eStartEnd:
			f := r.p
			r.uN(as)
			r.uN(as)
			b.copy(f, r.p)
		case eStartLength:
			f := r.p
			v := r.uN(as)
			b.copy(f, r.p)
			f2 := r.p
			l := r.uleb()
			if r.err != nil {
				break
			}
			start, err := d.locAt(sec, f, v)
			if err == nil {
				err = length(f2, start, l)
			}
			if err != nil {
				return 0, nil, fmt.Errorf("entry at 0x%x: %w", at, err)
			}
		case eViewPair:
			f := r.p
			r.uleb()
			r.uleb()
			b.copy(f, r.p)
			hasExpr = false
		default:
			return 0, nil, fmt.Errorf("entry at 0x%x: kind 0x%x is not understood", at, op)
		}
		if r.err != nil {
			return 0, nil, fmt.Errorf("entry at 0x%x: %w", at, r.err)
		}
		if hasExpr {
			f := r.p
			n := r.uleb()
			r.skip(n)
			if r.err != nil {
				return 0, nil, fmt.Errorf("entry at 0x%x: %w", at, r.err)
			}
			b.copy(f, r.p)
		}
	}
}

// uleb writes a ULEB128 field that held old in [lo, hi) and now holds nv:
// the old bytes when the value is unchanged, else the shortest encoding.
func (d *debugRewrite) uleb(b *dwBuilder, lo, hi, old, nv uint64) {
	if nv == old {
		b.copy(lo, hi)
		return
	}
	b.emit(leb128.AppendUleb(nil, nv, 0)...)
}

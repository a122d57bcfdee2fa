package emit

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"hijack/elfobj"
	"hijack/emit/debuginfo"
	"hijack/ibr"
	"hijack/internal/leb128"
)

// shtX86_64Unwind is SHT_X86_64_UNWIND, the type some assemblers give
// .eh_frame.
const shtX86_64Unwind = elf.SectionType(0x70000001)

// rebuiltSection is a non-code section whose contents emit regenerates
// (.eh_frame, .gcc_except_table, and the .debug_* sections debuginfo
// rewrites): its new contents and how old offsets map to new ones.
type rebuiltSection struct {
	idx int
	debuginfo.Section
}

// seg is one linear piece of a rebuilt section's offset map: old offsets
// [old, old+n) go to [new, new+n).
func seg(old, n, new uint64) debuginfo.Segment { return debuginfo.Segment{Old: old, N: n, New: new} }

// cie is what an FDE needs to know of its CIE.
type cie struct {
	augZ     bool
	fdeEnc   byte
	lsdaEnc  byte
	codeAlig uint64
}

// lsdaUse is a reference from an FDE to the LSDA of its function.
type lsdaUse struct {
	sec     int    // .gcc_except_table section
	off     uint64 // LSDA offset in it
	fnStart uint64 // old start of the function in its code section
	m       *codeMap
}

// rewriteEHFrames rebuilds every .eh_frame section with FDEs of moved code
// and every .gcc_except_table with their LSDAs.
func rewriteEHFrames(f *elfobj.File, maps map[int]*codeMap) (map[int]*rebuiltSection, error) {
	res := make(map[int]*rebuiltSection)
	relocs := f.RelocSections()
	lsdaStarts := make(map[int][]uint64) // every LSDA referenced by any FDE
	var uses []lsdaUse
	for idx, s := range f.Sections {
		if s.Name != ".eh_frame" || (s.Type != elf.SHT_PROGBITS && s.Type != shtX86_64Unwind) {
			continue
		}
		byOff := make(map[uint64]elfobj.Rela)
		for _, ri := range relocs[idx] {
			for _, r := range f.Sections[ri].Relocs {
				byOff[r.Off] = r
			}
		}
		rb, u, err := rebuildEHFrame(f, s.Data, byOff, maps, lsdaStarts)
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", s.Name, err)
		}
		uses = append(uses, u...)
		if rb != nil {
			rb.idx = idx
			res[idx] = rb
		}
	}
	bySec := make(map[int][]lsdaUse)
	for _, u := range uses {
		bySec[u.sec] = append(bySec[u.sec], u)
	}
	for idx, us := range bySec {
		rb, err := rebuildExceptTable(f.Sections[idx].Data, lsdaStarts[idx], us)
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", f.Sections[idx].Name, err)
		}
		rb.idx = idx
		res[idx] = rb
	}
	return res, nil
}

// rebuildEHFrame rewrites the FDEs of moved functions. It returns nil if no
// FDE covers moved code.
func rebuildEHFrame(f *elfobj.File, d []byte, relAt map[uint64]elfobj.Rela, maps map[int]*codeMap, lsdaStarts map[int][]uint64) (*rebuiltSection, []lsdaUse, error) {
	var out []byte
	var segs []debuginfo.Segment
	var uses []lsdaUse
	cies := make(map[uint64]*cie)
	newOff := make(map[uint64]uint64) // old record offset -> new
	type ciePtr struct{ at, cieOld uint64 }
	var ciePtrs []ciePtr
	dirty := false
	off := uint64(0)
	for off < uint64(len(d)) {
		if uint64(len(d))-off < 4 {
			return nil, nil, fmt.Errorf("record at 0x%x: truncated", off)
		}
		length := uint64(le32(d[off:]))
		hdr := uint64(4)
		if length == 0 {
			// Terminator: the rest is copied as it is.
			segs = append(segs, seg(off, uint64(len(d))-off, uint64(len(out))))
			out = append(out, d[off:]...)
			break
		}
		if length == 0xffffffff {
			if uint64(len(d))-off < 12 {
				return nil, nil, fmt.Errorf("record at 0x%x: truncated", off)
			}
			length, hdr = binary.LittleEndian.Uint64(d[off+4:]), 12
		}
		idOff := off + hdr
		end := idOff + length
		if length < 4 || end > uint64(len(d)) || end < idOff {
			return nil, nil, fmt.Errorf("record at 0x%x: length 0x%x beyond the section", off, length)
		}
		rec := d[off:end]
		idSize := uint64(4)
		if hdr == 12 {
			idSize = 8
		}
		var id uint64
		if idSize == 4 {
			id = uint64(le32(d[idOff:]))
		} else {
			id = binary.LittleEndian.Uint64(d[idOff:])
		}
		newOff[off] = uint64(len(out))
		if id == 0 {
			c, err := parseCIE(d[idOff+idSize : end])
			if err != nil {
				return nil, nil, fmt.Errorf("CIE at 0x%x: %w", off, err)
			}
			cies[off] = c
			segs = append(segs, seg(off, end-off, uint64(len(out))))
			out = append(out, rec...)
			off = end
			continue
		}
		cieOld := idOff - id
		c := cies[cieOld]
		if c == nil || id > idOff {
			return nil, nil, fmt.Errorf("FDE at 0x%x: no CIE at 0x%x", off, cieOld)
		}
		ciePtrs = append(ciePtrs, ciePtr{uint64(len(out)) + hdr, cieOld})
		fde, err := parseFDE(d, idOff+idSize, end, c, relAt, f)
		if err != nil {
			return nil, nil, fmt.Errorf("FDE at 0x%x: %w", off, err)
		}
		if fde.lsdaSec != 0 {
			lsdaStarts[fde.lsdaSec] = append(lsdaStarts[fde.lsdaSec], fde.lsdaOff)
		}
		m := maps[fde.codeSec]
		if m == nil {
			segs = append(segs, seg(off, end-off, uint64(len(out))))
			out = append(out, rec...)
			off = end
			continue
		}
		dirty = true
		if fde.lsdaSec != 0 {
			uses = append(uses, lsdaUse{fde.lsdaSec, fde.lsdaOff, fde.start, m})
		}
		for o := fde.instrOff; o < end; o++ {
			if _, ok := relAt[o]; ok {
				return nil, nil, fmt.Errorf("FDE at 0x%x: relocation inside call frame instructions", off)
			}
		}
		newStart, err := m.addrOf(fde.start)
		if err != nil {
			return nil, nil, fmt.Errorf("FDE at 0x%x: %w", off, err)
		}
		newEnd, err := m.addrOf(fde.start + fde.rangeLen)
		if err != nil {
			return nil, nil, fmt.Errorf("FDE at 0x%x: %w", off, err)
		}
		prog, err := debuginfo.RemapCFA(d[fde.instrOff:end], fde.start, c.codeAlig, m)
		if err != nil {
			return nil, nil, fmt.Errorf("FDE at 0x%x: %w", off, err)
		}
		start := uint64(len(out))
		out = append(out, d[off:fde.instrOff]...)
		segs = append(segs, seg(off, fde.instrOff-off, start))
		// pc_range keeps its encoding; it is a plain length.
		rng := out[start+fde.rangeOff-off:]
		switch fde.ptrSize {
		case 4:
			put32(rng, uint32(newEnd-newStart))
		case 8:
			binary.LittleEndian.PutUint64(rng, newEnd-newStart)
		case 2:
			binary.LittleEndian.PutUint16(rng, uint16(newEnd-newStart))
		}
		out = append(out, prog...)
		// Keep the record's alignment (pointer size, or 4).
		align := uint64(8)
		if (end-off)%8 != 0 {
			align = 4
		}
		for (uint64(len(out))-start)%align != 0 {
			out = append(out, 0) // DW_CFA_nop
		}
		newLen := uint64(len(out)) - start - hdr
		if hdr == 4 {
			if newLen >= 0xffffffff {
				return nil, nil, fmt.Errorf("FDE at 0x%x: too long", off)
			}
			put32(out[start:], uint32(newLen))
		} else {
			binary.LittleEndian.PutUint64(out[start+4:], newLen)
		}
		off = end
	}
	if !dirty {
		return nil, uses, nil
	}
	for _, p := range ciePtrs {
		put32(out[p.at:], uint32(p.at-newOff[p.cieOld]))
	}
	return &rebuiltSection{Section: debuginfo.Section{Data: out, Segs: segs, Size: uint64(len(d))}}, uses, nil
}

// parseCIE reads the parts of a CIE body (after the CIE id) that FDEs
// depend on.
func parseCIE(b []byte) (*cie, error) {
	if len(b) < 1 {
		return nil, errShort
	}
	c := &cie{fdeEnc: pePtr, lsdaEnc: peOmit}
	version := b[0]
	p := 1
	z := strings.IndexByte(string(b[p:]), 0)
	if z < 0 {
		return nil, errShort
	}
	aug := string(b[p : p+z])
	p += z + 1
	if strings.Contains(aug, "eh") {
		p += 8
	}
	if p > len(b) {
		return nil, errShort
	}
	v, n, err := leb128.ReadUleb(b[p:])
	if err != nil {
		return nil, err
	}
	c.codeAlig = v
	p += n
	if _, n, err = leb128.ReadSleb(b[p:]); err != nil {
		return nil, err
	}
	p += n
	if version == 1 {
		p++
	} else {
		if _, n, err = leb128.ReadUleb(b[p:]); err != nil {
			return nil, err
		}
		p += n
	}
	if !strings.HasPrefix(aug, "z") {
		if aug != "" {
			return nil, fmt.Errorf("augmentation %q is not supported", aug)
		}
		return c, nil
	}
	c.augZ = true
	if p > len(b) {
		return nil, errShort
	}
	_, n, err = leb128.ReadUleb(b[p:])
	if err != nil {
		return nil, err
	}
	p += n
	for _, a := range aug[1:] {
		if p >= len(b) {
			return nil, errShort
		}
		switch a {
		case 'P':
			enc := b[p]
			p++
			sz := encSize(enc)
			if sz <= 0 {
				return nil, fmt.Errorf("personality encoding 0x%x is not supported", enc)
			}
			p += sz
		case 'L':
			c.lsdaEnc = b[p]
			p++
		case 'R':
			c.fdeEnc = b[p]
			p++
		case 'S', 'B', 'G':
		default:
			return nil, fmt.Errorf("augmentation %q is not supported", aug)
		}
	}
	return c, nil
}

// fde is what emit needs of an FDE.
type fde struct {
	codeSec  int
	start    uint64 // old offset of the function start in codeSec
	rangeLen uint64
	rangeOff uint64 // offset of pc_range in the section
	ptrSize  uint64
	instrOff uint64 // offset of the call frame instructions
	lsdaSec  int    // 0 if none
	lsdaOff  uint64
}

func parseFDE(d []byte, p, end uint64, c *cie, relAt map[uint64]elfobj.Rela, f *elfobj.File) (*fde, error) {
	sz := encSize(c.fdeEnc)
	if sz <= 0 {
		return nil, fmt.Errorf("FDE pointer encoding 0x%x is not supported", c.fdeEnc)
	}
	x := &fde{ptrSize: uint64(sz)}
	if p+2*x.ptrSize > end {
		return nil, errShort
	}
	r, ok := relAt[p]
	if !ok {
		return nil, fmt.Errorf("pc_begin has no relocation")
	}
	var err error
	if x.codeSec, x.start, err = f.Target(r); err != nil {
		return nil, err
	}
	x.rangeOff = p + x.ptrSize
	v, _, err := readEnc(d[x.rangeOff:end], c.fdeEnc&0x0f)
	if err != nil {
		return nil, err
	}
	x.rangeLen = uint64(v)
	p = x.rangeOff + x.ptrSize
	if c.augZ {
		alen, n, err := leb128.ReadUleb(d[p:end])
		if err != nil {
			return nil, err
		}
		p += uint64(n)
		if alen > end-p {
			return nil, fmt.Errorf("augmentation data of 0x%x bytes beyond the record", alen)
		}
		if c.lsdaEnc != peOmit && alen > 0 {
			if lr, ok := relAt[p]; ok {
				if x.lsdaSec, x.lsdaOff, err = f.Target(lr); err != nil {
					return nil, err
				}
			}
		}
		p += alen
	}
	if p > end {
		return nil, errShort
	}
	x.instrOff = p
	return x, nil
}

// rebuildExceptTable rewrites the LSDAs of moved functions in one
// .gcc_except_table section. starts lists every LSDA any FDE refers to;
// they split the section into chunks.
func rebuildExceptTable(d []byte, starts []uint64, uses []lsdaUse) (*rebuiltSection, error) {
	slices.Sort(starts)
	starts = slices.Compact(starts)
	dirty := make(map[uint64]lsdaUse)
	for _, u := range uses {
		if prev, ok := dirty[u.off]; ok && (prev.fnStart != u.fnStart || prev.m != u.m) {
			return nil, fmt.Errorf("LSDA at 0x%x is shared by two functions", u.off)
		}
		dirty[u.off] = u
	}
	var out []byte
	var segs []debuginfo.Segment
	bounds := append([]uint64{0}, starts...)
	bounds = append(bounds, uint64(len(d)))
	for i := 0; i+1 < len(bounds); i++ {
		lo, hi := bounds[i], bounds[i+1]
		if lo > hi || hi > uint64(len(d)) {
			return nil, fmt.Errorf("LSDA at 0x%x is beyond the section", lo)
		}
		if lo == hi {
			continue
		}
		u, ok := dirty[lo]
		if !ok {
			segs = append(segs, seg(lo, hi-lo, uint64(len(out))))
			out = append(out, d[lo:hi]...)
			continue
		}
		nb, oldCsEnd, err := rewriteLSDA(d[lo:hi], u)
		if err != nil {
			return nil, fmt.Errorf("LSDA at 0x%x: %w", lo, err)
		}
		newStart := uint64(len(out))
		newCsEnd := newStart + uint64(len(nb)) - (hi - lo - oldCsEnd)
		segs = append(segs, seg(lo, 1, newStart), seg(lo+oldCsEnd, hi-lo-oldCsEnd, newCsEnd))
		out = append(out, nb...)
	}
	return &rebuiltSection{Section: debuginfo.Section{Data: out, Segs: segs, Size: uint64(len(d))}}, nil
}

// rewriteLSDA rewrites the call-site table of one LSDA (b runs from the
// LSDA to the next one). Everything after the call-site table (action
// table, type table, exception specifications) moves as a whole; the
// call-site table grows by a multiple of 8 bytes, padded with redundant
// LEB128 bytes, so the type table keeps its alignment. It returns the new
// bytes and the old offset of the end of the call-site table.
func rewriteLSDA(b []byte, u lsdaUse) ([]byte, uint64, error) {
	p := 0
	if len(b) < 3 {
		return nil, 0, errShort
	}
	if b[p] != peOmit {
		return nil, 0, fmt.Errorf("explicit LPStart is not supported")
	}
	p++
	ttEnc := b[p]
	p++
	var ttBase uint64 // the type table's end, from which it is indexed
	if ttEnc != peOmit {
		v, n, err := leb128.ReadUleb(b[p:])
		if err != nil {
			return nil, 0, err
		}
		p += n
		ttBase = uint64(p) + v
	}
	if p >= len(b) {
		return nil, 0, errShort
	}
	csEnc := b[p]
	p++
	csLen, n, err := leb128.ReadUleb(b[p:])
	if err != nil {
		return nil, 0, err
	}
	p += n
	if csLen > uint64(len(b)-p) {
		return nil, 0, fmt.Errorf("call-site table of 0x%x bytes beyond the LSDA", csLen)
	}
	csEnd := uint64(p) + csLen
	if ttEnc != peOmit && (ttBase < csEnd || ttBase > uint64(len(b))) {
		return nil, 0, fmt.Errorf("type table at 0x%x outside the LSDA", ttBase)
	}
	fn, err := u.m.addrOf(u.fnStart)
	if err != nil {
		return nil, 0, err
	}
	rel := func(x uint64) (int64, error) {
		a, err := u.m.addrOf(u.fnStart + x)
		return int64(a - fn), err
	}
	type site struct{ start, length, lp int64 }
	var sites []site
	var actions []uint64
	q := b[p:csEnd]
	for len(q) > 0 {
		var v [3]int64
		for k := range v {
			x, n, err := readEnc(q, csEnc)
			if err != nil {
				return nil, 0, err
			}
			v[k], q = x, q[n:]
		}
		a, n, err := leb128.ReadUleb(q)
		if err != nil {
			return nil, 0, err
		}
		q = q[n:]
		s, err := rel(uint64(v[0]))
		if err != nil {
			return nil, 0, err
		}
		e, err := rel(uint64(v[0] + v[1]))
		if err != nil {
			return nil, 0, err
		}
		var lp int64
		if v[2] != 0 {
			if lp, err = rel(uint64(v[2])); err != nil {
				return nil, 0, err
			}
		}
		sites = append(sites, site{s, e - s, lp})
		actions = append(actions, a)
	}
	// Encode, then pad with LEB128 bytes until the table ends at the old
	// end plus a multiple of 8.
	encode := func(pad, ttWidth, clWidth int) ([]byte, error) {
		var cs []byte
		for k, s := range sites {
			var err error
			for _, v := range []int64{s.start, s.length, s.lp} {
				if cs, err = appendEnc(cs, csEnc, v, 0); err != nil {
					return nil, err
				}
			}
			w := 0
			if k == len(sites)-1 {
				w = leb128.UlebLen(actions[k]) + pad
			}
			cs = leb128.AppendUleb(cs, actions[k], w)
		}
		if len(sites) == 0 {
			clWidth += pad
		}
		out := []byte{peOmit, ttEnc}
		hdrTT := len(out)
		if ttEnc != peOmit {
			out = leb128.AppendUleb(out, 0, ttWidth) // patched below
		}
		out = append(out, csEnc)
		out = leb128.AppendUleb(out, uint64(len(cs)), clWidth)
		out = append(out, cs...)
		if ttEnc != peOmit {
			newTTBase := uint64(len(out)) + (ttBase - csEnd)
			v := newTTBase - uint64(hdrTT+ttWidth)
			if leb128.UlebLen(v) > ttWidth {
				return nil, nil
			}
			leb128.AppendUleb(out[:hdrTT], v, ttWidth)
		}
		return out, nil
	}
	ttWidth, clWidth, pad := 1, 1, 0
	for {
		head, err := encode(pad, ttWidth, clWidth)
		if err != nil {
			return nil, 0, err
		}
		if head == nil {
			ttWidth++
			continue
		}
		grow := int64(len(head)) - int64(csEnd)
		if grow < 0 || grow%8 != 0 {
			need := (8 - (grow%8+8)%8) % 8
			if grow < 0 {
				need = -grow
			}
			if len(sites) == 0 {
				clWidth += int(need)
			} else {
				pad += int(need)
			}
			if pad > 64 || clWidth > 64 {
				return nil, 0, fmt.Errorf("cannot pad the call-site table")
			}
			continue
		}
		return append(head, b[csEnd:]...), csEnd, nil
	}
}

// applyRebuilt installs rebuilt sections and makes relocations and symbols
// that refer to them follow.
func applyRebuilt(f *elfobj.File, secs map[int]*rebuiltSection) error {
	if len(secs) == 0 {
		return nil
	}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA {
			continue
		}
		if rb := secs[int(s.Info)]; rb != nil {
			for k := range s.Relocs {
				no, err := rb.MapOff(s.Relocs[k].Off)
				if err != nil {
					return fmt.Errorf("section %s: relocation at 0x%x: %w", f.Sections[rb.idx].Name, s.Relocs[k].Off, err)
				}
				s.Relocs[k].Off = no
			}
		}
		for k := range s.Relocs {
			r := &s.Relocs[k]
			sym := &f.Symbols[r.Sym]
			rb := secs[int(sym.Shndx)]
			if rb == nil || sym.Shndx >= 0xffff0000 || ibr.ClassOf(r.Type) == ibr.RelocOther {
				continue
			}
			t, err := rb.MapOff(uint64(int64(sym.Value) + r.Addend))
			if err != nil {
				return fmt.Errorf("relocation against %s: %w", f.Sections[rb.idx].Name, err)
			}
			nv, err := rb.MapOff(sym.Value)
			if err != nil {
				nv = sym.Value
			}
			r.Addend = int64(t) - int64(nv)
		}
	}
	for k := range f.Symbols {
		sym := &f.Symbols[k]
		if rb := secs[int(sym.Shndx)]; rb != nil && sym.Shndx < 0xffff0000 {
			if nv, err := rb.MapOff(sym.Value); err == nil {
				sym.Value = nv
			}
		}
	}
	for idx, rb := range secs {
		f.Sections[idx].Data = rb.Data
	}
	return nil
}

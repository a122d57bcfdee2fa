package debuginfo

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// rewriteAranges patches the lengths of the address ranges in a
// .debug_aranges section; the start addresses are relocated.
func (d *debugRewrite) rewriteAranges(sec int) (*Section, error) {
	old := d.data(sec)
	data := bytes.Clone(old)
	r := &dwReader{b: old}
	for r.p < uint64(len(old)) {
		start := r.p
		_, offSize, end := r.initialLength()
		version := r.u16()
		r.uN(offSize) // debug_info_offset
		as := r.u8()
		seg := r.u8()
		if r.err != nil {
			return nil, fmt.Errorf("unit at 0x%x: %w", start, r.err)
		}
		if version != 2 || seg != 0 || (as != 4 && as != 8) {
			return nil, fmt.Errorf("unit at 0x%x: version %d, segment size %d, address size %d are not understood", start, version, seg, as)
		}
		tuple := 2 * as
		p := start + (r.p-start+tuple-1)/tuple*tuple
		for p+tuple <= end {
			tr := &dwReader{b: old, p: p}
			av := tr.uN(int(as))
			lv := tr.uN(int(as))
			_, hasRel := d.reloc(sec, p)
			if !hasRel && av == 0 && lv == 0 {
				break
			}
			loc, err := d.locAt(sec, p, av)
			if err != nil {
				return nil, fmt.Errorf("range at 0x%x: %w", p, err)
			}
			if d.moved(loc) {
				nl, err := d.mapDelta(loc, lv)
				if err != nil {
					return nil, fmt.Errorf("range at 0x%x: %w", p, err)
				}
				if as == 8 {
					binary.LittleEndian.PutUint64(data[p+as:], nl)
				} else if nl > 0xffffffff {
					return nil, fmt.Errorf("range at 0x%x: length does not fit", p)
				} else {
					put32(data[p+as:], uint32(nl))
				}
			}
			p += tuple
		}
		r.p = end
	}
	if bytes.Equal(data, old) {
		return nil, nil
	}
	return patchedSection(data), nil
}

// frameCIE is what an FDE of .debug_frame needs of its CIE.
type frameCIE struct {
	caf      uint64
	addrSize int
}

// rewriteDebugFrame rebuilds a .debug_frame section: FDEs of moved code
// get new address ranges and advances (as in .eh_frame, but with CIE id
// 0xffffffff, CIE pointers that are section offsets, and absolute
// addresses).
func (d *debugRewrite) rewriteDebugFrame(sec int) (*Section, error) {
	data := d.data(sec)
	type record struct {
		start, idOff, body, end uint64
		offSize                 int
		cie                     bool
		id                      uint64
	}
	var recs []record
	cies := make(map[uint64]*frameCIE)
	r := &dwReader{b: data}
	for r.p < uint64(len(data)) {
		rec := record{start: r.p}
		l := r.u32()
		rec.offSize = 4
		if l == 0xffffffff {
			l, rec.offSize = r.u64(), 8
		}
		if r.err != nil {
			return nil, fmt.Errorf("record at 0x%x: %w", rec.start, r.err)
		}
		if l == 0 {
			// A zero terminator: the rest is copied as it is.
			rec.end = uint64(len(data))
			rec.body = rec.end
			recs = append(recs, rec)
			break
		}
		rec.idOff = r.p
		rec.end = r.p + l
		if l > uint64(len(data)) || rec.end > uint64(len(data)) || l < uint64(rec.offSize) {
			return nil, fmt.Errorf("record at 0x%x: length 0x%x beyond the section", rec.start, l)
		}
		rec.id = r.uN(rec.offSize)
		rec.body = r.p
		all := uint64(0xffffffff)
		if rec.offSize == 8 {
			all = ^uint64(0)
		}
		if _, rel := d.reloc(sec, rec.idOff); !rel && rec.id == all {
			rec.cie = true
			c, err := parseFrameCIE(data[rec.body:rec.end])
			if err != nil {
				return nil, fmt.Errorf("CIE at 0x%x: %w", rec.start, err)
			}
			cies[rec.start] = c
		}
		recs = append(recs, rec)
		r.p = rec.end
	}
	b := newDwBuilder(data)
	for _, rec := range recs {
		if rec.cie || rec.body == rec.end {
			b.copy(rec.start, rec.end)
			continue
		}
		cieOff := rec.id
		if rr, ok := d.reloc(sec, rec.idOff); ok {
			s, t, err := d.f.Target(rr)
			if err != nil || s != sec {
				return nil, fmt.Errorf("FDE at 0x%x: CIE pointer does not point into the section", rec.start)
			}
			cieOff = t
		} else {
			field, target := rec.idOff, rec.id
			os := rec.offSize
			b.fixup(func(mapOff func(uint64) (uint64, error), out []byte) error {
				nf, err := mapOff(field)
				if err != nil {
					return err
				}
				nt, err := mapOff(target)
				if err != nil {
					return err
				}
				if os == 4 {
					put32(out[nf:], uint32(nt))
				} else {
					binary.LittleEndian.PutUint64(out[nf:], nt)
				}
				return nil
			})
		}
		c := cies[cieOff]
		if c == nil {
			return nil, fmt.Errorf("FDE at 0x%x: no CIE at 0x%x", rec.start, cieOff)
		}
		as := uint64(c.addrSize)
		fr := &dwReader{b: data[:rec.end], p: rec.body}
		locField := fr.p
		lv := fr.uN(c.addrSize)
		rangeField := fr.p
		rv := fr.uN(c.addrSize)
		if fr.err != nil {
			return nil, fmt.Errorf("FDE at 0x%x: %w", rec.start, fr.err)
		}
		loc, err := d.locAt(sec, locField, lv)
		if err != nil {
			return nil, fmt.Errorf("FDE at 0x%x: %w", rec.start, err)
		}
		if !d.moved(loc) {
			b.copy(rec.start, rec.end)
			continue
		}
		if d.hasRelocIn(sec, rangeField, rec.end) {
			return nil, fmt.Errorf("FDE at 0x%x: relocation in the address range or the call frame instructions", rec.start)
		}
		nr, err := d.mapDelta(loc, rv)
		if err != nil {
			return nil, fmt.Errorf("FDE at 0x%x: %w", rec.start, err)
		}
		prog, err := RemapCFA(data[rangeField+as:rec.end], loc.off, c.caf, d.maps[loc.sec])
		if err != nil {
			return nil, fmt.Errorf("FDE at 0x%x: %w", rec.start, err)
		}
		ns := b.pos()
		b.copy(rec.start, rangeField)
		if as == 8 {
			b.emit(binary.LittleEndian.AppendUint64(nil, nr)...)
		} else {
			if nr > 0xffffffff {
				return nil, fmt.Errorf("FDE at 0x%x: address range does not fit", rec.start)
			}
			b.emit(binary.LittleEndian.AppendUint32(nil, uint32(nr))...)
		}
		b.emit(prog...)
		align := uint64(8)
		if (rec.end-rec.start)%8 != 0 {
			align = 4
		}
		for (b.pos()-ns)%align != 0 {
			b.emit(0) // DW_CFA_nop
		}
		hdr := uint64(4)
		if rec.offSize == 8 {
			hdr = 12
		}
		nl := b.pos() - ns - hdr
		if rec.offSize == 4 {
			if nl >= 0xfffffff0 {
				return nil, fmt.Errorf("FDE at 0x%x: too long", rec.start)
			}
			put32(b.out[ns:], uint32(nl))
		} else {
			binary.LittleEndian.PutUint64(b.out[ns+4:], nl)
		}
	}
	return b.finish()
}

// parseFrameCIE reads a .debug_frame CIE body (after the CIE id).
func parseFrameCIE(body []byte) (*frameCIE, error) {
	r := &dwReader{b: body}
	version := r.u8()
	augEnd := bytes.IndexByte(body[min(1, len(body)):], 0)
	if augEnd < 0 {
		return nil, errShort
	}
	aug := string(body[1 : 1+augEnd])
	r.p = uint64(2 + augEnd)
	c := &frameCIE{addrSize: 8}
	switch version {
	case 1, 3:
	case 4:
		c.addrSize = int(r.u8())
		if seg := r.u8(); seg != 0 {
			return nil, fmt.Errorf("segment selectors are not understood")
		}
	default:
		return nil, fmt.Errorf("version %d is not understood", version)
	}
	if aug != "" {
		return nil, fmt.Errorf("augmentation %q is not understood", aug)
	}
	c.caf = r.uleb()
	if r.err != nil {
		return nil, r.err
	}
	if c.addrSize != 4 && c.addrSize != 8 {
		return nil, fmt.Errorf("address size %d is not understood", c.addrSize)
	}
	return c, nil
}

package debuginfo

import (
	"encoding/binary"
	"fmt"

	"hijack/internal/leb128"
)

// RemapCFA re-encodes a call frame program (the instructions of a CIE or an
// FDE, in .eh_frame or .debug_frame) so that its location advances follow
// moved code: b is the program, loc the old offset of the function start
// in its code section, caf the code alignment factor of the CIE, m the
// section's new layout. Every location the program advances to must be an
// instruction start; the advances are re-encoded in the shortest form, so
// the program may change size. Other instructions are copied as they are;
// DW_CFA_set_loc and unknown instructions are an error.
func RemapCFA(b []byte, loc, caf uint64, m CodeMap) ([]byte, error) {
	if caf == 0 {
		return nil, fmt.Errorf("code alignment factor 0")
	}
	out := make([]byte, 0, len(b)+8)
	newLoc, err := m.AddrOf(loc)
	if err != nil {
		return nil, err
	}
	p := 0
	skipULEB := func(k int) error {
		for ; k > 0; k-- {
			_, n, err := leb128.ReadUleb(b[p:])
			if err != nil {
				return err
			}
			p += n
		}
		return nil
	}
	// skipBlock skips a ULEB128 length and that many bytes (a DWARF
	// expression), which must lie in the program.
	skipBlock := func() error {
		l, n, err := leb128.ReadUleb(b[p:])
		if err != nil {
			return err
		}
		if l > uint64(len(b)-p-n) {
			return fmt.Errorf("expression of 0x%x bytes beyond the call frame instructions", l)
		}
		p += n + int(l)
		return nil
	}
	for p < len(b) {
		op := b[p]
		start := p
		p++
		var delta uint64
		advance := false
		switch {
		case op&0xc0 == 0x40: // DW_CFA_advance_loc
			delta, advance = uint64(op&0x3f), true
		case op&0xc0 == 0x80: // DW_CFA_offset reg, uleb
			err = skipULEB(1)
		case op&0xc0 == 0xc0: // DW_CFA_restore reg
		default:
			switch op {
			case 0x00, 0x0a, 0x0b, 0x2d: // nop, remember/restore_state, GNU_window_save
			case 0x01: // DW_CFA_set_loc
				return nil, fmt.Errorf("DW_CFA_set_loc is not supported")
			case 0x02:
				if p+1 > len(b) {
					return nil, errShort
				}
				delta, advance = uint64(b[p]), true
				p++
			case 0x03:
				if p+2 > len(b) {
					return nil, errShort
				}
				delta, advance = uint64(binary.LittleEndian.Uint16(b[p:])), true
				p += 2
			case 0x04:
				if p+4 > len(b) {
					return nil, errShort
				}
				delta, advance = uint64(le32(b[p:])), true
				p += 4
			case 0x06, 0x07, 0x08, 0x0d, 0x0e, 0x2e: // one uleb operand
				err = skipULEB(1)
			case 0x13: // def_cfa_offset_sf: sleb
				_, n, e := leb128.ReadSleb(b[p:])
				p, err = p+n, e
			case 0x05, 0x09, 0x0c, 0x14, 0x2f: // two uleb operands
				err = skipULEB(2)
			case 0x11, 0x12, 0x15: // uleb, sleb
				if err = skipULEB(1); err == nil {
					_, n, e := leb128.ReadSleb(b[p:])
					p, err = p+n, e
				}
			case 0x0f: // def_cfa_expression: block
				err = skipBlock()
			case 0x10, 0x16: // expression, val_expression: uleb reg, block
				if err = skipULEB(1); err == nil {
					err = skipBlock()
				}
			default:
				return nil, fmt.Errorf("unknown call frame instruction 0x%02x", op)
			}
		}
		if err != nil {
			return nil, err
		}
		if p > len(b) {
			return nil, errShort
		}
		if !advance {
			out = append(out, b[start:p]...)
			continue
		}
		loc += delta * caf
		nl, err := m.AddrOf(loc)
		if err != nil {
			return nil, fmt.Errorf("call frame advance: %w", err)
		}
		d := (nl - newLoc)
		if d%caf != 0 {
			return nil, fmt.Errorf("advance of %d is not a multiple of the code alignment factor", d)
		}
		d /= caf
		newLoc = nl
		switch {
		case d < 0x40:
			out = append(out, 0x40|byte(d))
		case d <= 0xff:
			out = append(out, 0x02, byte(d))
		case d <= 0xffff:
			out = append(out, 0x03, byte(d), byte(d>>8))
		default:
			out = append(out, 0x04)
			out = binary.LittleEndian.AppendUint32(out, uint32(d))
		}
	}
	return out, nil
}

package debuginfo

import (
	"fmt"

	"hijack/internal/leb128"
)

// Standard line-number opcodes.
const (
	dwLnsCopy             = 1
	dwLnsAdvancePC        = 2
	dwLnsAdvanceLine      = 3
	dwLnsSetFile          = 4
	dwLnsSetColumn        = 5
	dwLnsNegateStmt       = 6
	dwLnsSetBasicBlock    = 7
	dwLnsConstAddPC       = 8
	dwLnsFixedAdvancePC   = 9
	dwLnsSetPrologueEnd   = 10
	dwLnsSetEpilogueBegin = 11
	dwLnsSetISA           = 12
	dwLneEndSequence      = 1
	dwLneSetAddress       = 2
)

// lineHeader is what the rewriting of a line program needs of its header.
type lineHeader struct {
	version    int
	minInst    uint64
	maxOps     uint64
	lineBase   int64
	lineRange  uint64
	opcodeBase uint64
	stdLens    []byte
}

// constAddPC is the address advance of DW_LNS_const_add_pc, in units of
// minimum_instruction_length.
func (h *lineHeader) constAddPC() uint64 { return (255 - h.opcodeBase) / h.lineRange }

// rewriteLine rewrites the line programs of a .debug_line section.
func (d *debugRewrite) rewriteLine(sec int) (*Section, error) {
	data := d.data(sec)
	b := newDwBuilder(data)
	r := &dwReader{b: data}
	for r.p < uint64(len(data)) {
		start := r.p
		_, offSize, end := r.initialLength()
		h := &lineHeader{version: int(r.u16())}
		if r.err != nil {
			return nil, fmt.Errorf("line program at 0x%x: %w", start, r.err)
		}
		if h.version < 2 || h.version > 5 {
			return nil, fmt.Errorf("line program at 0x%x: version %d is not understood", start, h.version)
		}
		if h.version >= 5 {
			r.u8() // address_size
			if seg := r.u8(); seg != 0 {
				return nil, fmt.Errorf("line program at 0x%x: segment selectors are not understood", start)
			}
		}
		hlen := r.uN(offSize)
		progStart := r.p + hlen
		h.minInst = r.u8()
		h.maxOps = 1
		if h.version >= 4 {
			h.maxOps = r.u8()
		}
		r.u8() // default_is_stmt
		h.lineBase = int64(int8(r.u8()))
		h.lineRange = r.u8()
		h.opcodeBase = r.u8()
		if h.opcodeBase > 0 {
			if r.need(h.opcodeBase - 1) {
				h.stdLens = data[r.p : r.p+h.opcodeBase-1]
			}
		}
		switch {
		case r.err != nil:
			return nil, fmt.Errorf("line program at 0x%x: %w", start, r.err)
		case progStart > end || progStart < r.p:
			return nil, fmt.Errorf("line program at 0x%x: header length 0x%x beyond the unit", start, hlen)
		case h.lineRange == 0 || h.minInst == 0:
			return nil, fmt.Errorf("line program at 0x%x: line_range or minimum_instruction_length is 0", start)
		case h.maxOps != 1:
			return nil, fmt.Errorf("line program at 0x%x: VLIW line programs (maximum_operations_per_instruction %d) are not understood", start, h.maxOps)
		case h.opcodeBase <= dwLnsFixedAdvancePC:
			return nil, fmt.Errorf("line program at 0x%x: opcode_base %d lacks standard opcodes", start, h.opcodeBase)
		}
		b.copy(start, progStart)
		b.fixLength(start, end, offSize)
		if err := d.rewriteLineProgram(sec, b, h, progStart, end); err != nil {
			return nil, fmt.Errorf("line program at 0x%x: %w", start, err)
		}
		r.p = end
	}
	return b.finish()
}

// dwSpan is a range of old bytes.
type dwSpan struct{ lo, hi uint64 }

// rewriteLineProgram rewrites the opcodes in [p, end). Opcodes that do not
// touch the address are copied as they are (DW_LNE_set_address too: its
// relocation follows the code); address advances are accumulated and,
// before every row, replaced by one advance to the row's new address.
// Where the new distance equals the old one the original bytes are kept.
func (d *debugRewrite) rewriteLineProgram(sec int, b *dwBuilder, h *lineHeader, p, end uint64) error {
	data := d.data(sec)
	r := &dwReader{b: data[:end], p: p}
	var (
		cur     codeLoc  // old address of the state machine
		lastOld codeLoc  // old address of the last row (or set_address)
		newLast uint64   // its new address
		pending []dwSpan // address-only opcodes since then
	)
	flushPending := func() {
		for _, s := range pending {
			b.copy(s.lo, s.hi)
		}
		pending = pending[:0]
	}
	// row emits the advance to cur and the opcode(s) in op that make the
	// row. For a special opcode, lineAdv is its line advance.
	row := func(op dwSpan, special bool, lineAdv int64) error {
		na, err := d.mapLoc(cur)
		if err != nil {
			return fmt.Errorf("row at %s+0x%x: %w", d.f.SectionName(cur.sec), cur.off, err)
		}
		if na < newLast || cur.off < lastOld.off {
			return fmt.Errorf("row at %s+0x%x: address goes backwards", d.f.SectionName(cur.sec), cur.off)
		}
		nd, od := na-newLast, cur.off-lastOld.off
		lastOld, newLast = cur, na
		if nd == od {
			flushPending()
			b.copy(op.lo, op.hi)
			return nil
		}
		pending = pending[:0]
		if nd%h.minInst != 0 {
			return fmt.Errorf("row at %s+0x%x: advance %d is not a multiple of minimum_instruction_length", d.f.SectionName(cur.sec), cur.off, nd)
		}
		adv := nd / h.minInst
		if special {
			l := uint64(lineAdv - h.lineBase) // in [0, line_range)
			if opc := l + h.lineRange*adv + h.opcodeBase; adv < 256 && opc <= 255 {
				b.emit(byte(opc))
				return nil
			}
			if ca := h.constAddPC(); adv >= ca {
				if opc := l + h.lineRange*(adv-ca) + h.opcodeBase; adv-ca < 256 && opc <= 255 {
					b.emit(dwLnsConstAddPC, byte(opc))
					return nil
				}
			}
			b.emit(dwLnsAdvancePC)
			b.emit(leb128.AppendUleb(nil, adv, 0)...)
			b.emit(byte(l + h.opcodeBase))
			return nil
		}
		if adv > 0 {
			b.emit(dwLnsAdvancePC)
			b.emit(leb128.AppendUleb(nil, adv, 0)...)
		}
		b.copy(op.lo, op.hi)
		return nil
	}
	for r.p < end {
		at := r.p
		op := r.u8()
		switch {
		case r.err != nil:
		case op >= h.opcodeBase:
			adj := op - h.opcodeBase
			cur.off += adj / h.lineRange * h.minInst
			if err := row(dwSpan{at, r.p}, true, h.lineBase+int64(adj%h.lineRange)); err != nil {
				return err
			}
		case op == 0:
			n := r.uleb()
			body := r.p
			if !r.need(n) || n == 0 {
				r.fail(fmt.Errorf("extended opcode at 0x%x: bad length %d", at, n))
				break
			}
			sub := r.u8()
			r.p = body + n
			switch sub {
			case dwLneEndSequence:
				if err := row(dwSpan{at, r.p}, false, 0); err != nil {
					return err
				}
				cur, lastOld, newLast = codeLoc{}, codeLoc{}, 0
			case dwLneSetAddress:
				w := n - 1
				if w != 4 && w != 8 {
					return fmt.Errorf("DW_LNE_set_address at 0x%x: address size %d is not understood", at, w)
				}
				raw := (&dwReader{b: data, p: body + 1}).uN(int(w))
				loc, err := d.locAt(sec, body+1, raw)
				if err != nil {
					return fmt.Errorf("DW_LNE_set_address at 0x%x: %w", at, err)
				}
				na, err := d.mapLoc(loc)
				if err != nil {
					return fmt.Errorf("DW_LNE_set_address at 0x%x: %w", at, err)
				}
				flushPending()
				b.copy(at, r.p)
				cur, lastOld, newLast = loc, loc, na
			default:
				// DW_LNE_define_file, DW_LNE_set_discriminator, vendor
				// extensions: no address involved.
				if d.hasRelocIn(sec, at, r.p) {
					return fmt.Errorf("extended opcode 0x%x at 0x%x carries a relocation", sub, at)
				}
				b.copy(at, r.p)
			}
		case op == dwLnsCopy:
			if err := row(dwSpan{at, r.p}, false, 0); err != nil {
				return err
			}
		case op == dwLnsAdvancePC:
			cur.off += r.uleb() * h.minInst
			pending = append(pending, dwSpan{at, r.p})
		case op == dwLnsConstAddPC:
			cur.off += h.constAddPC() * h.minInst
			pending = append(pending, dwSpan{at, r.p})
		case op == dwLnsFixedAdvancePC:
			cur.off += r.u16()
			pending = append(pending, dwSpan{at, r.p})
		case op == dwLnsAdvanceLine:
			r.sleb()
			b.copy(at, r.p)
		default:
			// Other standard opcodes (set_file, set_column, negate_stmt,
			// basic_block, prologue_end, epilogue_begin, set_isa, and
			// unknown ones) take ULEB128 operands and leave the address.
			for k := byte(0); k < h.stdLens[op-1]; k++ {
				r.uleb()
			}
			b.copy(at, r.p)
		}
		if r.err != nil {
			return fmt.Errorf("opcode at 0x%x: %w", at, r.err)
		}
	}
	// Advances after the last row have no effect; keep them.
	flushPending()
	return nil
}

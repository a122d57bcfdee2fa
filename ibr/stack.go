package ibr

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/arch/x86/x86asm"

	"hijack/ibr/x86len"
)

// ShiftStack makes instruction i's memory operand, which addresses
// relative to rsp, address delta bytes higher in the output than in the
// original: for an instruction that runs with rsp delta bytes lower than
// the original code had it there (registers saved on the stack around a
// loop), so that it still reaches the same bytes. Shifts add up.
//
// Only the displacement changes: in place where the shifted value fits
// the instruction's field, else in a 4-byte field (ModRM mod 10; the
// instruction grows by 3 bytes, or by 4 where it had none): StackShift
// says which. The instruction must not use rsp otherwise (push, pop,
// call, rsp as a register operand): the caller's to know; ShiftStack
// checks that the memory operand's base is rsp, and refuses, changing
// nothing, an operand it cannot re-encode (EVEX, whose one-byte field is
// scaled; a relocated or linked field; an instruction glued to the one
// before it, or a prefix split off one).
func (s *Section) ShiftStack(i int, delta int32) error {
	disp, err := s.stackDisp(i)
	if err != nil {
		return err
	}
	total := int64(s.stackShift[i]) + int64(delta)
	if !fitsDisp(4, disp+total) {
		return fmt.Errorf("%s: stack operand %#x(%%rsp) shifted by %d does not fit 32 bits", s.Where(uint64(s.Insts[i].Off)), disp, total)
	}
	if total == 0 {
		// (shifted back: the original bytes, not a widened field with
		// nothing added, which StackShift would report)
		delete(s.stackShift, i)
		return nil
	}
	if s.stackShift == nil {
		s.stackShift = make(map[int]int32)
	}
	s.stackShift[i] = int32(total)
	return nil
}

// CanShiftStack reports whether ShiftStack(i, delta) would succeed.
func (s *Section) CanShiftStack(i int, delta int32) bool {
	disp, err := s.stackDisp(i)
	return err == nil && fitsDisp(4, disp+int64(s.stackShift[i])+int64(delta))
}

// StackShift returns what ShiftStack added to instruction i's
// displacement (0: none), and the size of the displacement field its
// output has: the original's where the shifted value fits it, else 4.
func (s *Section) StackShift(i int) (delta int32, field int) {
	delta, ok := s.stackShift[i]
	if !ok {
		return 0, 0
	}
	disp, _ := s.stackDisp(i) // (checked by ShiftStack)
	return delta, s.shiftedField(i, disp+int64(delta))
}

// shiftedField returns the size of the displacement field instruction i
// gets for the shifted displacement d: its own where d fits it, else 4.
func (s *Section) shiftedField(i int, d int64) int {
	size := int(s.Insts[i].Layout.DispSize)
	if size == 0 || !fitsDisp(size, d) {
		return 4
	}
	return size
}

// StackShifted returns the instructions ShiftStack shifted, in no
// particular order.
func (s *Section) StackShifted() []int {
	out := make([]int, 0, len(s.stackShift))
	for i := range s.stackShift {
		out = append(out, i)
	}
	return out
}

// ShiftedBytes returns instruction i's bytes with its stack operand's
// displacement shifted as ShiftStack asked and the field as StackShift
// says, appended to dst.
func (s *Section) ShiftedBytes(dst []byte, i int) []byte {
	b := s.Bytes(i)
	delta, ok := s.stackShift[i]
	if !ok {
		return append(dst, b...)
	}
	l := &s.Insts[i].Layout
	disp, _ := s.stackDisp(i) // (checked by ShiftStack)
	disp += int64(delta)
	size := s.shiftedField(i, disp)
	old, at := int(l.DispSize), int(l.DispOff)
	if old == 0 {
		at = int(l.SIBOff) + 1 // (where the field goes: after the SIB byte)
	}
	start := len(dst)
	dst = append(dst, b[:at]...)
	if size != old {
		// mod 10: a 32-bit displacement (the SIB byte, base rsp, stays)
		dst[start+int(l.ModRMOff)] = dst[start+int(l.ModRMOff)]&0x3f | 0x80
	}
	if size == 1 {
		dst = append(dst, byte(int8(disp)))
	} else {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(disp)))
	}
	return append(dst, b[at+old:]...)
}

// stackDisp returns the displacement of instruction i's rsp-based memory
// operand, or why it cannot be shifted.
func (s *Section) stackDisp(i int) (int64, error) {
	if i < 0 || i >= len(s.Insts) || s.Insts[i].Kind != Code {
		return 0, fmt.Errorf("section %s: no instruction at index %d", s.Elf.Name, i)
	}
	in := &s.Insts[i]
	where := s.Where(uint64(in.Off))
	l := &in.Layout
	switch {
	case in.Flags&(Prefix|Glued) != 0:
		return 0, fmt.Errorf("%s: the stack operand of a split-prefix or glued instruction is not shifted", where)
	case len(in.Relocs) > 0 || in.Link != nil:
		return 0, fmt.Errorf("%s: a relocated or linked instruction's stack operand is not shifted", where)
	case l.Escape == x86len.EVEX:
		return 0, fmt.Errorf("%s: EVEX stack operand (scaled displacement) is not shifted", where)
	case l.ModRMOff < 0 || l.SIBOff < 0 || l.ModRM>>6 == 3:
		return 0, fmt.Errorf("%s: no rsp-based memory operand", where)
	}
	base := false
	for _, a := range s.Asm(i).Args {
		if m, ok := a.(x86asm.Mem); ok {
			base = m.Base == x86asm.RSP && m.Segment == 0
		}
	}
	// (an rsp base always takes a SIB byte; mod 00 has no displacement,
	// 01 one byte, 10 four)
	if !base || int(l.DispSize) != [3]int{0, 1, 4}[l.ModRM>>6] {
		return 0, fmt.Errorf("%s: no rsp-based memory operand", where)
	}
	switch l.DispSize {
	case 0:
		return 0, nil
	case 1:
		return int64(int8(s.Bytes(i)[l.DispOff])), nil
	}
	return int64(int32(binary.LittleEndian.Uint32(s.Bytes(i)[l.DispOff:]))), nil
}

// fitsDisp reports whether d fits a signed displacement field of size
// bytes (1 or 4).
func fitsDisp(size int, d int64) bool {
	if size == 1 {
		return d == int64(int8(d))
	}
	return d == int64(int32(d))
}

package debuginfo

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"hijack/internal/leb128"
)

// fakeMap is a CodeMap over a list of instructions; nothing else is in
// the section, whose old end is the end of the last instruction.
type fakeMap struct {
	insts []fakeInst
	end   uint64 // new section size
}

type fakeInst struct {
	Inst
	group uint64 // new offset of the code inserted before it
}

func (m fakeMap) AddrOf(off uint64) (uint64, error) {
	for _, in := range m.insts {
		if off == in.Old {
			return in.group, nil
		}
		if off > in.Old && off < in.Old+in.OldLen {
			return 0, fmt.Errorf("0x%x is inside an instruction", off)
		}
	}
	if last := m.insts[len(m.insts)-1]; off == last.Old+last.OldLen {
		return m.end, nil
	}
	return 0, fmt.Errorf("0x%x is beyond the section", off)
}

func (m fakeMap) InstAt(off uint64) (Inst, bool) {
	for _, in := range m.insts {
		if off >= in.Old && off < in.Old+in.OldLen {
			return in.Inst, true
		}
	}
	return Inst{}, false
}

// padded: three instructions of 1, 3 and 2 bytes, 5 bytes inserted before
// each; the last is a short branch grown to 5 bytes.
var padded = fakeMap{insts: []fakeInst{
	{Inst{Old: 0, OldLen: 1, New: 5, NewLen: 1}, 0},
	{Inst{Old: 1, OldLen: 3, New: 11, NewLen: 3}, 6},
	{Inst{Old: 4, OldLen: 2, New: 19, NewLen: 5}, 14},
}, end: 24}

func TestMapDebugAddr(t *testing.T) {
	for _, c := range []struct{ off, want uint64 }{
		{0, 0},  // instruction start: the code inserted before it
		{1, 6},  //
		{2, 12}, // inside: the same byte
		{3, 13}, // last byte: the last byte
		{4, 14}, //
		{5, 23}, // last byte of a grown branch: the last byte of the new encoding
		{6, 24}, // end
	} {
		got, err := mapDebugAddr(padded, c.off)
		if err != nil || got != c.want {
			t.Errorf("mapDebugAddr(0x%x) = 0x%x, %v; want 0x%x", c.off, got, err, c.want)
		}
	}
	if _, err := mapDebugAddr(padded, 7); err == nil {
		t.Errorf("mapDebugAddr beyond the section: no error")
	}
}

func TestRemapCFA(t *testing.T) {
	big := fakeMap{insts: []fakeInst{
		{Inst{Old: 0, OldLen: 1, New: 0, NewLen: 1}, 0},
		{Inst{Old: 1, OldLen: 1, New: 300, NewLen: 1}, 300},
		{Inst{Old: 2, OldLen: 1, New: 70000, NewLen: 1}, 70000},
	}, end: 70001}
	ten := append([]byte{0x13}, leb128.AppendUleb(nil, 0, leb128.MaxLen)...)
	ten[len(ten)-1] = 0x01 // def_cfa_offset_sf: sleb with bit 63 only set
	for _, c := range []struct {
		name    string
		m       fakeMap
		prog    []byte
		caf     uint64
		want    []byte
		wantErr error // nil: any error when want is nil
	}{
		{"advances follow the code, other instructions are copied", padded,
			[]byte{0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0a}, 1,
			[]byte{0x46, 0x0e, 0x10, 0x86, 0x02, 0x48, 0x0a}, nil},
		{"advance_loc2 and advance_loc4 forms chosen by distance", big,
			[]byte{0x41, 0x02, 0x01}, 1,
			[]byte{0x03, 0x2c, 0x01, 0x04, 0x44, 0x10, 0x01, 0x00}, nil},
		{"expression blocks are skipped whole", padded,
			[]byte{0x0f, 0x02, 0x41, 0x41, 0x41}, 1,
			[]byte{0x0f, 0x02, 0x41, 0x41, 0x46}, nil},
		{"advance into an instruction", padded, []byte{0x42}, 1, nil, nil},
		{"DW_CFA_set_loc", padded, []byte{0x01, 0, 0, 0, 0, 0, 0, 0, 0}, 1, nil, nil},
		{"unknown instruction", padded, []byte{0x3f}, 1, nil, nil},
		{"code alignment factor 0", padded, []byte{0x41}, 0, nil, nil},
		{"expression beyond the program", padded, []byte{0x0f, 0x05, 0x01}, 1, nil, nil},
		{"truncated operand", padded, []byte{0x0e, 0x80}, 1, nil, leb128.ErrTruncated},
		{"operand overflows", padded, ten, 1, nil, leb128.ErrOverflow},
	} {
		got, err := RemapCFA(c.prog, 0, c.caf, c.m)
		switch {
		case c.want != nil && (err != nil || !bytes.Equal(got, c.want)):
			t.Errorf("%s: % x, %v; want % x", c.name, got, err, c.want)
		case c.want == nil && err == nil:
			t.Errorf("%s: % x, no error", c.name, got)
		case c.wantErr != nil && !errors.Is(err, c.wantErr):
			t.Errorf("%s: error %v, want %v", c.name, err, c.wantErr)
		}
	}
}

func TestSectionMapOff(t *testing.T) {
	s := &Section{Data: make([]byte, 30), Segs: []Segment{{0, 4, 0}, {4, 6, 8}, {12, 8, 20}}, Size: 20}
	for _, c := range []struct {
		off, want uint64
		ok        bool
	}{
		{0, 0, true}, {3, 3, true}, {4, 8, true}, {9, 13, true},
		{10, 0, false}, {11, 0, false}, // dropped bytes
		{12, 20, true}, {19, 27, true},
		{20, 30, true}, // the old end maps to the new end
		{21, 0, false},
	} {
		got, err := s.MapOff(c.off)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("MapOff(%d) = %d, %v; want %d (ok %v)", c.off, got, err, c.want, c.ok)
		}
	}
}

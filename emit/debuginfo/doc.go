// Package debuginfo makes the DWARF debug information of an x86-64 ELF
// relocatable object follow code that a rewrite moved: .debug_line,
// .debug_info, .debug_aranges, .debug_frame, .debug_ranges/.debug_loc and
// .debug_rnglists/.debug_loclists (see Rewrite for what is recomputed),
// and the call frame programs that .eh_frame shares with .debug_frame
// (RemapCFA).
//
// It does not know how code is laid out: the caller (package emit)
// describes every rewritten code section by a CodeMap, and installs the
// Sections it gets back, moving relocations and symbols by Section.MapOff.
// It reads the object and never changes it.
package debuginfo

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// CodeMap is the new layout of one rewritten code section, by old section
// offsets.
type CodeMap interface {
	// AddrOf maps an old offset that is not inside an instruction (an
	// instruction start, data or padding, the section end) to its new
	// offset; an instruction start maps to the start of the code inserted
	// before the instruction, where control that reached it now arrives.
	// An offset inside an instruction is an error.
	AddrOf(off uint64) (uint64, error)
	// InstAt describes the instruction whose old encoding holds off; ok
	// is false when off is not inside an instruction.
	InstAt(off uint64) (in Inst, ok bool)
}

// Inst is where an instruction was and went: its old offset and length,
// and the new offset and length of its own bytes (a short branch may have
// grown).
type Inst struct {
	Old, OldLen, New, NewLen uint64
}

// Section is the new contents of a rewritten section, with the map from
// old offsets to new ones.
type Section struct {
	Data []byte
	Segs []Segment // sorted by Old
	// Size is the old size; its end maps to the new size.
	Size uint64
}

// Segment maps old offsets [Old, Old+N) of a rewritten section linearly
// to [New, New+N).
type Segment struct{ Old, N, New uint64 }

// MapOff maps an old offset of the section to its new offset; an offset
// whose bytes were dropped or replaced has no counterpart and is an error.
func (r *Section) MapOff(off uint64) (uint64, error) {
	if off == r.Size {
		return uint64(len(r.Data)), nil
	}
	i, _ := slices.BinarySearchFunc(r.Segs, off+1, func(s Segment, v uint64) int { return cmp.Compare(s.Old, v) })
	if i > 0 {
		s := r.Segs[i-1]
		if off < s.Old+s.N {
			return s.New + off - s.Old, nil
		}
	}
	return 0, fmt.Errorf("offset 0x%x of a rewritten table has no counterpart", off)
}

var errShort = errors.New("truncated")

func le32(b []byte) uint32     { return binary.LittleEndian.Uint32(b) }
func put32(b []byte, v uint32) { binary.LittleEndian.PutUint32(b, v) }

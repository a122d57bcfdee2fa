// Package leb128 reads and writes LEB128 numbers, the variable-length
// integers of DWARF (DWARF 5, section 7.6), .eh_frame and LSDAs: seven bits
// a byte, least significant group first, the high bit set on every byte but
// the last; signed numbers are two's complement, sign-extended from bit 6
// of the last byte.
//
// The writers can pad a number with redundant continuation bytes to a
// given width: DWARF consumers read the padded form, and it lets a rewriter
// change a value in place without moving what follows.
//
// The readers accept at most MaxLen bytes (the longest encoding of a 64-bit
// value, padded or not) and reject numbers that do not fit 64 bits.
package leb128

import "errors"

// MaxLen is the most bytes a 64-bit number takes, padded or not, as the
// readers accept it.
const MaxLen = 10

var (
	// ErrTruncated is returned when the input ends inside a number.
	ErrTruncated = errors.New("truncated LEB128 number")
	// ErrOverflow is returned for a number that does not fit 64 bits:
	// longer than MaxLen bytes, or with significant bits beyond bit 63.
	ErrOverflow = errors.New("LEB128 number overflows 64 bits")
)

// ReadUleb decodes the unsigned LEB128 number at the start of b; it returns
// the value and the number of bytes it takes.
func ReadUleb(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < len(b); i++ {
		if i == MaxLen {
			return 0, 0, ErrOverflow
		}
		c := b[i]
		// The tenth byte holds bit 63 only.
		if i == MaxLen-1 && c&0x7e != 0 {
			return 0, 0, ErrOverflow
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v, i + 1, nil
		}
	}
	return 0, 0, ErrTruncated
}

// ReadSleb decodes the signed LEB128 number at the start of b; it returns
// the value and the number of bytes it takes.
func ReadSleb(b []byte) (int64, int, error) {
	var v int64
	for i := 0; i < len(b); i++ {
		if i == MaxLen {
			return 0, 0, ErrOverflow
		}
		c := b[i]
		// The tenth byte holds bit 63, and its other bits must repeat it:
		// 0x00 or 0x7f (0x80 or 0xff when padded further).
		if i == MaxLen-1 && c&0x7f != 0 && c&0x7f != 0x7f {
			return 0, 0, ErrOverflow
		}
		v |= int64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if shift := 7 * (i + 1); shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v, i + 1, nil
		}
	}
	return 0, 0, ErrTruncated
}

// UlebLen returns the length of the shortest unsigned LEB128 encoding of v.
func UlebLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// SlebLen returns the length of the shortest signed LEB128 encoding of v.
func SlebLen(v int64) int {
	n := 1
	for {
		b := v & 0x7f
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return n
		}
		n++
	}
}

// AppendUleb appends v in unsigned LEB128, padded with redundant
// continuation bytes to width bytes when width is more than the shortest
// length; width 0 gives the shortest encoding.
func AppendUleb(b []byte, v uint64, width int) []byte {
	width = max(width, UlebLen(v))
	for i := 0; i < width; i++ {
		c := byte(v & 0x7f)
		v >>= 7
		if i < width-1 {
			c |= 0x80
		}
		b = append(b, c)
	}
	return b
}

// AppendSleb appends v in signed LEB128, padded with redundant
// sign-extension bytes to width bytes when width is more than the shortest
// length; width 0 gives the shortest encoding.
func AppendSleb(b []byte, v int64, width int) []byte {
	width = max(width, SlebLen(v))
	for i := 0; i < width; i++ {
		c := byte(v & 0x7f)
		v >>= 7
		if i < width-1 {
			c |= 0x80
		}
		b = append(b, c)
	}
	return b
}

package emit

import (
	"encoding/binary"
	"errors"
)

var errShort = errors.New("truncated")

func le32(b []byte) uint32     { return binary.LittleEndian.Uint32(b) }
func put32(b []byte, v uint32) { binary.LittleEndian.PutUint32(b, v) }

// uleb decodes an unsigned LEB128 number, returning it and its length.
func uleb(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errShort
}

// sleb decodes a signed LEB128 number.
func sleb(b []byte) (int64, int, error) {
	var v int64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= int64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if shift := 7 * (i + 1); shift < 64 && b[i]&0x40 != 0 {
				v |= -1 << shift
			}
			return v, i + 1, nil
		}
	}
	return 0, 0, errShort
}

// ulebLen returns the minimal length of v in unsigned LEB128.
func ulebLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// appendULEB appends v in unsigned LEB128, padded with redundant
// continuation bytes to width bytes (at least the minimal length). DWARF
// consumers accept the padded form; it lets tables keep their size.
func appendULEB(b []byte, v uint64, width int) []byte {
	width = max(width, ulebLen(v))
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

// DWARF exception-header pointer encodings (DW_EH_PE_*).
const (
	pePtr    = 0x00
	peULEB   = 0x01
	peUdata2 = 0x02
	peUdata4 = 0x03
	peUdata8 = 0x04
	peSLEB   = 0x09
	peSdata2 = 0x0a
	peSdata4 = 0x0b
	peSdata8 = 0x0c
	peOmit   = 0xff
)

// encSize returns the size of a fixed-size pointer encoding, 0 for LEB128
// encodings and -1 for unknown ones.
func encSize(enc byte) int {
	switch enc & 0x0f {
	case pePtr, peUdata8, peSdata8:
		return 8
	case peUdata4, peSdata4:
		return 4
	case peUdata2, peSdata2:
		return 2
	case peULEB, peSLEB:
		return 0
	}
	return -1
}

// readEnc reads a value in encoding enc (format only; the application
// bits are the caller's business). It returns the value and its length.
func readEnc(b []byte, enc byte) (int64, int, error) {
	switch enc & 0x0f {
	case peULEB:
		v, n, err := uleb(b)
		return int64(v), n, err
	case peSLEB:
		return sleb(b)
	}
	n := encSize(enc)
	if n < 0 {
		return 0, 0, errors.New("unknown pointer encoding")
	}
	if len(b) < n {
		return 0, 0, errShort
	}
	signed := enc&0x08 != 0
	switch n {
	case 2:
		if signed {
			return int64(int16(binary.LittleEndian.Uint16(b))), 2, nil
		}
		return int64(binary.LittleEndian.Uint16(b)), 2, nil
	case 4:
		if signed {
			return int64(int32(binary.LittleEndian.Uint32(b))), 4, nil
		}
		return int64(binary.LittleEndian.Uint32(b)), 4, nil
	}
	return int64(binary.LittleEndian.Uint64(b)), 8, nil
}

// appendEnc appends v in encoding enc; LEB128 forms are padded to width.
func appendEnc(b []byte, enc byte, v int64, width int) ([]byte, error) {
	switch enc & 0x0f {
	case peULEB:
		if v < 0 {
			return nil, errors.New("negative value in unsigned encoding")
		}
		return appendULEB(b, uint64(v), width), nil
	case peSLEB:
		return nil, errors.New("signed LEB128 call-site encoding is not supported")
	}
	switch encSize(enc) {
	case 2:
		if v < 0 || v > 0xffff {
			return nil, errors.New("value does not fit in 16 bits")
		}
		return binary.LittleEndian.AppendUint16(b, uint16(v)), nil
	case 4:
		if v < -1<<31 || v > 0xffffffff {
			return nil, errors.New("value does not fit in 32 bits")
		}
		return binary.LittleEndian.AppendUint32(b, uint32(v)), nil
	case 8:
		return binary.LittleEndian.AppendUint64(b, uint64(v)), nil
	}
	return nil, errors.New("unknown pointer encoding")
}

package emit

import (
	"encoding/binary"
	"errors"

	"hijack/internal/leb128"
)

var errShort = errors.New("truncated")

func le32(b []byte) uint32     { return binary.LittleEndian.Uint32(b) }
func put32(b []byte, v uint32) { binary.LittleEndian.PutUint32(b, v) }

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
		v, n, err := leb128.ReadUleb(b)
		return int64(v), n, err
	case peSLEB:
		return leb128.ReadSleb(b)
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
		return leb128.AppendUleb(b, uint64(v), width), nil
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

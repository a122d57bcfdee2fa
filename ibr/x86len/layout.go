package x86len

import (
	"errors"
	"fmt"
)

// Errors returned by Decode. They are sentinels so that Decode never
// allocates; compare with errors.Is or ==.
var (
	// ErrTruncated means the input ends before the instruction does.
	ErrTruncated = errors.New("x86len: truncated instruction")
	// ErrInvalid means the bytes do not form a defined instruction in
	// 64-bit mode (undefined opcode, undefined group member, a VEX/EVEX/XOP
	// prefix preceded by 66/f2/f3/f0/REX, ...).
	ErrInvalid = errors.New("x86len: invalid instruction in 64-bit mode")
	// ErrTooLong means the instruction would exceed the architectural limit
	// of 15 bytes (the CPU raises #GP for it).
	ErrTooLong = errors.New("x86len: instruction longer than 15 bytes")
	// ErrUnsupported means the encoding space exists but this package does
	// not describe it (EVEX maps 4 and 7: APX-promoted instructions and
	// AVX10.2 extensions, none of which compilers emit by default yet).
	ErrUnsupported = errors.New("x86len: unsupported encoding space")
)

// MaxLen is the architectural maximum length of an x86 instruction.
const MaxLen = 15

// Escape identifies a multi-byte prefix that carries the opcode map and
// register extension bits in place of the legacy 0f escape bytes.
type Escape uint8

// Escape values.
const (
	NoEscape Escape = iota // legacy encoding (optionally with REX and 0f, 0f 38, 0f 3a, 0f 0f)
	VEX2                   // c5 xx: two-byte VEX, map 0F implied
	VEX3                   // c4 xx xx: three-byte VEX
	EVEX                   // 62 xx xx xx: AVX-512 / AVX10
	XOP                    // 8f xx xx: AMD XOP (8f with map field >= 8)
	REX2                   // d5 xx: Intel APX REX2 (payload byte at OpcodeOff-1)
)

var escapeNames = [...]string{"none", "vex2", "vex3", "evex", "xop", "rex2"}

func (e Escape) String() string {
	if int(e) < len(escapeNames) {
		return escapeNames[e]
	}
	return fmt.Sprintf("Escape(%d)", uint8(e))
}

// Map identifies the opcode map. For VEX, EVEX and XOP encodings the value
// equals the map-select field of the prefix (1..3, 5..10), so Map0F38 means
// "0f 38" whether it was spelled with escape bytes or with VEX.mmmmm=2.
type Map uint8

// Map values.
const (
	Map1Byte Map = 0  // one-byte opcode map (no escape)
	Map0F    Map = 1  // 0f xx
	Map0F38  Map = 2  // 0f 38 xx
	Map0F3A  Map = 3  // 0f 3a xx (always an imm8)
	Map5     Map = 5  // EVEX map 5 (AVX512-FP16)
	Map6     Map = 6  // EVEX map 6 (AVX512-FP16)
	Map7     Map = 7  // VEX map 7 (USER_MSR urdmsr/uwrmsr with imm32)
	MapXOP8  Map = 8  // XOP map 8 (always an imm8)
	MapXOP9  Map = 9  // XOP map 9 (no immediate)
	MapXOPA  Map = 10 // XOP map 0Ah (always an imm32)
	Map3DNow Map = 16 // 0f 0f ModRM ... suffix: AMD 3DNow!
)

func (m Map) String() string {
	switch m {
	case Map1Byte:
		return "1byte"
	case Map0F:
		return "0f"
	case Map0F38:
		return "0f38"
	case Map0F3A:
		return "0f3a"
	case Map3DNow:
		return "3dnow"
	case MapXOP8, MapXOP9, MapXOPA:
		return fmt.Sprintf("xop%d", uint8(m))
	}
	return fmt.Sprintf("map%d", uint8(m))
}

// Layout describes the encoding of one instruction: where each field lies,
// as byte offsets from the instruction start. Offsets of absent fields are
// -1 (ModRMOff, SIBOff, SuffixOff) or 0 with a zero size (Disp, Imm, Rel).
//
// The fields appear in this order and never overlap:
//
//	legacy prefixes | REX | escape bytes | opcode | ModRM | SIB | disp | imm or rel | 3DNow suffix
//
// where "escape bytes" are 0f, 0f 38, 0f 3a, 0f 0f (the second 0f is the
// opcode byte, see Map3DNow) or a VEX/EVEX/XOP/REX2 prefix with its payload.
type Layout struct {
	Len int8 // total length in bytes (1..15)

	// Prefixes is the number of legacy prefix bytes (66 67 2e 3e 26 36 64
	// 65 f0 f2 f3) before the REX byte or opcode. A REX byte that is
	// followed by another prefix is ignored by the CPU; such dead REX bytes
	// are counted here too, so b[:Prefixes] is everything before the
	// effective REX or the opcode.
	Prefixes int8
	// Rex is the effective REX byte (at offset Prefixes) or 0.
	Rex byte
	// Escape is the VEX/EVEX/XOP/REX2 prefix kind, or NoEscape. The prefix
	// starts at offset Prefixes (Rex is always 0 with an Escape) and its
	// last payload byte is at OpcodeOff-1.
	Escape Escape
	// Map is the opcode map.
	Map Map
	// Opcode is the opcode byte, b[OpcodeOff]: the last one of a multi-byte
	// opcode. For Map3DNow it is the second 0f; the byte that selects the
	// operation is the suffix at SuffixOff.
	Opcode    byte
	OpcodeOff int8

	ModRMOff int8 // -1 if the instruction has no ModRM byte
	ModRM    byte // the ModRM byte, 0 if none
	SIBOff   int8 // -1 if none

	// DispOff and DispSize locate the displacement of the memory operand
	// (size 0, 1 or 4), or the 8-byte absolute address of the moffs forms
	// a0-a3 (4 bytes with a 67 prefix).
	DispOff, DispSize int8
	// ImmOff and ImmSize locate the immediate bytes (size 0, 1, 2, 3, 4
	// or 8). Multiple immediates form one region: enter iw,ib is 3 bytes,
	// extrq/insertq ib,ib is 2. A VEX is4 register byte (vblendvps, FMA4,
	// vpermil2ps) is reported as a 1-byte immediate, as it is encoded like
	// one. The 8-byte absolute target of APX jmpabs is an immediate too.
	ImmOff, ImmSize int8
	// RelOff and RelSize locate a PC-relative branch displacement (jcc,
	// jmp, call, jrcxz, loop*, xbegin). Size is 1 or 4; 2 only for xbegin
	// with a 66 prefix. Near branches ignore 66 in 64-bit mode (Intel 64
	// semantics), so e8/e9/0f 8x always carry rel32. The target is
	// (address of instruction) + Len + displacement.
	RelOff, RelSize int8
	// SuffixOff is the offset of the 3DNow! suffix opcode byte (always
	// Len-1), or -1. It is not an immediate: it selects the operation.
	SuffixOff int8

	// RIPRelative reports a [rip+disp32] memory operand (ModRM mod=00
	// rm=101 without SIB), for legacy, VEX, EVEX and XOP encodings alike.
	// The displacement is relative to the end of the instruction (Len).
	RIPRelative bool
}

// String formats the layout for diagnostics.
func (l Layout) String() string {
	s := fmt.Sprintf("len=%d pfx=%d", l.Len, l.Prefixes)
	if l.Rex != 0 {
		s += fmt.Sprintf(" rex=%02x", l.Rex)
	}
	if l.Escape != NoEscape {
		s += " esc=" + l.Escape.String()
	}
	s += fmt.Sprintf(" map=%v op=%02x@%d", l.Map, l.Opcode, l.OpcodeOff)
	if l.ModRMOff >= 0 {
		s += fmt.Sprintf(" modrm=%02x@%d", l.ModRM, l.ModRMOff)
	}
	if l.SIBOff >= 0 {
		s += fmt.Sprintf(" sib@%d", l.SIBOff)
	}
	if l.DispSize > 0 {
		s += fmt.Sprintf(" disp=%d@%d", l.DispSize, l.DispOff)
	}
	if l.ImmSize > 0 {
		s += fmt.Sprintf(" imm=%d@%d", l.ImmSize, l.ImmOff)
	}
	if l.RelSize > 0 {
		s += fmt.Sprintf(" rel=%d@%d", l.RelSize, l.RelOff)
	}
	if l.SuffixOff >= 0 {
		s += fmt.Sprintf(" suffix@%d", l.SuffixOff)
	}
	if l.RIPRelative {
		s += " rip"
	}
	return s
}

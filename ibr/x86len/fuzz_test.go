package x86len

import (
	"errors"
	"fmt"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// checkLayout verifies the structural invariants of a successful decode of
// b: every field lies inside the instruction, the fields are in encoding
// order without gaps or overlap, and the recorded bytes match b. It
// returns "" when all hold.
func checkLayout(b []byte, l Layout) string {
	if l.Len < 1 || l.Len > MaxLen || int(l.Len) > len(b) {
		return fmt.Sprintf("Len %d out of range", l.Len)
	}
	if l.Prefixes < 0 || l.Prefixes > l.OpcodeOff {
		return fmt.Sprintf("Prefixes %d, opcode at %d", l.Prefixes, l.OpcodeOff)
	}
	for _, c := range b[:l.Prefixes] {
		switch {
		case c == 0x66 || c == 0x67 || c == 0xf0 || c == 0xf2 || c == 0xf3:
		case c == 0x26 || c == 0x2e || c == 0x36 || c == 0x3e || c == 0x64 || c == 0x65:
		case c&0xf0 == 0x40: // dead REX
		default:
			return fmt.Sprintf("non-prefix byte %02x among prefixes", c)
		}
	}
	at := l.Prefixes // the next expected field offset
	if l.Rex != 0 {
		if l.Escape != NoEscape || l.Rex&0xf0 != 0x40 || b[at] != l.Rex {
			return fmt.Sprintf("bad REX %02x at %d", l.Rex, at)
		}
		at++
	}
	// Escape bytes: 0f [38|3a], or a VEX/EVEX/XOP/REX2 prefix.
	esc := l.OpcodeOff - at
	switch l.Escape {
	case NoEscape:
		want := map[Map]int{Map1Byte: 0, Map0F: 1, Map0F38: 2, Map0F3A: 2, Map3DNow: 1}
		if n, ok := want[l.Map]; !ok || n != int(esc) {
			return fmt.Sprintf("%d escape bytes for map %v", esc, l.Map)
		}
		if esc > 0 && b[at] != 0x0f {
			return "escape does not start with 0f"
		}
	case VEX2, VEX3, EVEX, XOP, REX2:
		size := map[Escape]int{VEX2: 2, VEX3: 3, EVEX: 4, XOP: 3, REX2: 2}[l.Escape]
		lead := map[Escape]byte{VEX2: 0xc5, VEX3: 0xc4, EVEX: 0x62, XOP: 0x8f, REX2: 0xd5}[l.Escape]
		if int(esc) != size || b[at] != lead {
			return fmt.Sprintf("%v prefix of %d bytes starting %02x", l.Escape, esc, b[at])
		}
	default:
		return fmt.Sprintf("unknown escape %v", l.Escape)
	}
	if b[l.OpcodeOff] != l.Opcode {
		return "Opcode does not match the byte at OpcodeOff"
	}
	at = l.OpcodeOff + 1
	if l.ModRMOff >= 0 {
		if l.ModRMOff != at || b[at] != l.ModRM {
			return fmt.Sprintf("ModRM at %d, want %d", l.ModRMOff, at)
		}
		at++
	} else if l.ModRM != 0 {
		return "ModRM set without ModRMOff"
	}
	if l.SIBOff >= 0 {
		if l.ModRMOff < 0 || l.SIBOff != at || l.ModRM&7 != 4 || l.ModRM >= 0xc0 {
			return fmt.Sprintf("SIB at %d, want %d after a SIB-form ModRM", l.SIBOff, at)
		}
		at++
	}
	if l.DispSize > 0 {
		if l.DispOff != at || (l.DispSize != 1 && l.DispSize != 4 && l.DispSize != 8) {
			return fmt.Sprintf("disp %d@%d, want at %d", l.DispSize, l.DispOff, at)
		}
		at += l.DispSize
	} else if l.DispOff != 0 {
		return "DispOff without DispSize"
	}
	if l.ImmSize > 0 && l.RelSize > 0 {
		return "both an immediate and a branch displacement"
	}
	if l.ImmSize > 0 {
		if l.ImmOff != at {
			return fmt.Sprintf("imm %d@%d, want at %d", l.ImmSize, l.ImmOff, at)
		}
		at += l.ImmSize
	} else if l.ImmOff != 0 {
		return "ImmOff without ImmSize"
	}
	if l.RelSize > 0 {
		if l.RelOff != at || (l.RelSize != 1 && l.RelSize != 2 && l.RelSize != 4) {
			return fmt.Sprintf("rel %d@%d, want at %d", l.RelSize, l.RelOff, at)
		}
		at += l.RelSize
	} else if l.RelOff != 0 {
		return "RelOff without RelSize"
	}
	if (l.Map == Map3DNow) != (l.SuffixOff >= 0) {
		return "SuffixOff does not match Map3DNow"
	}
	if l.SuffixOff >= 0 {
		if l.SuffixOff != at {
			return fmt.Sprintf("suffix at %d, want %d", l.SuffixOff, at)
		}
		at++
	}
	if at != l.Len {
		return fmt.Sprintf("fields end at %d, Len %d", at, l.Len)
	}
	if l.RIPRelative && (l.ModRMOff < 0 || l.ModRM&0xc7 != 0x05 || l.DispSize != 4 || l.SIBOff >= 0) {
		return "RIPRelative without mod=00 rm=101 disp32"
	}
	return ""
}

// x86asmKnownBug reports encodings where golang.org/x/arch/x86/x86asm
// v0.33 returns a wrong length with a nil error and a non-zero Op. Each
// case was checked against the Intel SDM and GNU objdump.
func x86asmKnownBug(l Layout) string {
	switch {
	case (l.Escape == VEX2 || l.Escape == VEX3) && l.Map == Map0F && l.Opcode == 0x77:
		// vzeroupper/vzeroall have no ModRM; x86asm reads one.
		return "vzeroupper"
	case l.Escape == EVEX && (l.Map == Map5 || l.Map == Map6):
		// x86asm keeps only two bits of EVEX.mmm, so AVX512-FP16 maps 5
		// and 6 decode as maps 0f and 0f38: e.g. 62 f5 7c 48 c2 .. (map 5
		// vcvtph2psx-space) becomes vcmpps with an imm8 it does not have.
		return "EVEX map 5/6"
	case l.Escape == NoEscape && l.Map == Map0F && l.Opcode >= 0x20 && l.Opcode <= 0x23 && l.ModRM < 0xc0:
		// mov to/from cr/dr ignore ModRM.mod (always a register operand,
		// Intel SDM "MOV—Move to/from Control Registers"); x86asm decodes
		// a memory operand with SIB and displacement. objdump agrees with
		// Decode.
		return "mov cr/dr"
	}
	return ""
}

// FuzzDecode checks that Decode never panics, that successful decodes
// satisfy checkLayout and are reproducible from b[:Len], and that the
// length agrees with x86asm wherever x86asm decodes an instruction and is
// not known to be wrong.
func FuzzDecode(f *testing.F) {
	for _, tc := range decodeTests {
		f.Add(unhex(f, tc.hex))
	}
	for _, tc := range errorTests {
		f.Add(unhex(f, tc.hex))
	}
	// Inputs where x86asm's length is wrong (x86asmKnownBug).
	for _, h := range []string{
		"0f 20 41 30",                // mov cr with mod=01
		"62 f5 7c 48 c2 c1 00",       // EVEX map 5, read as map 0f
		"c5 f8 77 90",                // vzeroupper
		"66 0f 38 f6 c1",             // adcx
		"0f 22 bf e2 25 e4 fd",       // mov cr7 with mod=10
		"62 1d 51 91 70 ed c9 90 90", // EVEX map 5 opcode 70
	} {
		f.Add(unhex(f, h))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrInvalid) &&
				!errors.Is(err, ErrTooLong) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("[% x]: unexpected error %v", b, err)
			}
			if len(b) > MaxLen {
				// The outcome depends on the first 15 bytes only.
				if l2, err2 := Decode(b[:MaxLen]); err2 != err || l2 != l {
					t.Fatalf("[% x]: %v, but first 15 bytes give %v, %v", b, err, l2, err2)
				}
			}
			return
		}
		if msg := checkLayout(b, l); msg != "" {
			t.Fatalf("[% x]: %v: %s", b, l, msg)
		}
		if l2, err := Decode(b[:l.Len]); err != nil || l2 != l {
			t.Fatalf("[% x]: %v, but b[:Len] gives %v, %v", b, l, l2, err)
		}
		inst, xerr := x86asm.Decode(b, 64)
		if xerr != nil || inst.Op == 0 || inst.Len == int(l.Len) || x86asmKnownBug(l) != "" {
			return
		}
		t.Fatalf("[% x]: Decode %v; x86asm %v len %d", b[:max(int(l.Len), inst.Len)], l, inst, inst.Len)
	})
}

package x86len

// attr describes what follows an opcode byte. The low four bits select the
// kind of trailing immediate/displacement; the high bits are flags.
type attr uint8

const (
	fModRM   attr = 1 << 7 // a ModRM byte follows the opcode
	fBad     attr = 1 << 6 // undefined in 64-bit mode
	fGroup   attr = 1 << 5 // ModRM.reg or prefixes refine the layout: see fixGroup
	fRegOnly attr = 1 << 4 // ModRM.mod is ignored: always a register form (mov cr/dr)
	kindMask attr = 0x0f
)

// Trailing field kinds (attr & kindMask).
const (
	kNone  attr = iota
	kIb         // imm8
	kIw         // imm16
	kIz         // imm16 with a 66 prefix (unless REX.W), else imm32
	kIv         // b8-bf: imm64 with REX.W, imm16 with 66, else imm32
	kEnter      // enter: imm16 + imm8
	kMoffs      // a0-a3: 8-byte absolute address, 4 with a 67 prefix
	kRel8       // rel8 branch
	kRel32      // rel32 branch; 66 is ignored in 64-bit mode (Intel 64)
	kRelZ       // xbegin: rel16 with 66 (unless W), else rel32
	kIb2        // two imm8 (SSE4a extrq/insertq)
	kId         // imm32 regardless of prefixes (XOP map 0Ah, VEX map 7)
	kImm64      // imm64 (APX jmpabs)
)

// Short names keep the 16-per-row tables readable.
const (
	__  = kNone
	XX  = fBad
	Mm  = fModRM
	Ib  = kIb
	Iw  = kIw
	Iz  = kIz
	Iv  = kIv
	En  = kEnter
	Mo  = kMoffs
	J8  = kRel8
	J32 = kRel32
	MIb = fModRM | kIb
	MIz = fModRM | kIz
	Mcr = fModRM | fRegOnly
)

// oneByte is the one-byte opcode map in 64-bit mode. Prefix bytes (26 2e
// 36 3e 40-4f 64-67 f0 f2 f3) and escapes (0f 62 c4 c5 d5) are consumed
// before the table is consulted; their entries are XX so that they are
// rejected where they can only appear as an opcode (after REX2).
var oneByte = [256]attr{
	//       0    1    2    3    4    5    6    7    8    9    a    b    c    d    e    f
	/* 0 */ Mm, Mm, Mm, Mm, Ib, Iz, XX, XX, Mm, Mm, Mm, Mm, Ib, Iz, XX, XX,
	/* 1 */ Mm, Mm, Mm, Mm, Ib, Iz, XX, XX, Mm, Mm, Mm, Mm, Ib, Iz, XX, XX,
	/* 2 */ Mm, Mm, Mm, Mm, Ib, Iz, XX, XX, Mm, Mm, Mm, Mm, Ib, Iz, XX, XX,
	/* 3 */ Mm, Mm, Mm, Mm, Ib, Iz, XX, XX, Mm, Mm, Mm, Mm, Ib, Iz, XX, XX,
	/* 4 */ XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	/* 5 */ __, __, __, __, __, __, __, __, __, __, __, __, __, __, __, __,
	/* 6 */ XX, XX, XX, Mm, XX, XX, XX, XX, Iz, MIz, Ib, MIb, __, __, __, __,
	/* 7 */ J8, J8, J8, J8, J8, J8, J8, J8, J8, J8, J8, J8, J8, J8, J8, J8,
	/* 8 */ MIb, MIz, XX, MIb, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm | fGroup,
	/* 9 */ __, __, __, __, __, __, __, __, __, __, XX, __, __, __, __, __,
	/* a */ Mo, Mo, Mo, Mo, __, __, __, __, Ib, Iz, __, __, __, __, __, __,
	/* b */ Ib, Ib, Ib, Ib, Ib, Ib, Ib, Ib, Iv, Iv, Iv, Iv, Iv, Iv, Iv, Iv,
	/* c */ MIb, MIb, Iw, __, XX, XX, MIb | fGroup, MIz | fGroup, En, __, Iw, __, __, Ib, XX, __,
	/* d */ Mm, Mm, Mm, Mm, XX, XX, XX, __, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm,
	/* e */ J8, J8, J8, J8, Ib, Ib, Ib, Ib, J32, J32, XX, J8, __, __, __, __,
	/* f */ XX, __, XX, XX, __, __, MIb | fGroup, MIz | fGroup, __, __, __, __, __, __, Mm | fGroup, Mm | fGroup,
}

// twoByte is the 0f map. 0f 0f, 0f 38 and 0f 3a are handled before the
// table is consulted; their entries are XX for the REX2 path.
var twoByte = [256]attr{
	//       0    1    2    3    4    5    6    7    8    9    a    b    c    d    e    f
	/* 0 */ Mm, Mm, Mm, Mm, XX, __, __, __, __, __, XX, __, XX, Mm, __, XX,
	/* 1 */ Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm,
	/* 2 */ Mcr, Mcr, Mcr, Mcr, XX, XX, XX, XX, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm,
	/* 3 */ __, __, __, __, __, __, XX, __, XX, XX, XX, XX, XX, XX, XX, XX,
	/* 4 */ Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm,
	/* 5 */ Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm,
	/* 6 */ Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm,
	/* 7 */ MIb, MIb, MIb, MIb, Mm, Mm, Mm, __, Mm | fGroup, Mm | fGroup, XX, XX, Mm, Mm, Mm, Mm,
	/* 8 */ J32, J32, J32, J32, J32, J32, J32, J32, J32, J32, J32, J32, J32, J32, J32, J32,
	/* 9 */ Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm,
	/* a */ __, __, __, Mm, MIb, Mm, Mm | fGroup, Mm | fGroup, __, __, __, Mm, MIb, Mm, Mm, Mm,
	/* b */ Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm | fGroup, Mm, MIb, Mm, Mm, Mm, Mm, Mm,
	/* c */ Mm, Mm, MIb, Mm, MIb, MIb, MIb, Mm, __, __, __, __, __, __, __, __,
	/* d */ Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm,
	/* e */ Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm,
	/* f */ Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm, Mm,
}

// vex0F is the 0F map under a VEX or EVEX prefix: every opcode takes a
// ModRM except vzeroupper/vzeroall (77), and the shuffles, compares and
// inserts/extracts listed carry an imm8. Everything in maps 0F38 and 0F3A
// takes a ModRM; 0F3A always has an imm8 (or an is4 register byte, which
// is encoded like one).
var vex0F = func() (t [256]attr) {
	for i := range t {
		t[i] = fModRM
	}
	t[0x77] = kNone
	for _, op := range []byte{0x70, 0x71, 0x72, 0x73, 0xc2, 0xc4, 0xc5, 0xc6} {
		t[op] = fModRM | kIb
	}
	return t
}()

// legacy0F38 marks the defined opcodes of the legacy (non-VEX) 0f 38 map:
// SSSE3/SSE4.1/SSE4.2, invept/invvpid/invpcid, SHA, GFNI, AES, Key
// Locker, movbe/crc32, adcx/adox, wrss/wruss, movdir*, enqcmd*, RAO-INT.
var legacy0F38 = bitset(
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
	0x10, 0x14, 0x15, 0x17, 0x1c, 0x1d, 0x1e,
	0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x28, 0x29, 0x2a, 0x2b,
	0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x37, 0x38, 0x39, 0x3a, 0x3b, 0x3c, 0x3d, 0x3e, 0x3f,
	0x40, 0x41, 0x80, 0x81, 0x82,
	0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xcf,
	0xd8, 0xdb, 0xdc, 0xdd, 0xde, 0xdf,
	0xf0, 0xf1, 0xf5, 0xf6, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc,
)

// legacy0F3A marks the defined opcodes of the legacy 0f 3a map (all take
// an imm8): SSE4.1 round/blend/extract/insert/dpps/mpsadbw, pclmulqdq,
// SSE4.2 string compares, SHA1, GFNI affine, aeskeygenassist, hreset.
var legacy0F3A = bitset(
	0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x14, 0x15, 0x16, 0x17, 0x20, 0x21, 0x22,
	0x40, 0x41, 0x42, 0x44, 0x60, 0x61, 0x62, 0x63,
	0xcc, 0xce, 0xcf, 0xdf, 0xf0,
)

// set256 is a read-only set of byte values.
type set256 [4]uint64

func bitset(ops ...byte) (s set256) {
	for _, op := range ops {
		s[op>>6] |= 1 << (op & 63)
	}
	return s
}

func (s *set256) has(op byte) bool { return s[op>>6]&(1<<(op&63)) != 0 }

// amd3DNow marks the defined 3DNow! suffix bytes (including the
// Geode/Athlon extensions pf2iw, pfnacc, pfpnacc, pi2fw, pswapd).
var amd3DNow = bitset(
	0x0c, 0x0d, 0x1c, 0x1d, 0x8a, 0x8e, 0x90, 0x94, 0x96, 0x97, 0x9a, 0x9e,
	0xa0, 0xa4, 0xa6, 0xa7, 0xaa, 0xae, 0xb0, 0xb4, 0xb6, 0xb7, 0xbb, 0xbf,
)

// rex2Bad reports the map-0 and map-1 opcode rows that are reserved under
// a REX2 prefix (Intel APX spec 3.1.2.1): REX itself, jcc, loop/jrcxz/in/
// out/call/jmp, the a0-af string and moffs row (except jmpabs, handled in
// code), and in map 1 the 0f 3x row (wrmsr..., the 0f 38/0f 3a escapes)
// and jcc rel32. Prefix and escape bytes (0f, 66, c4, ...) are XX in the
// tables and so rejected as opcodes anyway; 0f 0f (3DNow!) likewise.
func rex2Bad(m Map, op byte) bool {
	if m == Map1Byte {
		switch op >> 4 {
		case 0x4, 0x7, 0xa, 0xe:
			return true
		}
		return false
	}
	switch op >> 4 {
	case 0x3, 0x8:
		return true
	}
	return false
}

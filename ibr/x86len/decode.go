package x86len

// decoder carries the prefix state that the operand-size dependent fields
// need. It lives on Decode's stack; nothing escapes.
type decoder struct {
	b        []byte
	l        *Layout // the result being filled in
	opsize16 bool    // a 66 prefix is present
	addr32   bool    // a 67 prefix is present
	w        bool    // REX.W, REX2.W, VEX.W, EVEX.W or XOP.W
	rep      byte    // the last of f2/f3, or 0 (selects the mandatory-prefix form)
}

// need reports whether the instruction can extend to end bytes: beyond
// MaxLen it is too long whatever the input holds, beyond the input it is
// truncated. Checking MaxLen first makes the outcome independent of the
// bytes past the 15th, so Decode(b) and Decode(b[:Len]) always agree.
func (d *decoder) need(end int) error {
	if end > MaxLen {
		return ErrTooLong
	}
	if end > len(d.b) {
		return ErrTruncated
	}
	return nil
}

// Decode decodes the layout of the 64-bit mode instruction at the start of
// b. It reads at most 15 bytes, never panics and does not allocate.
func Decode(b []byte) (Layout, error) {
	// The decoder fills in l in place; nothing escapes, so this costs no
	// allocation.
	l := Layout{ModRMOff: -1, SIBOff: -1, SuffixOff: -1}
	d := decoder{b: b, l: &l}
	if err := d.decode(); err != nil {
		return Layout{}, err
	}
	return l, nil
}

func (d *decoder) decode() error {
	b := d.b
	var rex byte
	lock := false
	i := 0
	// Legacy prefixes may come in any order and number (up to the length
	// limit); a REX only counts when it immediately precedes the opcode or
	// escape, so one followed by another prefix is dropped.
prefixes:
	for {
		if err := d.need(i + 1); err != nil {
			return err
		}
		c := b[i]
		switch c {
		case 0x66:
			d.opsize16 = true
		case 0x67:
			d.addr32 = true
		case 0xf2, 0xf3:
			d.rep = c
		case 0xf0:
			lock = true
		case 0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65:
		default:
			if c&0xf0 != 0x40 {
				break prefixes
			}
			rex = c
			i++
			continue
		}
		rex = 0
		i++
	}
	d.l.Prefixes = int8(i)
	if rex != 0 {
		d.l.Prefixes--
		d.l.Rex = rex
		d.w = rex&8 != 0
	}

	switch c := b[i]; c {
	case 0x0f:
		return d.escape0F(i + 1)
	case 0xc4, 0xc5, 0x62:
		if rex != 0 || d.opsize16 || d.rep != 0 || lock {
			return ErrInvalid
		}
		return d.vex(i, c)
	case 0x8f:
		// 8f is POP r/m (ModRM.reg = 0) unless the map-select field of the
		// next byte (bits 4:0, which overlay ModRM.reg[1:0] and rm) is >= 8,
		// which makes it an XOP prefix.
		if err := d.need(i + 2); err != nil {
			return err
		}
		if b[i+1]&0x1f >= 8 {
			if rex != 0 || d.opsize16 || d.rep != 0 || lock {
				return ErrInvalid
			}
			return d.vex(i, c)
		}
	case 0xd5:
		if rex != 0 {
			return ErrInvalid
		}
		return d.rex2(i)
	}
	return d.operands(i, Map1Byte, oneByte[b[i]])
}

// escape0F decodes the opcode after a 0f escape byte at i-1.
func (d *decoder) escape0F(i int) error {
	if err := d.need(i + 1); err != nil {
		return err
	}
	switch c := d.b[i]; c {
	case 0x38:
		if err := d.need(i + 2); err != nil {
			return err
		}
		a := fModRM
		if !legacy0F38.has(d.b[i+1]) {
			a = fBad
		}
		return d.operands(i+1, Map0F38, a)
	case 0x3a:
		if err := d.need(i + 2); err != nil {
			return err
		}
		a := fModRM | kIb
		if !legacy0F3A.has(d.b[i+1]) {
			a = fBad
		}
		return d.operands(i+1, Map0F3A, a)
	case 0x0f:
		return d.operands(i, Map3DNow, fModRM)
	default:
		return d.operands(i, Map0F, twoByte[c])
	}
}

// vex decodes a VEX (c4, c5), EVEX (62) or XOP (8f) prefix at i. Legacy
// prefixes before it were already validated.
func (d *decoder) vex(i int, c byte) error {
	b := d.b
	var m Map
	var n int // prefix length including the escape byte
	switch c {
	case 0xc5:
		n = 2
		d.l.Escape = VEX2
		m = Map0F
	case 0xc4:
		n = 3
		d.l.Escape = VEX3
	case 0x8f:
		n = 3
		d.l.Escape = XOP
	default:
		n = 4
		d.l.Escape = EVEX
	}
	// The opcode follows the prefix.
	if err := d.need(i + n + 1); err != nil {
		return err
	}
	if n >= 3 {
		d.w = b[i+2]&0x80 != 0
	}
	var a attr
	switch d.l.Escape {
	case VEX2, VEX3:
		if d.l.Escape == VEX3 {
			m = Map(b[i+1] & 0x1f)
		}
		switch m {
		case Map0F:
			a = vex0F[b[i+n]]
		case Map0F38:
			a = fModRM
		case Map0F3A:
			a = fModRM | kIb
		case Map7:
			// USER_MSR: urdmsr/uwrmsr r64, imm32 (VEX.128.F2/F3.M7.W0 f8 /0).
			if b[i+n] != 0xf8 {
				return ErrInvalid
			}
			a = fModRM | kId
		default:
			return ErrInvalid
		}
	case XOP:
		m = Map(b[i+1] & 0x1f)
		switch m {
		case MapXOP8:
			a = fModRM | kIb
		case MapXOP9:
			a = fModRM
		case MapXOPA:
			a = fModRM | kId
		default:
			return ErrInvalid
		}
	case EVEX:
		// Bit 3 of P0 and bit 2 of P1 were fixed (0 and 1) before APX
		// reused them as B4 and ~X4 to reach r16-r31; they do not change
		// the length, so both values are accepted.
		m = Map(b[i+1] & 0x07)
		switch m {
		case Map0F:
			a = vex0F[b[i+n]]
			if a&kindMask == kNone && a&fModRM == 0 {
				return ErrInvalid // no EVEX form of vzeroupper/vzeroall
			}
		case Map0F38, Map5, Map6:
			a = fModRM
		case Map0F3A:
			a = fModRM | kIb
		case 4, 7:
			return ErrUnsupported
		default:
			return ErrInvalid
		}
	}
	return d.operands(i+n, m, a)
}

// rex2 decodes an APX REX2 prefix (d5 payload) at i: the payload's M0 bit
// selects the one-byte or the 0f map and the opcode follows directly.
func (d *decoder) rex2(i int) error {
	b := d.b
	if err := d.need(i + 3); err != nil {
		return err
	}
	payload := b[i+1]
	d.l.Escape = REX2
	d.w = payload&0x08 != 0
	op := b[i+2]
	m, a := Map1Byte, oneByte[op]
	if payload&0x80 != 0 {
		m, a = Map0F, twoByte[op]
	}
	if m == Map1Byte && op == 0xa1 && !d.w {
		// jmpabs imm64: the only use of the a0-af row under REX2.
		return d.operands(i+2, m, kImm64)
	}
	if rex2Bad(m, op) {
		return ErrInvalid
	}
	return d.operands(i+2, m, a)
}

// operands decodes from the opcode byte at i to the end of the instruction
// using the opcode's attributes a.
func (d *decoder) operands(i int, m Map, a attr) error {
	if a&fBad != 0 {
		return ErrInvalid
	}
	b, l := d.b, d.l
	l.Map = m
	l.Opcode = b[i]
	l.OpcodeOff = int8(i)
	i++
	if a&fModRM != 0 {
		if err := d.need(i + 1); err != nil {
			return err
		}
		modrm := b[i]
		l.ModRMOff = int8(i)
		l.ModRM = modrm
		i++
		// 16-bit addressing does not exist in 64-bit mode: a 67 prefix
		// selects 32-bit addressing with the same ModRM/SIB layout.
		if modrm < 0xc0 && a&fRegOnly == 0 {
			mod, rm := modrm>>6, modrm&7
			disp := 0
			switch mod {
			case 1:
				disp = 1
			case 2:
				disp = 4
			}
			if rm == 4 {
				if err := d.need(i + 1); err != nil {
					return err
				}
				l.SIBOff = int8(i)
				if mod == 0 && b[i]&7 == 5 {
					disp = 4 // no base: disp32
				}
				i++
			} else if mod == 0 && rm == 5 {
				disp = 4
				l.RIPRelative = true
			}
			if disp > 0 {
				l.DispOff, l.DispSize = int8(i), int8(disp)
				i += disp
			}
		}
		if a&fGroup != 0 {
			var err error
			if a, err = d.fixGroup(m, l.Opcode, modrm, a); err != nil {
				return err
			}
		}
	}

	size := 0
	rel := false
	switch a & kindMask {
	case kIb:
		size = 1
	case kIw:
		size = 2
	case kIz:
		size = 4
		if d.opsize16 && !d.w {
			size = 2
		}
	case kIv:
		size = 4
		if d.w {
			size = 8
		} else if d.opsize16 {
			size = 2
		}
	case kEnter:
		size = 3
	case kIb2:
		size = 2
	case kId:
		size = 4
	case kImm64:
		size = 8
	case kMoffs:
		// The moffs address is a displacement without ModRM.
		l.DispOff, l.DispSize = int8(i), 8
		if d.addr32 {
			l.DispSize = 4
		}
		i += int(l.DispSize)
	case kRel8:
		size, rel = 1, true
	case kRel32:
		size, rel = 4, true
	case kRelZ:
		size, rel = 4, true
		if d.opsize16 && !d.w {
			size = 2
		}
	}
	if size > 0 {
		if rel {
			l.RelOff, l.RelSize = int8(i), int8(size)
		} else {
			l.ImmOff, l.ImmSize = int8(i), int8(size)
		}
		i += size
	}

	if m == Map3DNow {
		if err := d.need(i + 1); err != nil {
			return err
		}
		if !amd3DNow.has(b[i]) {
			return ErrInvalid
		}
		l.SuffixOff = int8(i)
		i++
	}

	if err := d.need(i); err != nil {
		return err
	}
	l.Len = int8(i)
	return nil
}

// fixGroup refines the attributes of opcodes whose layout depends on
// ModRM.reg or on the mandatory prefix, and rejects undefined group members.
func (d *decoder) fixGroup(m Map, op, modrm byte, a attr) (attr, error) {
	reg := modrm >> 3 & 7
	if m == Map0F {
		switch op {
		case 0x78:
			// 66: extrq xmm, ib, ib; f2: insertq xmm, xmm, ib, ib;
			// none: vmread (no immediate). f3 is undefined.
			switch {
			case d.rep == 0xf2:
				return fModRM | kIb2, nil
			case d.rep == 0xf3:
				return 0, ErrInvalid
			case d.opsize16:
				return fModRM | kIb2, nil
			}
			return fModRM, nil
		case 0x79:
			// vmwrite / extrq xmm, xmm / insertq xmm, xmm: no immediate.
			if d.rep == 0xf3 {
				return 0, ErrInvalid
			}
			return fModRM, nil
		case 0xa6, 0xa7:
			// VIA PadLock / Zhaoxin GMI: register forms only, ModRM selects
			// the operation (0f a6 c0 montmul, c8 xsha1, d0 xsha256, e0
			// xsha512, e8 ccs_hash; 0f a7 c0 xstore, c8..e8 xcrypt-ecb/cbc/
			// ctr/cfb/ofb, f0 ccs_encrypt). OpenSSL's padlock engine uses them.
			ok := modrm == 0xc0 || modrm == 0xc8 || modrm == 0xd0 || modrm == 0xe0 || modrm == 0xe8
			if op == 0xa7 {
				ok = modrm >= 0xc0 && modrm&7 == 0 && modrm != 0xf8
			}
			if !ok {
				return 0, ErrInvalid
			}
			return fModRM, nil
		case 0xb8:
			// popcnt needs f3; 0f b8 alone is IA-64 jmpe, absent in 64-bit mode.
			if d.rep != 0xf3 {
				return 0, ErrInvalid
			}
			return fModRM, nil
		}
		return a, nil
	}
	switch op {
	case 0x8f: // pop r/m is /0; the rest of the space is XOP
		if reg != 0 {
			return 0, ErrInvalid
		}
	case 0xc6: // mov r/m8, imm8 is /0; c6 f8 ib is xabort
		if reg != 0 && modrm != 0xf8 {
			return 0, ErrInvalid
		}
	case 0xc7: // mov r/m, imm32 is /0; c7 f8 is xbegin rel32
		if modrm == 0xf8 {
			return fModRM | kRelZ, nil
		}
		if reg != 0 {
			return 0, ErrInvalid
		}
	case 0xf6, 0xf7: // only test (/0, and its alias /1) has an immediate
		if reg >= 2 {
			return fModRM, nil
		}
	case 0xfe: // inc/dec r/m8
		if reg >= 2 {
			return 0, ErrInvalid
		}
	case 0xff: // /7 is undefined
		if reg == 7 {
			return 0, ErrInvalid
		}
	}
	return a, nil
}

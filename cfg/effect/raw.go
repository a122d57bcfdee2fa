package effect

import (
	"encoding/binary"

	"golang.org/x/arch/x86/x86asm"

	"hijack/ibr/x86len"
)

// legacy handles the legacy-encoded opcodes that x86asm decodes wrongly or
// not at all, reading the bytes. It reports whether it did; if not, the
// x86asm decoding is used.
func (e *Effect) legacy(c *ctx) bool {
	lay := c.lay
	mod := lay.ModRM >> 6
	regf := (lay.ModRM >> 3) & 7
	switch lay.Map {
	case x86len.Map0F:
		switch op := lay.Opcode; {
		case op == 0x1e:
			e.Known = true
			if c.f3 && mod == 3 && regf == 1 {
				// rdsspd/rdsspq r: writes the shadow-stack pointer, but
				// is a nop when shadow stacks are off (glibc zeroes the
				// register first and tests it): maybe written.
				e.Partial |= c.rmReg().Set()
			}
			// endbr64/endbr32 (f3 0f 1e fa/fb) and hint nops: nothing.
			return true
		case op == 0x18 && (regf >= 4 || mod == 3):
			// Reserved prefetch hints: nops.
			e.Known = true
			return true
		case op == 0x1c && regf == 0 && mod != 3 && !c.f2 && !c.f3 && !c.opsize16:
			// cldemote: a cache hint like the prefetches; the address
			// registers count as used.
			e.Known = true
			e.useAddr(c.rawMem())
			return true
		case op >= 0x19 && op <= 0x1f:
			// Hint nops (0f 1f nopw/nopl, retired MPX bnd*): no effect,
			// the memory operand is not accessed.
			e.Known = true
			return true
		case op == 0x0d:
			// 3DNow!/AMD prefetch, prefetchw, prefetchwt1 and hint nops:
			// no data access; the address registers count as used, as for
			// the other prefetches.
			e.Known = true
			if mod != 3 {
				e.useAddr(c.rawMem())
			}
			return true
		case op == 0x0e:
			// femms.
			e.Known = true
			return true
		case op == 0x01:
			return e.legacy0F01(c, mod, regf)
		case op == 0xae:
			return e.legacy0FAE(c, mod, regf)
		case op == 0xc7:
			return e.legacy0FC7(c, mod, regf)
		}
	case x86len.Map0F38:
		switch lay.Opcode {
		case 0xf6:
			var f Flags
			switch {
			case c.f3:
				f = OF // adox
			case c.opsize16:
				f = CF // adcx
			default:
				e.unknown(c) // wrss
				return true
			}
			// adcx/adox reg, r/m: reg += r/m + flag; only that flag.
			e.Known = true
			e.FlagsUse |= f
			e.FlagsDef |= f
			r := c.regReg()
			e.Use |= r.Set()
			e.Def |= r.Set()
			if mod == 3 {
				e.Use |= c.rmReg().Set()
			} else {
				m := c.rawMem()
				e.useAddr(m)
				size := 4
				if c.lay.Rex&8 != 0 {
					size = 8
				}
				e.addAccess(Access{Arg: 1, Mem: m, Size: size, Read: true})
			}
			return true
		case 0xf5, 0xf8, 0xf9:
			// wruss, movdir64b, movdiri, enqcmd(s): not modelled.
			e.unknown(c)
			return true
		}
	}
	return false
}

// legacy0F01 handles the 0f 01 group members x86asm does not know.
func (e *Effect) legacy0F01(c *ctx, mod, regf byte) bool {
	if mod != 3 {
		if c.f3 && regf == 5 {
			// rstorssp m64: checks and updates a shadow-stack token.
			e.Known = true
			m := c.rawMem()
			e.useAddr(m)
			e.addAccess(Access{Arg: 0, Mem: m, Size: 8, Read: true, Write: true})
			return true
		}
		return false
	}
	e.Known = true
	switch m := c.lay.ModRM; {
	case m == 0xee && !c.f2 && !c.f3 && !c.opsize16:
		// rdpkru: ECX must be 0; EDX:EAX = 0:PKRU.
		e.Use |= sRCX
		e.Def |= sRAX | sRDX
	case m == 0xef && !c.f2 && !c.f3 && !c.opsize16:
		// wrpkru: PKRU = EAX; ECX and EDX must be 0.
		e.Use |= sRAX | sRCX | sRDX
	case m == 0xea && c.f3:
		// saveprevssp: shadow-stack bookkeeping, no general register.
	case m == 0xe8 && !c.f2 && !c.f3 && !c.opsize16:
		// serialize.
	case (m == 0xe8 || m == 0xe9) && c.f2:
		// xsusldtrk, xresldtrk.
	default:
		e.Known = false
		return false
	}
	return true
}

// legacy0FAE handles the prefixed members of the 0f ae group, which x86asm
// decodes as their unprefixed neighbours (incssp as lfence, clwb as
// xsaveopt).
func (e *Effect) legacy0FAE(c *ctx, mod, regf byte) bool {
	switch {
	case c.f3 && mod == 3 && regf <= 3:
		return false // rdfsbase, rdgsbase, wrfsbase, wrgsbase: x86asm is right.
	case c.f3 && mod == 3 && regf == 5:
		// incsspd/incsspq r: pops shadow-stack entries, reads r.
		e.Known = true
		e.Use |= c.rmReg().Set()
		return true
	case c.opsize16 && !c.f2 && !c.f3 && mod != 3 && regf >= 6:
		// clwb, clflushopt: write back / flush a cache line; no data
		// access, but the address is used and may fault.
		e.Known = true
		e.useAddr(c.rawMem())
		return true
	case c.f2 || c.f3 || c.opsize16:
		// ptwrite, umonitor, umwait, tpause, ...: not modelled.
		e.unknown(c)
		return true
	}
	return false
}

// legacy0FC7 handles the register forms of the 0f c7 group: rdrand,
// rdseed, rdpid (x86asm drops rdrand's operand and fails on the others).
func (e *Effect) legacy0FC7(c *ctx, mod, regf byte) bool {
	if mod != 3 {
		return false // cmpxchg8b/16b, xsavec, xsaves, xrstors.
	}
	e.Known = true
	r := c.rmReg()
	switch {
	case regf == 7 && c.f3:
		// rdpid r64.
		e.Def |= r.Set()
	case (regf == 6 || regf == 7) && !c.f2 && !c.f3:
		// rdrand, rdseed: CF=1 and a random value, or CF=0 and 0; OF SF
		// ZF AF PF cleared.
		e.write(r, c.dataBytes)
		e.FlagsDef |= Status
	default:
		e.unknown(c)
	}
	return true
}

// regReg returns the general register in ModRM.reg (with REX.R).
func (c *ctx) regReg() Reg {
	r := Reg(c.lay.ModRM>>3) & 7
	if c.lay.Rex&4 != 0 {
		r |= 8
	}
	return r
}

// rmReg returns the general register in ModRM.rm (with REX.B), for mod 3.
func (c *ctx) rmReg() Reg {
	r := Reg(c.lay.ModRM) & 7
	if c.lay.Rex&1 != 0 {
		r |= 8
	}
	return r
}

// rawMem decodes the ModRM memory operand from the bytes, for legacy and
// VEX/EVEX/XOP encodings (the register extension bits then come from the
// prefix payload). EVEX compressed displacements (disp8*N) are not scaled.
func (c *ctx) rawMem() x86asm.Mem {
	lay := c.lay
	var rexB, rexX bool
	switch lay.Escape {
	case x86len.NoEscape:
		rexB, rexX = lay.Rex&1 != 0, lay.Rex&2 != 0
	case x86len.VEX2:
	case x86len.VEX3, x86len.XOP, x86len.EVEX:
		p := c.raw[lay.Prefixes+1]
		rexB, rexX = p&0x20 == 0, p&0x40 == 0
	case x86len.REX2:
		p := c.raw[lay.OpcodeOff-1]
		rexB, rexX = p&1 != 0, p&2 != 0
	}
	base := func(n byte) x86asm.Reg {
		if c.addr32 {
			return x86asm.EAX + x86asm.Reg(n)
		}
		return x86asm.RAX + x86asm.Reg(n)
	}
	m := x86asm.Mem{Segment: c.seg}
	mod := lay.ModRM >> 6
	rm := lay.ModRM & 7
	if lay.RIPRelative {
		m.Base = x86asm.RIP
		if c.addr32 {
			m.Base = x86asm.EIP
		}
	} else if rm == 4 && lay.SIBOff >= 0 {
		sib := c.raw[lay.SIBOff]
		b := sib & 7
		x := (sib >> 3) & 7
		if rexX {
			x |= 8
		}
		if x != 4 {
			m.Index = base(x)
			m.Scale = 1 << (sib >> 6)
		}
		if !(b == 5 && mod == 0) {
			if rexB {
				b |= 8
			}
			m.Base = base(b)
		}
	} else {
		b := rm
		if rexB {
			b |= 8
		}
		m.Base = base(b)
	}
	switch lay.DispSize {
	case 1:
		m.Disp = int64(int8(c.raw[lay.DispOff]))
	case 4:
		m.Disp = int64(int32(binary.LittleEndian.Uint32(c.raw[lay.DispOff:])))
	}
	return m
}

// Package effect models what an x86-64 instruction reads and writes:
// general registers (used, fully defined, partly or maybe written), the
// status flags and DF (used, defined, left undefined, maybe written),
// memory accesses with their address expression, size and direction
// (explicit operands and implicit ones: stack slots, string operations,
// xlat, save areas), and how it transfers control. Of computes it for one
// instruction; see Effect for the invariants clients may rely on.
//
// It serves register and flag liveness (the clobber preset destroys what
// liveness claims dead, so an error here breaks programs) and the memory
// instrumentation of vptrace. Where the architecture or this model is
// unsure, it errs on the side that keeps liveness safe: more Use, FlagsUse
// and FlagsMay, less Def and FlagsDef, Known=false for anything not
// modelled.
//
// Semantics come from golang.org/x/arch/x86/x86asm as package ibr decodes
// them, with the encoding's exact layout from hijack/ibr/x86len. Where
// x86asm fails or is wrong (endbr64/32, adcx/adox, rdssp/incssp,
// saveprevssp/rstorssp, rdpkru/wrpkru, serialize, rdrand/rdseed/rdpid,
// clwb, clflushopt, cldemote, hint nops, 3DNow! prefetch and femms, VEX and
// EVEX with 67 or segment prefixes, vzeroupper/vzeroall), Of reads the
// bytes itself. Vector registers (XMM/YMM/ZMM, MMX, x87, AVX-512 masks)
// are not tracked. Of does not allocate, except for the rare VEX
// instructions with legacy prefixes that x86asm cannot decode.
//
// # Choices
//
// Registers:
//   - 32-bit results define the whole register (they zero-extend); 8- and
//     16-bit results (including AH..BH) are Partial, and Partial ⊆ Use.
//   - Writes that may not happen are Partial: cmov with a 16- or 64-bit
//     destination (a 32-bit cmov always writes, so its destination is Use
//     and Def), bsf/bsr (the destination is kept for a zero source),
//     cmpxchg's destination register and RAX, cmpxchg8b/16b's RDX:RAX,
//     rep lods, rdssp (a nop without shadow stacks), xbegin's EAX (written
//     on the abort path), string and loop updates with a 67 prefix.
//   - Zero idioms (xor, sub, sbb and cmp of a 32/64-bit register with
//     itself) do not use the register.
//   - Implicit operands: mul/imul/div/idiv (RDX:RAX or AX), cbw..cqo,
//     cpuid, rdtsc(p), rdpmc, xgetbv, rdpkru/wrpkru, cmpxchg*, pcmpestr*/
//     pcmpistri (ECX), mulx (RDX), xsave*/xrstor* (EDX:EAX), maskmovdqu
//     (RDI), string operations (RSI, RDI, RCX with rep, RAX), xlat, loop
//     and jrcxz (RCX), push/pop/call/ret/enter/leave/pushf/popf (RSP, RBP).
//   - syscall uses RAX and the argument registers RDI RSI RDX R10 R8 R9 and
//     all flags (saved in R11), and defines RAX RCX R11. int n (also int3,
//     int1, into) uses every register and flag, since a signal handler can
//     read them; int $0x80 may also write RAX and R8-R11.
//   - Calls report only what the call instruction does (see Effect).
//
// Flags:
//   - Flags the architecture leaves undefined are in FlagsDef and
//     FlagsUndef: compilers never read them. Some CPUs keep their old
//     value (the oracle test shows AMD keeping SF ZF AF PF across mul, OF
//     across tzcnt, ...); a client that must be safe even for code relying
//     on that can treat only FlagsDef &^ FlagsUndef as killed.
//   - Shifts and rotates by an immediate count: the count is masked to 5
//     bits (6 for 64-bit operands); a masked count of 0 changes no flag;
//     otherwise the flags they write are FlagsDef (OF undefined unless the
//     count is 1, AF undefined for shifts). By CL the count is unknown, so
//     those flags are FlagsMay. rcl/rcr use CF. shld/shrd likewise.
//   - repe/repne cmps and scas may not execute (RCX 0): FlagsMay.
//   - fcomi/fucomi(p) define ZF PF CF and clear OF SF AF; comis/ucomis,
//     ptest, vtestp, kortest, ktest, pcmp*str*, popcnt, xtest, rdrand and
//     rdseed define all six status flags; adcx uses and defines only CF,
//     adox only OF; BMI1 andn bextr blsi blsmsk blsr and BMI2 bzhi define
//     them, the other BMI2 instructions (mulx pdep pext rorx sarx shlx
//     shrx) none. String operations read DF; cld/std, popf define it.
//
// Memory:
//   - Every explicit memory operand is an access with x86asm's size;
//     stores write only, read-modify-write operands (add to memory, xchg,
//     xadd, cmpxchg, bts, ...) read and write, comparisons read.
//   - No access: lea, nop (multi-byte and hint nops), prefetch*, clflush,
//     clflushopt, clwb, cldemote, gather/scatter prefetches. Their address
//     registers are used, except for nops (clflush can fault on its
//     address, so a clobbered register would matter).
//   - Implicit (in AT&T notation): push/call write -size(%rsp), pop/ret
//     read (%rsp), pushf/popf likewise, enter (its frame-pointer copies
//     too), leave reads (%rbp), movs/cmps/lods/stos/scas at (%rsi) and
//     (%rdi) (a range with rep: see Access.Rep), xlat (%rbx,%al),
//     maskmovdqu/maskmovq (%rdi) (masked), cmpxchg8b/16b 8 or
//     16 bytes, fxsave/fxrstor 512 bytes, xsave*/xrstor* of unknown size
//     (xsave* read and write: they update the header), x87 environments
//     (28 bytes) and states (108 bytes).
//   - Masked (may touch only part): AVX-512 operands with an opmask,
//     vmaskmov/vpmaskmov, maskmovdqu/maskmovq, gathers and scatters (which
//     are also VSIB: no single address).
//   - bt/bts/btr/btc with a register bit offset can reach outside the
//     operand: BitOffset.
//   - The kernel's accesses during syscall are not reported.
//
// Control: see Control. Branch targets are not reported; they are in the
// x86asm arguments and the layout.
//
// Not modelled (Known=false): privileged and I/O instructions, far
// transfers, segment-descriptor instructions, XOP and 3DNow! arithmetic,
// VIA PadLock, wrss/wruss, movdiri/movdir64b, enqcmd, user wait
// (umonitor, umwait, tpause), ptwrite, and anything x86asm cannot decode
// that is not listed above. The test suite sweeps libc.a, libcrypto.a and
// libsqlite3.a and gcc/clang output and fails if any instruction outside
// a short list of hand-written-assembly-only ones is unknown.
package effect

import (
	"golang.org/x/arch/x86/x86asm"

	"hijack/ibr/x86len"
)

// ctx holds what Of learns from the encoding.
type ctx struct {
	asm  *x86asm.Inst
	lay  *x86len.Layout
	raw  []byte
	info *opInfo

	seg       x86asm.Reg // FS or GS override, else 0
	addr32    bool       // 67 prefix
	opsize16  bool       // 66 prefix
	rep       bool       // f2 or f3 prefix
	f2, f3    bool
	evexMask  bool // EVEX with a non-zero opmask
	dataBytes int  // operand size from the encoding: 2, 4 or 8
}

// Of returns the effect of one instruction: asm is its x86asm decoding as
// package ibr makes it (Op 0 when x86asm failed; never nil), lay its
// x86len layout and raw its bytes (at least lay.Len of them). It is meant
// for ibr's Code elements; Data and Pad elements are not instructions.
//
// A layout made only of legacy prefixes (ibr's Prefix elements, split off
// an instruction a branch enters after them) has no effect of its own when
// the prefixes are lock or the no-op segments cs/ds/es/ss; any other prefix
// changes the meaning of the instruction after it, which is decoded
// without it, so Of reports it as unknown.
func Of(asm *x86asm.Inst, lay *x86len.Layout, raw []byte) (e Effect) {
	if int(lay.Len) <= 0 || len(raw) < int(lay.Len) || lay.Prefixes > lay.Len {
		e.unknown(nil)
		return
	}
	// Field by field: a composite literal is built in a temporary and
	// copied, and the mixed-size stores stall the copy's loads.
	var c ctx
	c.asm, c.lay, c.raw, c.dataBytes = asm, lay, raw[:lay.Len], 4
	c.prefixes()
	if lay.Prefixes == lay.Len {
		e.Known = true
		for _, b := range raw[:lay.Prefixes] {
			switch b {
			case 0xf0, 0x2e, 0x3e, 0x26, 0x36:
			default:
				e.unknown(nil)
			}
		}
		return
	}
	if lay.Escape == x86len.NoEscape {
		if lay.Rex&8 != 0 {
			c.dataBytes = 8
		} else if c.opsize16 {
			c.dataBytes = 2
		}
		if e.legacy(&c) {
			e.finish()
			return
		}
	} else {
		if lay.Escape == x86len.EVEX && lay.Prefixes+3 < lay.Len {
			c.evexMask = raw[lay.Prefixes+3]&7 != 0
		}
		if asm.Op == 0 && e.vexFallback(&c) {
			return
		}
	}
	e.decoded(&c)
	return
}

// vexFallback handles VEX/EVEX instructions x86asm did not decode:
// vzeroupper/vzeroall (x86asm may get their length wrong) and those with
// legacy prefixes. It is kept out of line: its x86asm.Inst would make Of's
// frame large.
//
//go:noinline
func (e *Effect) vexFallback(c *ctx) bool {
	lay := c.lay
	if (lay.Escape == x86len.VEX2 || lay.Escape == x86len.VEX3) && lay.Map == x86len.Map0F && lay.Opcode == 0x77 {
		e.Known = true
		return true
	}
	if lay.Escape == x86len.XOP {
		return false
	}
	inst, ok := c.redecode()
	if !ok {
		return false
	}
	c.asm = &inst
	e.decoded(c)
	return true
}

// decoded computes the effect from x86asm's decoding.
func (e *Effect) decoded(c *ctx) {
	table := opTable()
	if c.asm.Op == 0 || int(c.asm.Op) >= len(table) {
		e.unknown(c)
		return
	}
	c.info = &table[c.asm.Op]
	e.Known = true
	e.of(c)
	e.finish()
}

// prefixes reads the legacy prefixes.
func (c *ctx) prefixes() {
	for _, b := range c.raw[:c.lay.Prefixes] {
		switch b {
		case 0x64:
			c.seg = x86asm.FS
		case 0x65:
			c.seg = x86asm.GS
		case 0x26, 0x2e, 0x36, 0x3e:
			c.seg = 0
		case 0x66:
			c.opsize16 = true
		case 0x67:
			c.addr32 = true
		case 0xf2:
			c.f2, c.rep = true, true
		case 0xf3:
			c.f3, c.rep = true, true
		}
	}
}

// redecode decodes a VEX/EVEX instruction without its legacy prefixes
// (x86asm fails on 67/segment-prefixed VEX) and applies them to the
// memory operand.
func (c *ctx) redecode() (x86asm.Inst, bool) {
	for _, b := range c.raw[:c.lay.Prefixes] {
		switch b {
		case 0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65, 0x67:
		default:
			return x86asm.Inst{}, false
		}
	}
	body := c.raw[c.lay.Prefixes:]
	inst, err := x86asm.Decode(body, 64)
	if err != nil || inst.Op == 0 || inst.Len != len(body) {
		return x86asm.Inst{}, false
	}
	inst.Len = int(c.lay.Len)
	if c.addr32 {
		for i, a := range inst.Args {
			if m, ok := a.(x86asm.Mem); ok {
				m.Base = to32(m.Base)
				m.Index = to32(m.Index)
				inst.Args[i] = m
			}
		}
	}
	return inst, true
}

// to32 turns a 64-bit general register into its 32-bit form.
func to32(r x86asm.Reg) x86asm.Reg {
	if r >= x86asm.RAX && r <= x86asm.R15 {
		return r - x86asm.RAX + x86asm.EAX
	}
	return r
}

// GPR maps an x86asm general register of any width (AL, AH, AX, EAX,
// RAX, R8B, ...) to its 64-bit register and reports its width in bytes
// (1 for AH..BH too); ok is false for any other register (RIP, segment,
// vector, mask, x87, ...).
func GPR(r x86asm.Reg) (reg Reg, width int, ok bool) {
	switch {
	case r >= x86asm.AL && r <= x86asm.BL:
		return Reg(r - x86asm.AL), 1, true
	case r >= x86asm.AH && r <= x86asm.BH:
		return Reg(r - x86asm.AH), 1, true
	case r >= x86asm.SPB && r <= x86asm.R15B:
		return Reg(r-x86asm.SPB) + RSP, 1, true
	case r >= x86asm.AX && r <= x86asm.R15W:
		return Reg(r - x86asm.AX), 2, true
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return Reg(r - x86asm.EAX), 4, true
	case r >= x86asm.RAX && r <= x86asm.R15:
		return Reg(r - x86asm.RAX), 8, true
	}
	return 0, 0, false
}

// unknown makes e the conservative answer for an instruction that is not
// modelled.
func (e *Effect) unknown(c *ctx) {
	ctrl := e.Ctrl
	*e = Effect{Use: AllRegs, Partial: AllRegs, FlagsUse: AllFlags, FlagsMay: AllFlags, Ctrl: ctrl}
	if c == nil {
		return
	}
	if c.info != nil && c.info.ctrl != None {
		e.Ctrl = c.info.ctrl
	} else if c.lay.RelSize > 0 {
		e.Ctrl = CondJump
	}
	for i, a := range c.asm.Args {
		if m, ok := a.(x86asm.Mem); ok {
			e.Mem[0] = Access{Arg: i, Mem: c.norm(m), Size: c.asm.MemBytes, Read: true, Write: true}
			e.NMem = 1
			return
		}
	}
	if c.asm.Op == 0 && c.lay.ModRMOff >= 0 && c.lay.ModRM>>6 != 3 && c.lay.Escape != x86len.NoEscape {
		// Memory operand of an undecodable VEX/EVEX/XOP instruction.
		e.Mem[0] = Access{Arg: -1, Mem: c.rawMem(), Read: true, Write: true}
		e.NMem = 1
	}
}

// finish establishes the invariants documented on Effect.
func (e *Effect) finish() {
	e.Def &^= e.Partial
	e.Use |= e.Partial
	e.FlagsDef &^= e.FlagsMay
	e.FlagsUse |= e.FlagsMay
	e.FlagsUndef &= e.FlagsDef
}

// norm normalises an explicit memory operand: FS/GS segment only, no scale
// without index, RIP base for RIP-relative operands.
func (c *ctx) norm(m x86asm.Mem) x86asm.Mem {
	m.Segment = c.seg
	if m.Index == 0 {
		m.Scale = 0
	}
	if c.lay.RIPRelative && m.Base == 0 && m.Index == 0 {
		m.Base = x86asm.RIP
		if c.addr32 {
			m.Base = x86asm.EIP
		}
	}
	return m
}

// addAccess appends a memory access; too many makes the effect unknown.
func (e *Effect) addAccess(a Access) {
	if e.NMem >= MaxAccesses {
		e.Known = false
		return
	}
	e.Mem[e.NMem] = a
	e.NMem++
}

// useAddr adds the address registers of m to Use.
func (e *Effect) useAddr(m x86asm.Mem) {
	if r, _, ok := GPR(m.Base); ok {
		e.Use |= r.Set()
	}
	if r, _, ok := GPR(m.Index); ok {
		e.Use |= r.Set()
	}
}

// write records a register write of w bytes: 4 and 8 define the whole
// register (32-bit results zero-extend), 1 and 2 are partial.
func (e *Effect) write(r Reg, w int) {
	if w >= 4 {
		e.Def |= r.Set()
	} else {
		e.Partial |= r.Set()
	}
}

// reg applies an access mode to a register operand.
func (e *Effect) reg(a x86asm.Reg, mode byte) {
	r, w, ok := GPR(a)
	if !ok {
		return
	}
	switch mode {
	case 'r', 'a':
		e.Use |= r.Set()
	case 'w':
		e.write(r, w)
	case 'x':
		e.Use |= r.Set()
		e.write(r, w)
	case 'p':
		e.Partial |= r.Set()
	}
}

// mem applies an access mode to memory operand i.
func (e *Effect) mem(c *ctx, i int, m x86asm.Mem, mode byte) *Access {
	if mode == 'n' {
		return nil
	}
	e.useAddr(m)
	if mode == 'a' {
		return nil
	}
	size := c.asm.MemBytes
	if size == 0 {
		size = c.info.size
	}
	e.addAccess(Access{Arg: i, Mem: c.norm(m), Size: size,
		Read: mode != 'w', Write: mode != 'r',
		Masked: c.info.masked || c.evexMask})
	if e.NMem == 0 {
		return nil
	}
	return &e.Mem[e.NMem-1]
}

// operands applies the op's access modes to the explicit operands.
func (e *Effect) operands(c *ctx, spec string) {
	for i, a := range c.asm.Args {
		if a == nil {
			break
		}
		mode := byte('r')
		if i < len(spec) {
			mode = spec[i]
		}
		switch a := a.(type) {
		case x86asm.Reg:
			e.reg(a, mode)
		case x86asm.Mem:
			e.mem(c, i, a, mode)
		}
	}
}

// nargs counts the explicit operands.
func nargs(asm *x86asm.Inst) int {
	n := 0
	for _, a := range asm.Args {
		if a == nil {
			break
		}
		n++
	}
	return n
}

// width is the size in bytes of operand a (a register or the memory
// operand), or the encoded operand size.
func (c *ctx) width(a x86asm.Arg) int {
	switch a := a.(type) {
	case x86asm.Reg:
		if _, w, ok := GPR(a); ok {
			return w
		}
	case x86asm.Mem:
		if c.asm.MemBytes > 0 {
			return c.asm.MemBytes
		}
	}
	return c.dataBytes
}

// areg returns the general register r in the instruction's address size.
func (c *ctx) areg(r Reg) x86asm.Reg {
	if c.addr32 {
		return x86asm.EAX + x86asm.Reg(r)
	}
	return x86asm.RAX + x86asm.Reg(r)
}

// stack returns the implicit stack slot [RSP+disp].
func stack(disp int64) x86asm.Mem {
	return x86asm.Mem{Base: x86asm.RSP, Disp: disp}
}

// of fills e from the op's description.
func (e *Effect) of(c *ctx) {
	info := c.info
	asm := c.asm
	e.Use |= info.iuse
	e.Def |= info.idef
	e.Partial |= info.ipar
	e.FlagsUse |= info.fuse
	e.FlagsDef |= info.fdef
	e.FlagsUndef |= info.fund
	e.FlagsMay |= info.fmay
	e.Ctrl = info.ctrl

	switch info.kind {
	case kUnknown:
		e.unknown(c)

	case kNothing:

	case kGen:
		e.operands(c, info.args)
		e.zeroIdiom(c)

	case kBt:
		e.operands(c, info.args)
		if _, ok := asm.Args[1].(x86asm.Reg); ok && e.NMem == 1 {
			e.Mem[0].BitOffset = true
		}

	case kBitScan, kCmpxchg:
		// The destination keeps its value when the source is zero (bsf,
		// bsr) or the comparison succeeds (cmpxchg): Partial.
		e.operands(c, info.args)
		if info.kind == kCmpxchg {
			e.Use |= sRAX
			e.Partial |= sRAX
		}

	case kCmpxchgNB:
		e.operands(c, info.args)
		e.Use |= sRAX | sRDX | sRBX | sRCX
		e.Partial |= sRAX | sRDX

	case kCmov:
		// The source is always read (a memory source is loaded and may
		// fault even when the condition is false). A 32-bit destination
		// is always written (zero-extended), with the old low half when
		// the condition is false.
		if r, w, ok := GPR(regArg(asm.Args[0])); ok {
			e.Use |= r.Set()
			if w == 4 {
				e.Def |= r.Set()
			} else {
				e.Partial |= r.Set()
			}
		}
		switch a := asm.Args[1].(type) {
		case x86asm.Reg:
			e.reg(a, 'r')
		case x86asm.Mem:
			e.mem(c, 1, a, 'r')
		}

	case kShift:
		e.shift(c)

	case kShiftD:
		e.shiftD(c)

	case kImul:
		switch nargs(asm) {
		case 1:
			e.mulDiv(c)
		case 2:
			e.operands(c, "xr")
		default:
			e.operands(c, "wrr")
		}
		e.FlagsDef |= Status
		e.FlagsUndef |= SF | ZF | AF | PF

	case kMulDiv:
		e.mulDiv(c)

	case kString:
		e.stringOp(c)

	case kXlat:
		e.Use |= sRAX | sRBX
		e.Partial |= sRAX
		e.addAccess(Access{Arg: -1, Mem: x86asm.Mem{Segment: c.seg, Base: c.areg(RBX), Index: x86asm.AL, Scale: 1},
			Size: 1, Read: true})

	case kMaskmov:
		e.operands(c, "")
		e.Use |= sRDI
		e.addAccess(Access{Arg: -1, Mem: x86asm.Mem{Segment: c.seg, Base: c.areg(RDI)}, Size: info.size,
			Write: true, Masked: true})

	case kGather, kScatter:
		for i, a := range asm.Args {
			if m, ok := a.(x86asm.Mem); ok {
				e.useAddr(m)
				// Every element is predicated by a mask (a vector register
				// for AVX2, an opmask for AVX-512).
				e.addAccess(Access{Arg: i, Mem: c.norm(m), Size: asm.MemBytes, Read: info.kind == kGather,
					Write: info.kind == kScatter, VSIB: true, Elem: info.elem, Masked: true})
			}
		}

	case kPush:
		size := 8
		if c.dataBytes == 2 {
			size = 2
		}
		e.Use |= RSP.Set()
		e.Def |= RSP.Set()
		switch a := asm.Args[0].(type) {
		case x86asm.Reg:
			e.reg(a, 'r')
		case x86asm.Mem:
			e.mem(c, 0, a, 'r')
		}
		e.addAccess(Access{Arg: -1, Mem: stack(int64(-size)), Size: size, Write: true})

	case kPop:
		size := 8
		if c.dataBytes == 2 {
			size = 2
		}
		e.Use |= RSP.Set()
		e.Def |= RSP.Set()
		e.addAccess(Access{Arg: -1, Mem: stack(0), Size: size, Read: true})
		switch a := asm.Args[0].(type) {
		case x86asm.Reg:
			e.reg(a, 'w')
		case x86asm.Mem:
			if acc := e.mem(c, 0, a, 'w'); acc != nil {
				acc.Size = size
				if r, _, _ := GPR(a.Base); a.Base != 0 && r == RSP {
					// The CPU computes the address after incrementing RSP.
					acc.Mem.Disp += int64(size)
				}
			}
		}
		if r, _, ok := GPR(regArg(asm.Args[0])); ok && r == RSP {
			// pop %rsp: RSP gets the loaded value, not RSP+8.
			e.Def |= RSP.Set()
		}

	case kPushf:
		size := 8
		if c.dataBytes == 2 {
			size = 2
		}
		e.Use |= RSP.Set()
		e.Def |= RSP.Set()
		e.FlagsUse |= AllFlags
		e.addAccess(Access{Arg: -1, Mem: stack(int64(-size)), Size: size, Write: true})

	case kPopf:
		size := 8
		if c.dataBytes == 2 {
			size = 2
		}
		e.Use |= RSP.Set()
		e.Def |= RSP.Set()
		e.FlagsDef |= AllFlags
		e.addAccess(Access{Arg: -1, Mem: stack(0), Size: size, Read: true})

	case kCall:
		e.Use |= RSP.Set()
		e.Def |= RSP.Set()
		e.Ctrl = Call
		switch a := asm.Args[0].(type) {
		case x86asm.Reg:
			e.Ctrl = IndirectCall
			e.reg(a, 'r')
		case x86asm.Mem:
			e.Ctrl = IndirectCall
			if acc := e.mem(c, 0, a, 'r'); acc != nil {
				acc.Size = 8
			}
		}
		e.addAccess(Access{Arg: -1, Mem: stack(-8), Size: 8, Write: true})

	case kJmp:
		e.Ctrl = Jump
		switch a := asm.Args[0].(type) {
		case x86asm.Reg:
			e.Ctrl = IndirectJump
			e.reg(a, 'r')
		case x86asm.Mem:
			e.Ctrl = IndirectJump
			if acc := e.mem(c, 0, a, 'r'); acc != nil {
				acc.Size = 8
			}
		}

	case kRet:
		e.Use |= RSP.Set()
		e.Def |= RSP.Set()
		e.addAccess(Access{Arg: -1, Mem: stack(0), Size: 8, Read: true})

	case kJcc:

	case kLoop:
		e.Use |= sRCX
		if asm.Op == x86asm.LOOP || asm.Op == x86asm.LOOPE || asm.Op == x86asm.LOOPNE {
			if c.addr32 {
				e.Partial |= sRCX
			} else {
				e.Def |= sRCX
			}
		}

	case kEnter:
		// enter size, level: push rbp; level-1 frame pointers copied from
		// [rbp-8], [rbp-16], ...; push the new frame pointer; rbp = frame;
		// rsp -= size.
		e.Use |= RSP.Set() | RBP.Set()
		e.Def |= RSP.Set() | RBP.Set()
		level := int64(0)
		if im, ok := asm.Args[1].(x86asm.Imm); ok {
			level = int64(im) & 31
		}
		slots := int64(1)
		if level > 0 {
			slots = level + 1
		}
		e.addAccess(Access{Arg: -1, Mem: stack(-8 * slots), Size: int(8 * slots), Write: true})
		if level > 1 {
			e.addAccess(Access{Arg: -1, Mem: x86asm.Mem{Base: x86asm.RBP, Disp: -8 * (level - 1)},
				Size: int(8 * (level - 1)), Read: true})
		}

	case kLeave:
		// mov rsp, rbp; pop rbp.
		size := 8
		e.Use |= RBP.Set()
		e.Def |= RSP.Set()
		if c.dataBytes == 2 {
			size = 2
			e.Partial |= RBP.Set()
		} else {
			e.Def |= RBP.Set()
		}
		e.addAccess(Access{Arg: -1, Mem: x86asm.Mem{Base: x86asm.RBP}, Size: size, Read: true})

	case kInt:
		// The kernel sees every register (a signal handler may read and
		// change them through the ucontext; int $0x80 is the 32-bit
		// system call, which returns in eax and may clobber r8-r11).
		e.Use = AllRegs
		e.FlagsUse |= AllFlags
		if im, ok := asm.Args[0].(x86asm.Imm); ok && im == 0x80 {
			e.Partial |= sRAX | 0xf<<R8
		}

	case kXbegin:
		// On abort, execution resumes at the target with the status in
		// EAX; on the fall-through path EAX is unchanged.
		e.Partial |= sRAX
	}
}

// regArg returns a as a register, or 0.
func regArg(a x86asm.Arg) x86asm.Reg {
	r, _ := a.(x86asm.Reg)
	return r
}

// zeroIdiom drops the use of a 32- or 64-bit register combined with itself
// where the result does not depend on it: xor, sub and cmp give constants,
// sbb gives -CF.
func (e *Effect) zeroIdiom(c *ctx) {
	switch c.asm.Op {
	case x86asm.XOR, x86asm.SUB, x86asm.SBB, x86asm.CMP:
	default:
		return
	}
	a, ok := c.asm.Args[0].(x86asm.Reg)
	if !ok || c.asm.Args[1] != x86asm.Arg(a) {
		return
	}
	if r, w, ok := GPR(a); ok && w >= 4 {
		e.Use &^= r.Set()
	}
}

// shift models shl shr sar rol ror rcl rcr. The count is masked to 5 bits
// (6 for 64-bit operands); a masked count of 0 changes no flag. By CL the
// count is unknown, so the flags the shift would write are FlagsMay.
func (e *Effect) shift(c *ctx) {
	asm := c.asm
	e.operands(c, "xr")
	var written, undef Flags
	switch asm.Op {
	case x86asm.SHL, x86asm.SHR, x86asm.SAR:
		written, undef = Status, AF
	case x86asm.ROL, x86asm.ROR:
		written = CF | OF
	default: // RCL, RCR
		written = CF | OF
		e.FlagsUse |= CF
	}
	// (what a count of 0 leaves is passed through, not read; rcl and rcr
	// read CF whatever the count)
	pass := written
	if asm.Op == x86asm.RCL || asm.Op == x86asm.RCR {
		pass &^= CF
	}
	w := c.width(asm.Args[0])
	switch n := asm.Args[1].(type) {
	case x86asm.Imm:
		count := shiftCount(n, w)
		if count == 0 {
			return
		}
		if count != 1 {
			undef |= OF
		}
		if (asm.Op == x86asm.SHL || asm.Op == x86asm.SHR) && count >= int64(8*w) {
			undef |= CF
		}
		e.FlagsDef |= written
		e.FlagsUndef |= undef
	default:
		e.FlagsMay |= written
		e.FlagsPass |= pass
	}
}

// shiftCount is the count a shift by the immediate n uses: masked to 5
// bits, 6 for 64-bit (w 8) operands.
func shiftCount(n x86asm.Imm, w int) int64 {
	if w == 8 {
		return int64(n) & 63
	}
	return int64(n) & 31
}

// shiftD models shld and shrd: like shl, with the count in Args[2].
func (e *Effect) shiftD(c *ctx) {
	asm := c.asm
	e.operands(c, "xrr")
	w := c.width(asm.Args[0])
	switch n := asm.Args[2].(type) {
	case x86asm.Imm:
		count := shiftCount(n, w)
		if count == 0 {
			return
		}
		undef := AF
		if count != 1 {
			undef |= OF
		}
		if count > int64(8*w) {
			undef |= Status
		}
		e.FlagsDef |= Status
		e.FlagsUndef |= undef
	default:
		e.FlagsMay |= Status
		e.FlagsPass |= Status
	}
}

// mulDiv models mul, one-operand imul, div and idiv: AX, DX:AX, EDX:EAX or
// RDX:RAX by the operand.
func (e *Effect) mulDiv(c *ctx) {
	asm := c.asm
	e.operands(c, "r")
	w := c.width(asm.Args[0])
	div := asm.Op == x86asm.DIV || asm.Op == x86asm.IDIV
	e.Use |= sRAX
	switch {
	case w == 1:
		e.Partial |= sRAX
	case w == 2:
		e.Partial |= sRAX | sRDX
	default:
		e.Def |= sRAX | sRDX
	}
	if div {
		if w > 1 {
			e.Use |= sRDX
		}
		e.FlagsDef |= Status
		e.FlagsUndef |= Status
	} else {
		e.FlagsDef |= Status
		e.FlagsUndef |= SF | ZF | AF | PF
	}
}

// stringOp models movs cmps stos lods scas, with or without rep/repe/repne
// (f2 and f3 both repeat movs, stos and lods).
func (e *Effect) stringOp(c *ctx) {
	asm := c.asm
	elem := c.info.elem
	rsi := x86asm.Mem{Segment: c.seg, Base: c.areg(RSI)}
	rdi := x86asm.Mem{Base: c.areg(RDI)}
	e.FlagsUse |= DF
	// Pointer and count updates: with a 67 prefix only the low halves.
	upd := func(r Reg) {
		e.Use |= r.Set()
		if c.addr32 {
			e.Partial |= r.Set()
		} else {
			e.Def |= r.Set()
		}
	}
	acc := func(m x86asm.Mem, read, write bool) {
		a := Access{Arg: -1, Mem: m, Size: elem, Read: read, Write: write, Elem: elem}
		if c.rep {
			a.Rep, a.Size = true, 0
		}
		e.addAccess(a)
	}
	if c.rep {
		upd(RCX)
	}
	var flags bool
	switch asm.Op {
	case x86asm.MOVSB, x86asm.MOVSW, x86asm.MOVSD, x86asm.MOVSQ:
		upd(RSI)
		upd(RDI)
		acc(rsi, true, false)
		acc(rdi, false, true)
	case x86asm.CMPSB, x86asm.CMPSW, x86asm.CMPSD, x86asm.CMPSQ:
		upd(RSI)
		upd(RDI)
		acc(rsi, true, false)
		acc(rdi, true, false)
		flags = true
	case x86asm.STOSB, x86asm.STOSW, x86asm.STOSD, x86asm.STOSQ:
		upd(RDI)
		e.Use |= sRAX
		acc(rdi, false, true)
	case x86asm.LODSB, x86asm.LODSW, x86asm.LODSD, x86asm.LODSQ:
		upd(RSI)
		if elem >= 4 && !c.rep {
			e.Def |= sRAX
		} else {
			e.Partial |= sRAX
		}
		acc(rsi, true, false)
	default: // SCAS
		upd(RDI)
		e.Use |= sRAX
		acc(rdi, true, false)
		flags = true
	}
	if flags {
		if c.rep {
			e.FlagsMay |= Status // (RCX 0: the old flags stay)
			e.FlagsPass |= Status
		} else {
			e.FlagsDef |= Status
		}
	}
}

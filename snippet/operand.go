package snippet

import (
	"debug/elf"
	"fmt"

	"github.com/twitchyliquid64/golang-asm/obj"
	"github.com/twitchyliquid64/golang-asm/obj/x86"
)

// Reg is an x86-64 register.
//
// As in Go assembly, general-purpose registers have one number for all
// operand widths: the width comes from the instruction (MovQ, MovL, ...),
// so EAX and RAX are the same Reg. Byte registers (AL, ..., R15B, AH, ...)
// are distinct, because their encoding differs. Reg values are small (they
// fit a byte, so passing one as an Arg does not allocate); AsmReg converts
// to golang-asm's numbering.
type Reg uint8

// NoReg means "no register" (e.g. no base or no index in a memory operand).
const NoReg Reg = 0

// regBase maps golang-asm register numbers (x86.REG_*) to Reg values.
const regBase = x86.REG_AL - 1

// AsmReg returns golang-asm's number for r (x86.REG_*), 0 for NoReg.
func (r Reg) AsmReg() int16 {
	if r == NoReg {
		return 0
	}
	return int16(r) + regBase
}

// General-purpose registers.
const (
	RAX Reg = x86.REG_AX - regBase
	RCX Reg = x86.REG_CX - regBase
	RDX Reg = x86.REG_DX - regBase
	RBX Reg = x86.REG_BX - regBase
	RSP Reg = x86.REG_SP - regBase
	RBP Reg = x86.REG_BP - regBase
	RSI Reg = x86.REG_SI - regBase
	RDI Reg = x86.REG_DI - regBase
	R8  Reg = x86.REG_R8 - regBase
	R9  Reg = x86.REG_R9 - regBase
	R10 Reg = x86.REG_R10 - regBase
	R11 Reg = x86.REG_R11 - regBase
	R12 Reg = x86.REG_R12 - regBase
	R13 Reg = x86.REG_R13 - regBase
	R14 Reg = x86.REG_R14 - regBase
	R15 Reg = x86.REG_R15 - regBase
)

// 32-bit names of the general-purpose registers, for readability of
// 32-bit instructions (MovL(EAX, ECX)). They are the same Reg as the 64-bit
// names; the operand width comes from the instruction.
const (
	EAX = RAX
	ECX = RCX
	EDX = RDX
	EBX = RBX
	ESP = RSP
	EBP = RBP
	ESI = RSI
	EDI = RDI
)

// Byte registers.
const (
	AL   Reg = x86.REG_AL - regBase
	CL   Reg = x86.REG_CL - regBase
	DL   Reg = x86.REG_DL - regBase
	BL   Reg = x86.REG_BL - regBase
	SPL  Reg = x86.REG_SPB - regBase
	BPL  Reg = x86.REG_BPB - regBase
	SIL  Reg = x86.REG_SIB - regBase
	DIL  Reg = x86.REG_DIB - regBase
	R8B  Reg = x86.REG_R8B - regBase
	R9B  Reg = x86.REG_R9B - regBase
	R10B Reg = x86.REG_R10B - regBase
	R11B Reg = x86.REG_R11B - regBase
	R12B Reg = x86.REG_R12B - regBase
	R13B Reg = x86.REG_R13B - regBase
	R14B Reg = x86.REG_R14B - regBase
	R15B Reg = x86.REG_R15B - regBase
	AH   Reg = x86.REG_AH - regBase
	CH   Reg = x86.REG_CH - regBase
	DH   Reg = x86.REG_DH - regBase
	BH   Reg = x86.REG_BH - regBase
)

// XMM returns the n-th XMM register (0..31; 16..31 need EVEX encodings).
// An out-of-range n gives NoReg, which instructions reject.
func XMM(n int) Reg { return vecReg(x86.REG_X0, n) }

// YMM returns the n-th YMM register (0..31; 16..31 need EVEX encodings).
func YMM(n int) Reg { return vecReg(x86.REG_Y0, n) }

// ZMM returns the n-th ZMM register (0..31).
func ZMM(n int) Reg { return vecReg(x86.REG_Z0, n) }

func vecReg(base, n int) Reg {
	if n < 0 || n > 31 {
		return NoReg
	}
	return Reg(base + n - regBase)
}

// maxReg is the last Reg value (Z31).
const maxReg Reg = x86.REG_Z31 - regBase

// String returns golang-asm's name of the register (AX, R8, X3, Y1, ...).
func (r Reg) String() string {
	if r == NoReg {
		return "NoReg"
	}
	if r > maxReg {
		return fmt.Sprintf("Reg(%d)", uint8(r))
	}
	return obj.Rconv(int(r.AsmReg()))
}

func (r Reg) isGPR() bool { return r >= RAX && r <= R15 }

// Seg is a segment override for a memory operand.
type Seg uint8

// Segment overrides. Only FS and GS have non-zero bases in 64-bit mode.
const (
	NoSeg Seg = iota
	FS        // %fs: (prefix 0x64), the TLS base on x86-64 Linux
	GS        // %gs: (prefix 0x65)
)

func (s Seg) prefix() byte {
	switch s {
	case FS:
		return 0x64
	case GS:
		return 0x65
	}
	return 0
}

// Arg is an instruction operand: a Reg or an Operand.
type Arg interface {
	operand() Operand
}

type opKind uint8

const (
	kindNone opKind = iota
	kindReg
	kindImm // immediate; symbolic if sym != ""
	kindMem // [seg:]disp(base,index,scale); symbolic absolute displacement if sym != ""
	kindRIP // sym+off(%rip)
)

// Operand is a register, an immediate or a memory operand, possibly referring
// to a symbol through a relocation. Build it with Imm, SymImm, SymImm32,
// SymImm64, Mem, MemIndex, SymAbs, TPOFF, RIP, GOTPCREL, GOTPCRELX or
// GOTTPOFF, and refine memory operands with Seg, Base and Index.
// The zero Operand is invalid.
type Operand struct {
	kind  opKind
	reg   Reg // kindReg: the register; kindMem: the base
	index Reg
	scale uint8
	seg   Seg
	off   int64 // immediate value, displacement, or offset from sym
	sym   string
	rel   elf.R_X86_64 // relocation type when sym != ""
}

func (r Reg) operand() Operand     { return Operand{kind: kindReg, reg: r} }
func (o Operand) operand() Operand { return o }

// Imm is the immediate $v.
func Imm(v int64) Operand { return Operand{kind: kindImm, off: v} }

// SymImm is the immediate $sym+off as a sign-extended 32-bit absolute
// address (R_X86_64_32S), e.g. MovQ(SymImm("x", 0), RAX) for
// `movq $x, %rax` in non-PIC code.
func SymImm(sym string, off int64) Operand {
	return Operand{kind: kindImm, off: off, sym: sym, rel: elf.R_X86_64_32S}
}

// SymImm32 is the immediate $sym+off as a zero-extended 32-bit absolute
// address (R_X86_64_32), for 32-bit instructions (`movl $x, %eax`).
func SymImm32(sym string, off int64) Operand {
	return Operand{kind: kindImm, off: off, sym: sym, rel: elf.R_X86_64_32}
}

// SymImm64 is the 64-bit immediate $sym+off (R_X86_64_64). Only MovQ into a
// general-purpose register takes it (`movabs $x, %rax`).
func SymImm64(sym string, off int64) Operand {
	return Operand{kind: kindImm, off: off, sym: sym, rel: elf.R_X86_64_64}
}

// Mem is the memory operand disp(base). base may be NoReg for an absolute
// address, e.g. Mem(NoReg, 0x28).Seg(FS) is %fs:0x28.
func Mem(base Reg, disp int32) Operand {
	return Operand{kind: kindMem, reg: base, off: int64(disp)}
}

// MemIndex is the memory operand disp(base,index,scale); base may be NoReg.
// scale is 1, 2, 4 or 8.
func MemIndex(base, index Reg, scale uint8, disp int32) Operand {
	return Operand{kind: kindMem, reg: base, index: index, scale: scale, off: int64(disp)}
}

// SymAbs is the memory operand at the absolute address sym+off
// (R_X86_64_32S displacement; non-PIC code only). Add registers with Base
// and Index: SymAbs("tab", 0).Index(RAX, 8) is tab(,%rax,8).
func SymAbs(sym string, off int64) Operand {
	return Operand{kind: kindMem, off: off, sym: sym, rel: elf.R_X86_64_32S}
}

// TPOFF is the local-exec TLS operand %fs:sym@tpoff+off
// (R_X86_64_TPOFF32). It links only into executables; see GOTTPOFF for
// objects that may end up in shared libraries. Base and Index add
// registers: TPOFF("ring", 0).Index(RCX, 8) is %fs:ring@tpoff(,%rcx,8).
func TPOFF(sym string, off int64) Operand {
	return Operand{kind: kindMem, seg: FS, off: off, sym: sym, rel: elf.R_X86_64_TPOFF32}
}

// DTPOFF is the memory operand sym@dtpoff+off (R_X86_64_DTPOFF32): a
// thread-local variable's offset in its module's TLS block, with the
// block's address in a base register (what __tls_get_addr returned in a
// local-dynamic sequence): DTPOFF("t", 8).Base(RAX). No segment. Where the
// linker relaxes the sequence to local-exec (an executable), it resolves
// every DTPOFF32 of the code to the variable's TPOFF, as the compiler's own.
func DTPOFF(sym string, off int64) Operand {
	return Operand{kind: kindMem, off: off, sym: sym, rel: elf.R_X86_64_DTPOFF32}
}

// RIP is the RIP-relative memory operand sym+off(%rip) (R_X86_64_PC32). The
// ELF addend is computed by Assemble: off minus the distance from the field
// to the end of the instruction (-4, or -5/-6/-8 when an immediate follows).
// Like every memory operand, it is also what LeaQ takes to compute an address.
func RIP(sym string, off int64) Operand {
	return Operand{kind: kindRIP, off: off, sym: sym, rel: elf.R_X86_64_PC32}
}

// GOTPCREL is sym@GOTPCREL(%rip), the GOT slot holding sym's address, with
// the plain R_X86_64_GOTPCREL relocation (what `as -mrelax-relocations=no`
// emits). See GOTPCRELX for the relaxable form.
func GOTPCREL(sym string) Operand {
	return Operand{kind: kindRIP, sym: sym, rel: elf.R_X86_64_GOTPCREL}
}

// GOTPCRELX is sym@GOTPCREL(%rip) with a relaxable relocation, as modern gas
// emits it: R_X86_64_REX_GOTPCRELX when the instruction has a REX prefix,
// R_X86_64_GOTPCRELX otherwise. The linker may rewrite the instruction, so
// use it only where gas would: mov/test/adc/add/and/cmp/or/sbb/sub/xor
// loading from the slot, or call/jmp through it.
func GOTPCRELX(sym string) Operand {
	return Operand{kind: kindRIP, sym: sym, rel: elf.R_X86_64_GOTPCRELX}
}

// GOTTPOFF is the initial-exec TLS operand sym@gottpoff(%rip)
// (R_X86_64_GOTTPOFF): the GOT slot holding sym's offset from the thread
// pointer. Use it as `MovQ(GOTTPOFF(sym), reg)` (or AddQ, which linkers may
// relax too), then address %fs:(reg): Mem(reg, 0).Seg(FS).
func GOTTPOFF(sym string) Operand {
	return Operand{kind: kindRIP, sym: sym, rel: elf.R_X86_64_GOTTPOFF}
}

// Seg returns o with the segment override s. Only memory operands take one.
func (o Operand) Seg(s Seg) Operand {
	o.seg = s
	return o
}

// Add returns the memory operand o displaced by d more bytes (the
// offset from its symbol, if it has one).
func (o Operand) Add(d int64) Operand {
	o.off += d
	return o
}

// Base returns the memory operand o with base register r.
func (o Operand) Base(r Reg) Operand {
	o.reg = r
	return o
}

// Index returns the memory operand o with index register r scaled by scale
// (1, 2, 4 or 8).
func (o Operand) Index(r Reg, scale uint8) Operand {
	o.index = r
	o.scale = scale
	return o
}

// Reads reports whether r is o's register, or the base or index register
// of its address (r not NoReg).
func (o Operand) Reads(r Reg) bool {
	return r != NoReg && (o.reg == r || o.kind == kindMem && o.index == r)
}

// String renders the operand in AT&T-like syntax, for error messages.
func (o Operand) String() string {
	symOff := func() string {
		switch {
		case o.off > 0:
			return fmt.Sprintf("%s+%#x", o.sym, o.off)
		case o.off < 0:
			return fmt.Sprintf("%s-%#x", o.sym, -o.off)
		}
		return o.sym
	}
	switch o.kind {
	case kindReg:
		return o.reg.String()
	case kindImm:
		if o.sym != "" {
			return "$" + symOff() + "@" + o.rel.String()
		}
		return fmt.Sprintf("$%#x", o.off)
	case kindMem:
		s := ""
		if o.seg != NoSeg {
			s = [...]string{"", "%fs:", "%gs:"}[o.seg]
		}
		if o.sym != "" {
			s += symOff() + "@" + o.rel.String()
		} else {
			s += fmt.Sprintf("%#x", o.off)
		}
		if o.reg != NoReg || o.index != NoReg {
			s += "(" + regName(o.reg)
			if o.index != NoReg {
				s += fmt.Sprintf(",%s,%d", regName(o.index), o.scale)
			}
			s += ")"
		}
		return s
	case kindRIP:
		return symOff() + "@" + o.rel.String() + "(%rip)"
	}
	return "<invalid operand>"
}

func regName(r Reg) string {
	if r == NoReg {
		return ""
	}
	return r.String()
}

// Cond is a condition code for Jcc and Setcc.
type Cond uint8

// Condition codes, named after the gas suffixes.
const (
	CondO  Cond = iota // overflow
	CondNO             // no overflow
	CondB              // below (unsigned <), carry set
	CondAE             // above or equal (unsigned >=), carry clear
	CondE              // equal, zero
	CondNE             // not equal, not zero
	CondBE             // below or equal (unsigned <=)
	CondA              // above (unsigned >)
	CondS              // sign
	CondNS             // no sign
	CondP              // parity even
	CondNP             // parity odd
	CondL              // less (signed <)
	CondGE             // greater or equal (signed >=)
	CondLE             // less or equal (signed <=)
	CondG              // greater (signed >)
	numConds
)

var (
	jccAs = [numConds]obj.As{
		x86.AJOS, x86.AJOC, x86.AJCS, x86.AJCC, x86.AJEQ, x86.AJNE, x86.AJLS, x86.AJHI,
		x86.AJMI, x86.AJPL, x86.AJPS, x86.AJPC, x86.AJLT, x86.AJGE, x86.AJLE, x86.AJGT,
	}
	setccAs = [numConds]obj.As{
		x86.ASETOS, x86.ASETOC, x86.ASETCS, x86.ASETCC, x86.ASETEQ, x86.ASETNE, x86.ASETLS, x86.ASETHI,
		x86.ASETMI, x86.ASETPL, x86.ASETPS, x86.ASETPC, x86.ASETLT, x86.ASETGE, x86.ASETLE, x86.ASETGT,
	}
	cmovqAs = [numConds]obj.As{
		x86.ACMOVQOS, x86.ACMOVQOC, x86.ACMOVQCS, x86.ACMOVQCC, x86.ACMOVQEQ, x86.ACMOVQNE, x86.ACMOVQLS, x86.ACMOVQHI,
		x86.ACMOVQMI, x86.ACMOVQPL, x86.ACMOVQPS, x86.ACMOVQPC, x86.ACMOVQLT, x86.ACMOVQGE, x86.ACMOVQLE, x86.ACMOVQGT,
	}
)

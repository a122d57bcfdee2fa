package effect

import (
	"fmt"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// kind selects how Of interprets an instruction.
type kind uint8

const (
	kUnknown   kind = iota // not modelled: Known=false
	kGen                   // operands per opInfo.args plus implicit sets
	kNothing               // no register, flag or memory effect (operands ignored)
	kShift                 // shl shr sar rol ror rcl rcr
	kShiftD                // shld shrd
	kMulDiv                // mul, one-operand imul, div, idiv
	kImul                  // imul: one, two or three operands
	kString                // movs cmps stos lods scas
	kPush                  // push
	kPop                   // pop
	kPushf                 // pushf
	kPopf                  // popf
	kCall                  // call
	kJmp                   // jmp
	kRet                   // ret
	kJcc                   // jcc
	kLoop                  // loop loope loopne jrcxz jecxz
	kCmov                  // cmovcc
	kBitScan               // bsf bsr
	kBt                    // bt bts btr btc
	kCmpxchg               // cmpxchg
	kCmpxchgNB             // cmpxchg8b cmpxchg16b
	kEnter                 // enter
	kLeave                 // leave
	kXlat                  // xlat
	kMaskmov               // maskmovdqu maskmovq vmaskmovdqu
	kInt                   // int n, int3, int1, into
	kXbegin                // xbegin
	kGather                // vgather*, vpgather*
	kScatter               // vscatter*, vpscatter*
)

// opInfo describes one x86asm Op.
type opInfo struct {
	kind kind
	// args gives the access mode of each explicit operand, one letter per
	// x86asm argument; arguments past its end are read:
	//	r  read
	//	w  written
	//	x  read and written
	//	p  maybe written: read, and a register goes to Partial
	//	a  address only: memory operand registers are used, no access
	//	n  ignored entirely
	args             string
	fuse, fdef, fund Flags
	fmay             Flags
	iuse, idef, ipar RegSet
	ctrl             Control
	// size is the memory operand size when x86asm reports none.
	size int
	// masked marks accesses that may touch only part of the operand.
	masked bool
	// elem is the element size of string operations and gathers.
	elem int
}

// spec is one line of the table: the same opInfo for several ops.
type spec struct {
	ops string // space-separated x86asm op names
	opInfo
}

func gen(args string) opInfo { return opInfo{kind: kGen, args: args} }

// Register set shorthands for the table.
const (
	sRAX = RegSet(1 << RAX)
	sRCX = RegSet(1 << RCX)
	sRDX = RegSet(1 << RDX)
	sRBX = RegSet(1 << RBX)
	sRDI = RegSet(1 << RDI)
	sR11 = RegSet(1 << R11)
)

// condFlags gives the flags each condition code reads.
var condFlags = map[string]Flags{
	"O": OF, "NO": OF, "B": CF, "AE": CF, "E": ZF, "NE": ZF, "BE": CF | ZF, "A": CF | ZF,
	"S": SF, "NS": SF, "P": PF, "NP": PF, "L": SF | OF, "GE": SF | OF, "LE": ZF | SF | OF, "G": ZF | SF | OF,
}

// sseOps are the legacy-encoded SSE/MMX/AES/SHA operations. They have no
// register or flag effect besides their explicit operands: a general
// register or memory operand in the first position is written, the others
// are read (vector registers are not tracked).
const sseOps = `ADDPD ADDPS ADDSD ADDSS ADDSUBPD ADDSUBPS AESDEC AESDECLAST AESENC
AESENCLAST AESIMC AESKEYGENASSIST ANDNPD ANDNPS ANDPD ANDPS BLENDPD BLENDPS BLENDVPD
BLENDVPS CMPPD CMPPS CMPSD_XMM CMPSS CVTDQ2PD CVTDQ2PS CVTPD2DQ CVTPD2PI CVTPD2PS
CVTPI2PD CVTPI2PS CVTPS2DQ CVTPS2PD CVTPS2PI CVTSD2SI CVTSD2SS CVTSI2SD CVTSI2SS
CVTSS2SD CVTSS2SI CVTTPD2DQ CVTTPD2PI CVTTPS2DQ CVTTPS2PI CVTTSD2SI CVTTSS2SI DIVPD
DIVPS DIVSD DIVSS DPPD DPPS EXTRACTPS HADDPD HADDPS HSUBPD HSUBPS INSERTPS LDDQU
MAXPD MAXPS MAXSD MAXSS MINPD MINPS MINSD MINSS MOVAPD MOVAPS MOVD MOVDDUP MOVDQ2Q
MOVDQA MOVDQU MOVHLPS MOVHPD MOVHPS MOVLHPS MOVLPD MOVLPS MOVMSKPD MOVMSKPS MOVNTDQ
MOVNTDQA MOVNTPD MOVNTPS MOVNTQ MOVNTSD MOVNTSS MOVQ MOVQ2DQ MOVSD_XMM MOVSHDUP
MOVSLDUP MOVSS MOVUPD MOVUPS MPSADBW MULPD MULPS MULSD MULSS ORPD ORPS PABSB PABSD
PABSW PACKSSDW PACKSSWB PACKUSDW PACKUSWB PADDB PADDD PADDQ PADDSB PADDSW PADDUSB
PADDUSW PADDW PALIGNR PAND PANDN PAVGB PAVGW PBLENDVB PBLENDW PCLMULQDQ PCMPEQB
PCMPEQD PCMPEQQ PCMPEQW PCMPGTB PCMPGTD PCMPGTQ PCMPGTW PEXTRB PEXTRD PEXTRQ PEXTRW
PHADDD PHADDSW PHADDW PHMINPOSUW PHSUBD PHSUBSW PHSUBW PINSRB PINSRD PINSRQ PINSRW
PMADDUBSW PMADDWD PMAXSB PMAXSD PMAXSW PMAXUB PMAXUD PMAXUW PMINSB PMINSD PMINSW
PMINUB PMINUD PMINUW PMOVMSKB PMOVSXBD PMOVSXBQ PMOVSXBW PMOVSXDQ PMOVSXWD PMOVSXWQ
PMOVZXBD PMOVZXBQ PMOVZXBW PMOVZXDQ PMOVZXWD PMOVZXWQ PMULDQ PMULHRSW PMULHUW PMULHW
PMULLD PMULLW PMULUDQ POR PSADBW PSHUFB PSHUFD PSHUFHW PSHUFLW PSHUFW PSIGNB PSIGND
PSIGNW PSLLD PSLLDQ PSLLQ PSLLW PSRAD PSRAW PSRLD PSRLDQ PSRLQ PSRLW PSUBB PSUBD
PSUBQ PSUBSB PSUBSW PSUBUSB PSUBUSW PSUBW PUNPCKHBW PUNPCKHDQ PUNPCKHQDQ PUNPCKHWD
PUNPCKLBW PUNPCKLDQ PUNPCKLQDQ PUNPCKLWD PXOR RCPPS RCPSS ROUNDPD ROUNDPS ROUNDSD
ROUNDSS RSQRTPS RSQRTSS SHA1MSG1 SHA1MSG2 SHA1NEXTE SHA1RNDS4 SHA256MSG1 SHA256MSG2
SHA256RNDS2 SHUFPD SHUFPS SQRTPD SQRTPS SQRTSD SQRTSS SUBPD SUBPS SUBSD SUBSS
UNPCKHPD UNPCKHPS UNPCKLPD UNPCKLPS XORPD XORPS`

// The table. Ops not listed are kUnknown, except that every VEX/EVEX op of
// x86asm (those after XTEST) defaults to the vector rule of sseOps.
var specs = []spec{
	// Integer arithmetic and logic.
	{"ADD SUB", opInfo{kind: kGen, args: "xr", fdef: Status}},
	{"ADC SBB", opInfo{kind: kGen, args: "xr", fuse: CF, fdef: Status}},
	{"CMP", opInfo{kind: kGen, args: "rr", fdef: Status}},
	{"AND OR XOR", opInfo{kind: kGen, args: "xr", fdef: Status, fund: AF}},
	{"TEST", opInfo{kind: kGen, args: "rr", fdef: Status, fund: AF}},
	{"NEG", opInfo{kind: kGen, args: "x", fdef: Status}},
	{"NOT BSWAP", gen("x")},
	{"INC DEC", opInfo{kind: kGen, args: "x", fdef: Status &^ CF}},
	{"MOV MOVZX MOVSX MOVSXD MOVBE MOVNTI", gen("wr")},
	{"LEA", gen("wa")},
	{"XCHG", gen("xx")},
	{"XADD", opInfo{kind: kGen, args: "xx", fdef: Status}},
	{"CRC32", gen("xr")},
	{"POPCNT", opInfo{kind: kGen, args: "wr", fdef: Status}},
	{"LZCNT TZCNT", opInfo{kind: kGen, args: "wr", fdef: Status, fund: OF | SF | PF | AF}},
	{"BT", opInfo{kind: kBt, args: "rr", fdef: CF | OF | SF | AF | PF, fund: OF | SF | AF | PF}},
	{"BTS BTR BTC", opInfo{kind: kBt, args: "xr", fdef: CF | OF | SF | AF | PF, fund: OF | SF | AF | PF}},
	{"BSF BSR", opInfo{kind: kBitScan, args: "pr", fdef: Status, fund: CF | OF | SF | AF | PF}},
	{"SHL SHR SAR ROL ROR RCL RCR", opInfo{kind: kShift}},
	{"SHLD SHRD", opInfo{kind: kShiftD}},
	{"MUL DIV IDIV", opInfo{kind: kMulDiv}},
	{"IMUL", opInfo{kind: kImul}},
	{"CBW", opInfo{kind: kGen, iuse: sRAX, ipar: sRAX}},
	{"CWDE CDQE", opInfo{kind: kGen, iuse: sRAX, idef: sRAX}},
	{"CWD", opInfo{kind: kGen, iuse: sRAX, ipar: sRDX}},
	{"CDQ CQO", opInfo{kind: kGen, iuse: sRAX, idef: sRDX}},
	{"CMPXCHG", opInfo{kind: kCmpxchg, args: "pr", fdef: Status}},
	{"CMPXCHG8B CMPXCHG16B", opInfo{kind: kCmpxchgNB, args: "x", fdef: ZF}},

	// Flags.
	{"LAHF", opInfo{kind: kGen, fuse: SF | ZF | AF | PF | CF, iuse: sRAX, ipar: sRAX}},
	{"SAHF", opInfo{kind: kGen, fdef: SF | ZF | AF | PF | CF, iuse: sRAX}},
	{"CLC STC", opInfo{kind: kGen, fdef: CF}},
	{"CMC", opInfo{kind: kGen, fuse: CF, fdef: CF}},
	{"CLD STD", opInfo{kind: kGen, fdef: DF}},
	{"PUSHF PUSHFQ", opInfo{kind: kPushf}},
	{"POPF POPFQ", opInfo{kind: kPopf}},

	// Stack and control.
	{"PUSH", opInfo{kind: kPush}},
	{"POP", opInfo{kind: kPop}},
	{"CALL", opInfo{kind: kCall}},
	{"JMP", opInfo{kind: kJmp}},
	{"RET", opInfo{kind: kRet, ctrl: Return}},
	{"ENTER", opInfo{kind: kEnter}},
	{"LEAVE", opInfo{kind: kLeave}},
	{"LOOP JRCXZ JECXZ", opInfo{kind: kLoop, ctrl: CondJump}},
	{"LOOPE LOOPNE", opInfo{kind: kLoop, fuse: ZF, ctrl: CondJump}},
	{"SYSCALL", opInfo{kind: kGen, iuse: SyscallArgs, idef: sRAX | sRCX | sR11, fuse: AllFlags, ctrl: Syscall}},
	{"INT ICEBP INTO", opInfo{kind: kInt, ctrl: Interrupt}},
	{"UD0 UD1 UD2 HLT", opInfo{kind: kNothing, ctrl: Trap}},
	{"XBEGIN", opInfo{kind: kXbegin, ctrl: CondJump}},
	{"XABORT XEND", opInfo{kind: kNothing}},
	{"XTEST", opInfo{kind: kGen, fdef: Status}},
	// Far transfers and returns from the kernel: not modelled.
	{"LCALL", opInfo{kind: kUnknown, ctrl: IndirectCall}},
	{"LJMP", opInfo{kind: kUnknown, ctrl: IndirectJump}},
	{"LRET IRET IRETD IRETQ SYSRET SYSEXIT", opInfo{kind: kUnknown, ctrl: Return}},

	// String operations and xlat.
	{"MOVSB CMPSB STOSB LODSB SCASB", opInfo{kind: kString, elem: 1}},
	{"MOVSW CMPSW STOSW LODSW SCASW", opInfo{kind: kString, elem: 2}},
	{"MOVSD CMPSD STOSD LODSD SCASD", opInfo{kind: kString, elem: 4}},
	{"MOVSQ CMPSQ STOSQ LODSQ SCASQ", opInfo{kind: kString, elem: 8}},
	{"XLATB", opInfo{kind: kXlat}},

	// No architectural effect on registers, flags or memory. Prefetches,
	// clflush and clflushopt compute an address (and clflush* can fault
	// on it), so their address registers are used, but no data is
	// accessed. Multi-byte nops use nothing.
	{"NOP PAUSE LFENCE MFENCE SFENCE EMMS FWAIT VZEROUPPER VZEROALL", opInfo{kind: kNothing}},
	{"PREFETCHNTA PREFETCHT0 PREFETCHT1 PREFETCHT2 PREFETCHW CLFLUSH", gen("a")},

	// Processor information, random numbers, TLS bases.
	{"CPUID", opInfo{kind: kGen, iuse: sRAX | sRCX, idef: sRAX | sRBX | sRCX | sRDX}},
	{"RDTSC", opInfo{kind: kGen, idef: sRAX | sRDX}},
	{"RDTSCP", opInfo{kind: kGen, idef: sRAX | sRDX | sRCX}},
	{"RDPMC", opInfo{kind: kGen, iuse: sRCX, idef: sRAX | sRDX}},
	{"XGETBV", opInfo{kind: kGen, iuse: sRCX, idef: sRAX | sRDX}},
	{"RDFSBASE RDGSBASE", gen("w")},
	{"WRFSBASE WRGSBASE", gen("r")},

	// Processor state save areas. The xsave family reads the header it
	// updates; its size depends on EDX:EAX and XCR0, so Size is 0.
	{"XSAVE XSAVE64 XSAVEC XSAVEC64 XSAVEOPT XSAVEOPT64 XSAVES XSAVES64", opInfo{kind: kGen, args: "x", iuse: sRAX | sRDX}},
	{"XRSTOR XRSTOR64 XRSTORS XRSTORS64", opInfo{kind: kGen, args: "r", iuse: sRAX | sRDX}},
	{"FXSAVE FXSAVE64", opInfo{kind: kGen, args: "w", size: 512}},
	{"FXRSTOR FXRSTOR64", opInfo{kind: kGen, args: "r", size: 512}},
	{"LDMXCSR VLDMXCSR", gen("r")},
	{"STMXCSR VSTMXCSR", gen("w")},

	// x87. Loads and arithmetic read their memory operand; stores write
	// it. The environment sizes are those of the 32-bit operand-size
	// forms (the larger ones). fnstsw %ax writes AX.
	{`FLD FILD FBLD FADD FMUL FSUB FSUBR FDIV FDIVR FCOM FCOMP FICOM FICOMP FIADD FIMUL
	  FISUB FISUBR FIDIV FIDIVR FLDCW F2XM1 FABS FADDP FCHS FCOMPP FCOS FDECSTP FDIVP
	  FDIVRP FFREE FFREEP FINCSTP FLD1 FLDL2E FLDL2T FLDLG2 FLDLN2 FLDPI FLDZ FMULP FNCLEX
	  FNINIT FNOP FPATAN FPREM FPREM1 FPTAN FRNDINT FSCALE FSIN FSINCOS FSQRT FSUBP FSUBRP
	  FTST FUCOM FUCOMP FUCOMPP FXAM FXCH FXTRACT FYL2X FYL2XP1`, opInfo{kind: kGen, args: "r", size: 10}},
	{"FLDENV", opInfo{kind: kGen, args: "r", size: 28}},
	{"FRSTOR", opInfo{kind: kGen, args: "r", size: 108}},
	{"FST FSTP FIST FISTP FISTTP FBSTP FNSTCW FNSTSW", opInfo{kind: kGen, args: "w", size: 10}},
	{"FNSTENV", opInfo{kind: kGen, args: "w", size: 28}},
	{"FNSAVE", opInfo{kind: kGen, args: "w", size: 108}},
	{"FCOMI FCOMIP FUCOMI FUCOMIP", opInfo{kind: kGen, fdef: Status}},

	// SSE and AVX operations with flag or implicit register effects.
	{"COMISD COMISS UCOMISD UCOMISS PTEST", opInfo{kind: kGen, args: "rr", fdef: Status}},
	{`VCOMISD VCOMISS VUCOMISD VUCOMISS VCOMISH VUCOMISH VCOMISBF16 VPTEST VTESTPD VTESTPS
	  KORTESTB KORTESTW KORTESTD KORTESTQ KTESTB KTESTW KTESTD KTESTQ`, opInfo{kind: kGen, args: "rr", fdef: Status}},
	{"VCOMXSD VCOMXSH VCOMXSS VUCOMXSD VUCOMXSH VUCOMXSS", opInfo{kind: kGen, args: "rr", fdef: ZF | PF | CF, fmay: OF | SF | AF}},
	{"PCMPISTRI VPCMPISTRI VPCMPISTRI64", opInfo{kind: kGen, args: "rr", fdef: Status, idef: sRCX}},
	{"PCMPESTRI VPCMPESTRI VPCMPESTRI64", opInfo{kind: kGen, args: "rr", fdef: Status, idef: sRCX, iuse: sRAX | sRDX}},
	{"PCMPISTRM VPCMPISTRM", opInfo{kind: kGen, args: "rr", fdef: Status}},
	{"PCMPESTRM VPCMPESTRM VPCMPESTRM64", opInfo{kind: kGen, args: "rr", fdef: Status, iuse: sRAX | sRDX}},
	{"MASKMOVDQU VMASKMOVDQU", opInfo{kind: kMaskmov, size: 16}},
	{"MASKMOVQ", opInfo{kind: kMaskmov, size: 8}},
	{"VMASKMOVPS VMASKMOVPD VPMASKMOVD VPMASKMOVQ", opInfo{kind: kGen, args: "w", masked: true}},
	{"VGATHERDPS VGATHERQPS VPGATHERDD VPGATHERQD", opInfo{kind: kGather, elem: 4}},
	{"VGATHERDPD VGATHERQPD VPGATHERDQ VPGATHERQQ", opInfo{kind: kGather, elem: 8}},
	{"VSCATTERDPS VSCATTERQPS VPSCATTERDD VPSCATTERQD", opInfo{kind: kScatter, elem: 4}},
	{"VSCATTERDPD VSCATTERQPD VPSCATTERDQ VPSCATTERQQ", opInfo{kind: kScatter, elem: 8}},
	{`VGATHERPF0DPD VGATHERPF0DPS VGATHERPF0QPD VGATHERPF0QPS VGATHERPF1DPD VGATHERPF1DPS
	  VGATHERPF1QPD VGATHERPF1QPS VSCATTERPF0DPD VSCATTERPF0DPS VSCATTERPF0QPD VSCATTERPF0QPS
	  VSCATTERPF1DPD VSCATTERPF1DPS VSCATTERPF1QPD VSCATTERPF1QPS`, gen("a")},

	// BMI1/BMI2 (VEX-encoded general-register operations).
	{"ANDN BZHI", opInfo{kind: kGen, args: "wrr", fdef: Status, fund: AF | PF}},
	{"BEXTR", opInfo{kind: kGen, args: "wrr", fdef: Status, fund: AF | SF | PF}},
	{"BLSI BLSMSK BLSR", opInfo{kind: kGen, args: "wr", fdef: Status, fund: AF | PF}},
	{"MULX", opInfo{kind: kGen, args: "wwr", iuse: sRDX}},
	{"PDEP PEXT SARX SHLX SHRX RORX", gen("wrr")},
}

// opTable maps every x86asm Op to its description: buildTable's table,
// which table_gen.go holds as data (TestOpTableGenerated keeps it in step
// with the specs above). Built at run time, it took a third of a
// millisecond of every process that analysed anything (a Makefile runs
// hijack once per object).
func opTable() []opInfo { return opTableGen[:] }

// buildTable builds the table from condFlags, sseOps and specs: the source
// of table_gen.go.
func buildTable() []opInfo {
	opByName := make(map[string]x86asm.Op, x86asm.VZEROUPPER)
	for op := x86asm.Op(1); op <= x86asm.VZEROUPPER; op++ {
		s := op.String()
		if !strings.HasPrefix(s, "Op(") {
			opByName[s] = op
		}
	}
	table := make([]opInfo, x86asm.VZEROUPPER+1)
	set := func(names string, info opInfo) {
		for _, n := range strings.Fields(names) {
			op, ok := opByName[n]
			if !ok {
				panic(fmt.Sprintf("effect: unknown x86asm op %q", n))
			}
			if table[op].kind != kUnknown || table[op].ctrl != None {
				panic(fmt.Sprintf("effect: op %s listed twice", n))
			}
			table[op] = info
		}
	}
	set(sseOps, gen("w"))
	for cc, f := range condFlags {
		set("J"+cc, opInfo{kind: kJcc, fuse: f, ctrl: CondJump})
		set("SET"+cc, opInfo{kind: kGen, args: "w", fuse: f})
		set("CMOV"+cc, opInfo{kind: kCmov, fuse: f})
	}
	for _, s := range []struct {
		name string
		f    Flags
	}{{"B", CF}, {"NB", CF}, {"E", ZF}, {"NE", ZF}, {"BE", CF | ZF}, {"NBE", CF | ZF}, {"U", PF}, {"NU", PF}} {
		set("FCMOV"+s.name, opInfo{kind: kGen, fuse: s.f})
	}
	for _, s := range specs {
		set(s.ops, s.opInfo)
	}
	// Every other VEX/EVEX operation follows the vector rule.
	for op := x86asm.XTEST + 1; op <= x86asm.VZEROUPPER; op++ {
		if table[op].kind == kUnknown && !strings.HasPrefix(op.String(), "Op(") {
			table[op] = gen("w")
		}
	}
	return table
}

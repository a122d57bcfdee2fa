package snippet

import (
	"github.com/twitchyliquid64/golang-asm/obj"
	"github.com/twitchyliquid64/golang-asm/obj/x86"
)

// Helpers for the instructions instrumentation snippets use most. All take
// operands in AT&T order (source, destination); the Q/L/W/B suffix is the
// operand width as in gas and Go assembly. Anything else: Inst.

// arg converts a caller's operand, rejecting nil and the zero Operand.
// A type switch, not a.operand(): a method called through the interface
// would make every operand escape to the heap (one allocation per operand
// of every inserted instruction). Arg's method is unexported: these are
// all its types.
func (b *Builder) arg(as obj.As, a Arg) (Operand, bool) {
	switch v := a.(type) {
	case Operand:
		if v.kind != kindNone {
			return v, true
		}
	case Reg:
		return v.operand(), true
	}
	return b.badArg(as, a)
}

// badArg records why arg rejects a.
func (b *Builder) badArg(as obj.As, a Arg) (Operand, bool) {
	if a == nil {
		b.fail("%v: nil operand", as)
	} else {
		b.fail("%v: invalid (zero) operand", as)
	}
	return Operand{}, false
}

func (b *Builder) two(as obj.As, src, dst Arg) {
	s, ok1 := b.arg(as, src)
	d, ok2 := b.arg(as, dst)
	if ok1 && ok2 {
		b.inst(as, s, nil, d)
	}
}

func (b *Builder) dst(as obj.As, dst Arg) {
	if d, ok := b.arg(as, dst); ok {
		b.inst(as, Operand{}, nil, d)
	}
}

func (b *Builder) src(as obj.As, src Arg) {
	if s, ok := b.arg(as, src); ok {
		b.inst(as, s, nil, Operand{})
	}
}

// MovQ is `movq src, dst`: 64-bit moves between registers, memory and
// immediates (a 64-bit immediate or SymImm64 gives movabs), and also
// between a general-purpose register or memory and an XMM register.
func (b *Builder) MovQ(src, dst Arg) { b.two(x86.AMOVQ, src, dst) }

// MovL is `movl src, dst`.
func (b *Builder) MovL(src, dst Arg) { b.two(x86.AMOVL, src, dst) }

// MovW is `movw src, dst`.
func (b *Builder) MovW(src, dst Arg) { b.two(x86.AMOVW, src, dst) }

// MovB is `movb src, dst` (byte registers: AL, ...).
func (b *Builder) MovB(src, dst Arg) { b.two(x86.AMOVB, src, dst) }

// MovzxBL is `movzbl src, dst`: zero-extend a byte into a 32-bit (and so
// 64-bit) register.
func (b *Builder) MovzxBL(src, dst Arg) { b.two(x86.AMOVBLZX, src, dst) }

// LeaQ is `leaq mem, dst`; it does not touch the flags.
func (b *Builder) LeaQ(mem, dst Arg) { b.two(x86.ALEAQ, mem, dst) }

// LeaL is `leal mem, dst`.
func (b *Builder) LeaL(mem, dst Arg) { b.two(x86.ALEAL, mem, dst) }

// AddQ is `addq src, dst` (sets flags).
func (b *Builder) AddQ(src, dst Arg) { b.two(x86.AADDQ, src, dst) }

// AddL is `addl src, dst` (sets flags).
func (b *Builder) AddL(src, dst Arg) { b.two(x86.AADDL, src, dst) }

// AddW is `addw src, dst` (sets flags): 16-bit, the register's bits 16-63
// unchanged (a carry out of bit 15 goes to CF only).
func (b *Builder) AddW(src, dst Arg) { b.two(x86.AADDW, src, dst) }

// SubQ is `subq src, dst` (sets flags).
func (b *Builder) SubQ(src, dst Arg) { b.two(x86.ASUBQ, src, dst) }

// SubL is `subl src, dst` (sets flags).
func (b *Builder) SubL(src, dst Arg) { b.two(x86.ASUBL, src, dst) }

// AndQ is `andq src, dst` (sets flags).
func (b *Builder) AndQ(src, dst Arg) { b.two(x86.AANDQ, src, dst) }

// AndL is `andl src, dst` (sets flags).
func (b *Builder) AndL(src, dst Arg) { b.two(x86.AANDL, src, dst) }

// OrQ is `orq src, dst` (sets flags).
func (b *Builder) OrQ(src, dst Arg) { b.two(x86.AORQ, src, dst) }

// XorQ is `xorq src, dst` (sets flags).
func (b *Builder) XorQ(src, dst Arg) { b.two(x86.AXORQ, src, dst) }

// XorL is `xorl src, dst` (sets flags).
func (b *Builder) XorL(src, dst Arg) { b.two(x86.AXORL, src, dst) }

// CmpQ is gas's `cmpq src, dst`: flags from dst - src. (Go assembly writes
// the operands the other way round; Builder swaps them.)
func (b *Builder) CmpQ(src, dst Arg) { b.two(x86.ACMPQ, dst, src) }

// CmpL is gas's `cmpl src, dst`.
func (b *Builder) CmpL(src, dst Arg) { b.two(x86.ACMPL, dst, src) }

// CmpB is gas's `cmpb src, dst`.
func (b *Builder) CmpB(src, dst Arg) { b.two(x86.ACMPB, dst, src) }

// TestQ is `testq src, dst`: flags from src & dst.
func (b *Builder) TestQ(src, dst Arg) { b.two(x86.ATESTQ, src, dst) }

// TestL is `testl src, dst`.
func (b *Builder) TestL(src, dst Arg) { b.two(x86.ATESTL, src, dst) }

// TestB is `testb src, dst`.
func (b *Builder) TestB(src, dst Arg) { b.two(x86.ATESTB, src, dst) }

// ShrQ is `shrq count, dst`; count is Imm(n) or CL.
func (b *Builder) ShrQ(count, dst Arg) { b.two(x86.ASHRQ, shiftCount(count), dst) }

// ShlQ is `shlq count, dst`; count is Imm(n) or CL.
func (b *Builder) ShlQ(count, dst Arg) { b.two(x86.ASHLQ, shiftCount(count), dst) }

// SarQ is `sarq count, dst`; count is Imm(n) or CL.
func (b *Builder) SarQ(count, dst Arg) { b.two(x86.ASARQ, shiftCount(count), dst) }

// shiftCount maps CL to CX, the way Go assembly names the count register.
func shiftCount(a Arg) Arg {
	if r, ok := a.(Reg); ok && r == CL {
		return RCX
	}
	return a
}

// IncQ is `incq dst` (sets flags except CF).
func (b *Builder) IncQ(dst Arg) { b.dst(x86.AINCQ, dst) }

// IncL is `incl dst`.
func (b *Builder) IncL(dst Arg) { b.dst(x86.AINCL, dst) }

// DecQ is `decq dst`.
func (b *Builder) DecQ(dst Arg) { b.dst(x86.ADECQ, dst) }

// PushQ is `pushq src`. Mind the red zone: step rsp below it first.
func (b *Builder) PushQ(src Arg) { b.src(x86.APUSHQ, src) }

// PopQ is `popq dst`.
func (b *Builder) PopQ(dst Arg) { b.dst(x86.APOPQ, dst) }

// Pushfq is `pushfq`.
func (b *Builder) Pushfq() { b.inst(x86.APUSHFQ, Operand{}, nil, Operand{}) }

// Popfq is `popfq`.
func (b *Builder) Popfq() { b.inst(x86.APOPFQ, Operand{}, nil, Operand{}) }

// Lahf is `lahf`: AH = SF:ZF:0:AF:0:PF:1:CF. With Seto(AL) it saves the
// arithmetic flags without touching the stack.
func (b *Builder) Lahf() { b.inst(x86.ALAHF, Operand{}, nil, Operand{}) }

// Sahf is `sahf`: restore SF, ZF, AF, PF, CF from AH.
func (b *Builder) Sahf() { b.inst(x86.ASAHF, Operand{}, nil, Operand{}) }

// Setcc is `set<c> dst` on a byte register or byte in memory.
func (b *Builder) Setcc(c Cond, dst Arg) {
	if c >= numConds {
		b.fail("bad condition %d", c)
		return
	}
	b.dst(setccAs[c], dst)
}

// CmovQ is `cmov<c>q src, dst`: dst = src where condition c holds (a
// 64-bit register dst; src a register or memory). It reads the flags and
// leaves them as they are.
func (b *Builder) CmovQ(c Cond, src, dst Arg) {
	if c >= numConds {
		b.fail("bad condition %d", c)
		return
	}
	b.two(cmovqAs[c], src, dst)
}

// Seto is `seto dst`.
func (b *Builder) Seto(dst Arg) { b.Setcc(CondO, dst) }

// Jcc is `j<c> label`, a jump to a label of this snippet (rel8 when it
// reaches, else rel32).
func (b *Builder) Jcc(c Cond, label string) {
	if c >= numConds {
		b.fail("bad condition %d", c)
		return
	}
	b.jump(jccAs[c], label)
}

// Jmp is `jmp label`, a jump to a label of this snippet.
func (b *Builder) Jmp(label string) { b.jump(obj.AJMP, label) }

func (b *Builder) jump(as obj.As, label string) {
	p := b.newProg()
	p.As = as
	p.To.Type = obj.TYPE_BRANCH
	b.push(inst{first: p, last: p, p: p, label: label})
}

// CallSym is `call sym` (R_X86_64_PLT32, addend -4). The callee needs a
// 16-byte aligned stack, and the red zone must be stepped over first.
func (b *Builder) CallSym(sym string) { b.branchSym(obj.ACALL, sym) }

// JmpSym is `jmp sym` (R_X86_64_PLT32, addend -4), a tail jump out of the
// snippet.
func (b *Builder) JmpSym(sym string) { b.branchSym(obj.AJMP, sym) }

func (b *Builder) branchSym(as obj.As, sym string) {
	if sym == "" {
		b.fail("%v: empty symbol", as)
		return
	}
	in := inst{branchSym: sym}
	if len(sym) < 256 { // (a key says the bytes: as and the symbol)
		key := append(b.key[:0], 0xff, 0xfd, byte(as), byte(as>>8), byte(len(sym)))
		b.key = append(key, sym...)
		if b.lookup(&in, b.key) {
			b.push(in)
			return
		}
	}
	p := b.newProg()
	p.As = as
	p.To = obj.Addr{Type: obj.TYPE_BRANCH, Name: obj.NAME_EXTERN, Sym: b.lsym(sym)}
	in.first, in.last, in.p = p, p, p
	b.push(in)
}

// Call is an indirect `call *target` through a register or memory operand,
// e.g. Call(GOTPCRELX("f")) for `call *f@GOTPCREL(%rip)`.
func (b *Builder) Call(target Arg) { b.dst(obj.ACALL, target) }

// Ret is `ret`.
func (b *Builder) Ret() { b.inst(obj.ARET, Operand{}, nil, Operand{}) }

// Movdqu is `movdqu src, dst` (unaligned 128-bit move, XMM <-> memory or
// XMM <-> XMM), for saving and restoring vector registers.
func (b *Builder) Movdqu(src, dst Arg) { b.two(x86.AMOVOU, src, dst) }

// Movdqa is `movdqa src, dst` (16-byte aligned memory).
func (b *Builder) Movdqa(src, dst Arg) { b.two(x86.AMOVO, src, dst) }

// Vmovdqu is `vmovdqu src, dst` on XMM or YMM registers (VEX-encoded).
func (b *Builder) Vmovdqu(src, dst Arg) { b.two(x86.AVMOVDQU, src, dst) }

package snippet

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/twitchyliquid64/golang-asm/obj"
	"github.com/twitchyliquid64/golang-asm/obj/x86"
	"golang.org/x/arch/x86/x86asm"
)

// gasCase is one snippet written twice: with the Builder and as GNU as
// source. The test assembles the source with `as --64` and compares machine
// code and relocations (offset, type, symbol, addend) read with debug/elf.
type gasCase struct {
	name  string
	build func(b *Builder)
	gas   string
	// asFlags are extra flags for as (e.g. -mrelax-relocations=no).
	asFlags []string
	// decode marks cases where golang-asm picks a different but equivalent
	// encoding than gas. They are compared by decoding both byte strings
	// with x86asm, instruction by instruction (same Op and Args), and the
	// relocations by (instruction index, distance from the field to the end
	// of the instruction, type, symbol, addend) instead of by offset.
	decode bool
}

var gasCases = []gasCase{
	{
		name: "gpr-basic",
		build: func(b *Builder) {
			b.MovQ(RAX, RCX)
			b.MovL(EDX, ESI)
			b.MovQ(Mem(RDI, 8), R10)
			b.MovQ(R10, Mem(RSP, -8))
			b.MovL(Imm(7), Mem(R12, 0))
			b.MovQ(Imm(-1), RAX)
			b.MovQ(Imm(0x123456789a), R9)
			b.MovB(AL, Mem(RBX, 1))
			b.MovzxBL(Mem(RSI, 3), EAX)
			b.LeaQ(MemIndex(RDI, RSI, 4, 8), R10)
			b.LeaQ(Mem(RSP, -128), RSP)
			b.LeaQ(MemIndex(NoReg, RAX, 8, 0x40), RDX)
			b.LeaQ(Mem(R13, 0), R11)
			b.LeaL(MemIndex(RAX, RBX, 1, -3), ECX)
		},
		gas: `
			movq %rax, %rcx
			movl %edx, %esi
			movq 8(%rdi), %r10
			movq %r10, -8(%rsp)
			movl $7, (%r12)
			movq $-1, %rax
			movabsq $0x123456789a, %r9
			movb %al, 1(%rbx)
			movzbl 3(%rsi), %eax
			leaq 8(%rdi,%rsi,4), %r10
			leaq -128(%rsp), %rsp
			leaq 0x40(,%rax,8), %rdx
			leaq 0(%r13), %r11
			leal -3(%rax,%rbx,1), %ecx
		`,
	},
	{
		name: "immediates",
		build: func(b *Builder) {
			b.MovQ(Imm(0xffffffff), RAX) // golang-asm: movl (zero-extends), gas would use movabs
			b.MovQ(Imm(0x80000000), RCX) // likewise
			b.MovQ(Imm(-0x80000000), RDX)
			b.MovQ(Imm(1<<32), RSI)
			b.MovQ(Imm(0), RDI)
			b.MovL(Imm(0xffffffff), EAX)
			b.AndL(Imm(0xffffff00), EAX)
			b.AddQ(Imm(-0x80000000), RCX)
			b.MovB(Imm(0xff), AL)
			b.CmpB(Imm(-1), AL)
			b.MovW(Imm(0xffff), Mem(RAX, 0))
			b.ShlQ(Imm(1), RAX)
			b.ShrQ(Imm(63), RAX)
			b.Inst(x86.APSHUFD, Imm(0xff), XMM(1), XMM(2))
		},
		gas: `
			movl $0xffffffff, %eax
			movl $0x80000000, %ecx
			movq $-0x80000000, %rdx
			movabsq $0x100000000, %rsi
			movq $0, %rdi
			movl $0xffffffff, %eax
			andl $0xffffff00, %eax
			addq $-0x80000000, %rcx
			movb $0xff, %al
			cmpb $-1, %al
			movw $0xffff, (%rax)
			shlq $1, %rax
			shrq $63, %rax
			pshufd $0xff, %xmm1, %xmm2
		`,
	},
	{
		name: "alu-flags",
		build: func(b *Builder) {
			b.AddQ(Imm(1), RAX)
			b.AddQ(RCX, Mem(RDI, 16))
			b.AddL(Imm(1000), EBX)
			b.AddW(Imm(0x70), R15)
			b.AddW(Imm(0x7ff0), RAX)
			b.AddW(Imm(-16), RCX)
			b.SubQ(Imm(0x100), RSP)
			b.SubL(Mem(RSI, 4), EDX)
			b.CmpQ(Imm(5), RAX)
			b.CmpQ(RBX, RAX)
			b.CmpQ(Mem(RSP, 8), R8)
			b.CmpL(Imm(-1), Mem(RDX, 0))
			b.CmpB(Imm(0), Mem(RDI, 0))
			b.TestQ(RAX, RAX)
			b.TestL(Imm(0x80), ECX)
			b.TestB(Imm(1), AL)
			b.ShrQ(Imm(12), RAX)
			b.ShlQ(Imm(3), R11)
			b.SarQ(CL, RDX)
			b.AndQ(Imm(-4096), RAX)
			b.AndL(Imm(0xff), ESI)
			b.OrQ(R8, R9)
			b.XorQ(RAX, Mem(RCX, 0))
			b.XorL(EAX, EAX)
			b.IncQ(RAX)
			b.IncQ(Mem(RDI, 0))
			b.IncL(Mem(RDI, 8))
			b.DecQ(R15)
			b.Seto(AL)
			b.Setcc(CondNE, R11B)
			b.Lahf()
			b.Sahf()
		},
		gas: `
			addq $1, %rax
			addq %rcx, 16(%rdi)
			addl $1000, %ebx
			addw $0x70, %r15w
			addw $0x7ff0, %ax
			addw $-16, %cx
			subq $0x100, %rsp
			subl 4(%rsi), %edx
			cmpq $5, %rax
			cmpq %rbx, %rax
			cmpq 8(%rsp), %r8
			cmpl $-1, (%rdx)
			cmpb $0, (%rdi)
			testq %rax, %rax
			testl $0x80, %ecx
			testb $1, %al
			shrq $12, %rax
			shlq $3, %r11
			sarq %cl, %rdx
			andq $-4096, %rax
			andl $0xff, %esi
			orq %r8, %r9
			xorq %rax, (%rcx)
			xorl %eax, %eax
			incq %rax
			incq (%rdi)
			incl 8(%rdi)
			decq %r15
			seto %al
			setne %r11b
			lahf
			sahf
		`,
	},
	{
		name: "stack",
		build: func(b *Builder) {
			b.Pushfq()
			b.PushQ(RAX)
			b.PushQ(R12)
			b.PushQ(Mem(RSP, 8))
			b.PushQ(Imm(1))
			b.PopQ(R12)
			b.PopQ(RAX)
			b.PopQ(Mem(RDI, 0))
			b.Popfq()
			b.Ret()
		},
		gas: `
			pushfq
			pushq %rax
			pushq %r12
			pushq 8(%rsp)
			pushq $1
			popq %r12
			popq %rax
			popq (%rdi)
			popfq
			ret
		`,
	},
	{
		name: "xmm-gpr",
		build: func(b *Builder) {
			b.MovQ(XMM(3), RAX)
			b.MovQ(RAX, XMM(15))
			b.MovQ(R9, XMM(0))
			b.MovQ(XMM(8), R14)
			b.MovQ(XMM(0), Mem(RSP, 8))
			b.MovQ(Mem(RSP, 8), XMM(1))
		},
		gas: `
			movq %xmm3, %rax
			movq %rax, %xmm15
			movq %r9, %xmm0
			movq %xmm8, %r14
			movq %xmm0, 8(%rsp)
			movq 8(%rsp), %xmm1
		`,
	},
	{
		name: "vector-save-restore",
		build: func(b *Builder) {
			b.Movdqu(XMM(0), Mem(RSP, 0))
			b.Movdqu(XMM(9), Mem(RSP, 16))
			b.Movdqu(Mem(RSP, 16), XMM(9))
			b.Movdqa(XMM(2), Mem(RSP, 32))
			b.Vmovdqu(YMM(0), Mem(RSP, 0))
			b.Vmovdqu(YMM(12), Mem(RSP, 32))
			b.Vmovdqu(Mem(RSP, 32), YMM(12))
			b.Vmovdqu(XMM(1), Mem(RSP, 64))
			b.Vmovdqu(Mem(RAX, 0), XMM(7))
		},
		gas: `
			movdqu %xmm0, (%rsp)
			movdqu %xmm9, 16(%rsp)
			movdqu 16(%rsp), %xmm9
			movdqa %xmm2, 32(%rsp)
			vmovdqu %ymm0, (%rsp)
			vmovdqu %ymm12, 32(%rsp)
			vmovdqu 32(%rsp), %ymm12
			vmovdqu %xmm1, 64(%rsp)
			vmovdqu (%rax), %xmm7
		`,
	},
	{
		name: "vector-reg-reg",
		build: func(b *Builder) {
			b.Movdqu(XMM(1), XMM(2))
			b.Vmovdqu(YMM(1), YMM(2))
			b.Vmovdqu(YMM(9), YMM(3))
		},
		// Register-to-register vmovdqu: gas uses the load form (VEX 6f)
		// unless the source is a high register (then the store form keeps a
		// 2-byte VEX); golang-asm always uses the store form (VEX 7f).
		gas: `
			movdqu %xmm1, %xmm2
			vmovdqu %ymm1, %ymm2
			vmovdqu %ymm9, %ymm3
		`,
		decode: true,
	},
	{
		name: "rip-pc32",
		build: func(b *Builder) {
			b.LeaQ(RIP("counter", 0), RAX)
			b.LeaQ(RIP("counter", 16), RAX)
			b.IncQ(RIP("counter", 0))
			b.MovQ(RAX, RIP("table", -8))
			b.MovQ(RIP("table", 0x1000), R15)
			b.AddQ(RIP("delta", 0), RCX)
		},
		gas: `
			leaq counter(%rip), %rax
			leaq counter+16(%rip), %rax
			incq counter(%rip)
			movq %rax, table-8(%rip)
			movq table+0x1000(%rip), %r15
			addq delta(%rip), %rcx
		`,
	},
	{
		name: "rip-then-immediate",
		build: func(b *Builder) {
			b.AddQ(Imm(1), RIP("cnt", 8))          // imm8: addend 8-5
			b.MovL(Imm(0x12345678), RIP("cnt", 0)) // imm32: addend -8
			b.CmpB(Imm(0), RIP("flag", 0))         // imm8: addend -5
			b.MovQ(Imm(-1), RIP("x", 0))           // imm32 sign-extended
			b.MovW(Imm(0x1234), RIP("x", 2))       // imm16: addend 2-6
			b.TestB(Imm(4), RIP("flag", 1))
			b.ShlQ(Imm(2), RIP("x", 0))
		},
		gas: `
			addq $1, cnt+8(%rip)
			movl $0x12345678, cnt(%rip)
			cmpb $0, flag(%rip)
			movq $-1, x(%rip)
			movw $0x1234, x+2(%rip)
			testb $4, flag+1(%rip)
			shlq $2, x(%rip)
		`,
	},
	{
		name: "gotpcrelx",
		build: func(b *Builder) {
			b.MovQ(GOTPCRELX("foo"), RAX)
			b.MovQ(GOTPCRELX("foo"), R8)
			b.MovL(GOTPCRELX("bar"), EAX)
			b.Call(GOTPCRELX("fn"))
			b.AddQ(GOTPCRELX("foo"), RCX)
		},
		gas: `
			movq foo@GOTPCREL(%rip), %rax
			movq foo@GOTPCREL(%rip), %r8
			movl bar@GOTPCREL(%rip), %eax
			call *fn@GOTPCREL(%rip)
			addq foo@GOTPCREL(%rip), %rcx
		`,
	},
	{
		name: "gotpcrel-plain",
		build: func(b *Builder) {
			b.MovQ(GOTPCREL("foo"), RAX)
			b.Call(GOTPCREL("fn"))
		},
		gas: `
			movq foo@GOTPCREL(%rip), %rax
			call *fn@GOTPCREL(%rip)
		`,
		asFlags: []string{"-mrelax-relocations=no"},
	},
	{
		name: "tls-initial-exec",
		build: func(b *Builder) {
			b.MovQ(GOTTPOFF("vpt_buf"), RCX)
			b.Label("seg") // binds to the segment prefix
			b.MovQ(Mem(RCX, 0).Seg(FS), RDX)
			b.MovQ(RAX, Mem(RCX, 8).Seg(FS))
			b.AddQ(GOTTPOFF("vpt_buf"), R11)
			b.IncQ(MemIndex(R11, RAX, 8, 0).Seg(FS))
			b.MovL(Imm(5), Mem(RCX, 0x100).Seg(FS))
			b.Jcc(CondNE, "seg")
		},
		gas: `
			movq vpt_buf@gottpoff(%rip), %rcx
			seg:
			movq %fs:(%rcx), %rdx
			movq %rax, %fs:8(%rcx)
			addq vpt_buf@gottpoff(%rip), %r11
			incq %fs:(%r11,%rax,8)
			movl $5, %fs:0x100(%rcx)
			jne seg
		`,
	},
	{
		name: "tls-local-exec",
		build: func(b *Builder) {
			b.MovQ(TPOFF("baz", 0), RDX)
			b.MovQ(RAX, TPOFF("baz", 16))
			b.MovQ(TPOFF("ring", 0).Index(RCX, 8), RDX)
			b.MovQ(RDX, TPOFF("ring", 8).Base(R10))
			b.MovQ(Imm(1), TPOFF("baz", 8))          // imm after the TPOFF32 field
			b.MovL(Imm(0x7b3d5e19), TPOFF("baz", 0)) // imm equal to the first placeholder
			b.IncQ(TPOFF("hits", 0))
			b.CmpQ(RAX, TPOFF("last", 0))
			b.LeaQ(TPOFF("ring", 0).Base(RAX).Index(RCX, 2), RSI)
		},
		gas: `
			movq %fs:baz@tpoff, %rdx
			movq %rax, %fs:baz@tpoff+16
			movq %fs:ring@tpoff(,%rcx,8), %rdx
			movq %rdx, %fs:ring@tpoff+8(%r10)
			movq $1, %fs:baz@tpoff+8
			movl $0x7b3d5e19, %fs:baz@tpoff
			incq %fs:hits@tpoff
			cmpq %rax, %fs:last@tpoff
			leaq %fs:ring@tpoff(%rax,%rcx,2), %rsi
		`,
	},
	{
		name: "tls-dtpoff",
		build: func(b *Builder) {
			b.LeaQ(DTPOFF("t_arr", 0).Base(RAX).Index(R13, 8), RBX)
			b.MovQ(RBP, DTPOFF("t_arr", 24).Base(RAX))
			b.MovL(Imm(3), DTPOFF("cnt", 0).Base(RDI))
		},
		gas: `
			leaq t_arr@dtpoff(%rax,%r13,8), %rbx
			movq %rbp, t_arr@dtpoff+24(%rax)
			movl $3, cnt@dtpoff(%rdi)
		`,
	},
	{
		name: "segment-prefixes",
		build: func(b *Builder) {
			b.MovQ(Mem(NoReg, 0x28).Seg(FS), RAX) // stack-protector canary
			b.MovQ(Mem(NoReg, 0).Seg(FS), RBX)
			b.MovQ(Mem(RAX, 16).Seg(GS), RBX)
			b.MovL(MemIndex(RAX, RBX, 2, 0x28).Seg(FS), ECX)
			b.CmpQ(Imm(0), Mem(RSP, 8).Seg(GS))
			b.MovQ(XMM(0), Mem(RCX, 8).Seg(FS))
		},
		gas: `
			movq %fs:0x28, %rax
			movq %fs:0, %rbx
			movq %gs:16(%rax), %rbx
			movl %fs:0x28(%rax,%rbx,2), %ecx
			cmpq $0, %gs:8(%rsp)
			movq %xmm0, %fs:8(%rcx)
		`,
	},
	{
		name: "call-jmp-sym",
		build: func(b *Builder) {
			b.CallSym("__vptrace_flush")
			b.Call(RAX)
			b.Call(Mem(RBX, 8))
			b.JmpSym("resume")
		},
		gas: `
			call __vptrace_flush
			call *%rax
			call *8(%rbx)
			jmp resume
		`,
	},
	{
		name: "absolute-symbols",
		build: func(b *Builder) {
			b.MovQ(SymImm("sym", 0), RAX)
			b.MovL(SymImm32("sym", 4), EAX)
			b.MovQ(SymImm64("sym", 8), RAX)
			b.MovQ(SymImm64("far", -8), R13)
			b.MovQ(SymAbs("tab", 0).Index(RAX, 8), RCX)
			b.MovL(SymAbs("tab", 4).Base(RAX), ECX)
			b.CmpQ(SymImm("sym", 0), RAX)
			b.PushQ(SymImm("sym", 0))
			b.MovQ(SymImm("sym", 0), Mem(RSP, 8))
			b.MovQ(SymImm("site", 3), RIP("slot", 0))   // two relocations
			b.MovQ(SymImm("site", 0), SymAbs("tab", 8)) // two relocations
			b.AddQ(SymImm("sym", 0), MemIndex(RDI, RSI, 1, 0x7b3d5e19))
		},
		gas: `
			movq $sym, %rax
			movl $sym+4, %eax
			movabsq $sym+8, %rax
			movabsq $far-8, %r13
			movq tab(,%rax,8), %rcx
			movl tab+4(%rax), %ecx
			cmpq $sym, %rax
			pushq $sym
			movq $sym, 8(%rsp)
			movq $site+3, slot(%rip)
			movq $site, tab+8
			addq $sym, 0x7b3d5e19(%rdi,%rsi,1)
		`,
	},
	{
		name: "internal-jumps",
		build: func(b *Builder) {
			b.Label("top")
			b.TestQ(RAX, RAX)
			b.Jcc(CondE, "skip")
			b.IncQ(RAX)
			b.Label("skip")
			b.CmpQ(Imm(10), RAX)
			b.Jcc(CondL, "top")
			b.Jcc(CondO, "far")
			b.Jmp("far")
			b.Bytes(bytes.Repeat([]byte{0x90}, 200)...)
			b.Label("far")
			b.Jcc(CondNE, "top") // backward rel32
			b.Jmp("end")
			b.Seto(AL)
			b.Label("end")
		},
		gas: `
			top:
			testq %rax, %rax
			je skip
			incq %rax
			skip:
			cmpq $10, %rax
			jl top
			jo far
			jmp far
			.fill 200, 1, 0x90
			far:
			jne top
			jmp end
			seto %al
			end:
		`,
	},
	{
		// A cold part written in two pieces, between and after the hot
		// code: laid out after all of it, jumps between the parts long
		// even where short would reach, jumps inside a part short.
		name: "cold-part",
		build: func(b *Builder) {
			b.CmpQ(RAX, Mem(RDI, 8))
			b.Jcc(CondNE, "miss")
			b.Label("same")
			b.Cold()
			b.Label("miss")
			b.TestQ(RAX, RAX)
			b.Jcc(CondE, "zero")
			b.MovQ(RAX, Mem(RDI, 8))
			b.Label("zero")
			b.Jmp("same")
			b.Hot()
			b.IncQ(RCX)
			b.Jcc(CondB, "cross")
			b.Jmp("end")
			b.Label("end")
			b.Cold()
			b.Label("cross")
			b.CallSym("stub")
			b.Jcc(CondE, "same")
			b.Jmp("end")
		},
		gas: `
			cmpq %rax, 8(%rdi)
			{disp32} jne miss
			same:
			incq %rcx
			{disp32} jb cross
			jmp end
			end:
			miss:
			testq %rax, %rax
			je zero
			movq %rax, 8(%rdi)
			zero:
			{disp32} jmp same
			cross:
			call stub
			{disp32} je same
			{disp32} jmp end
		`,
	},
	{
		// The first jump reaches its label short until the second one,
		// in between, grows: sizing must go round again.
		name: "jump-cascade",
		build: func(b *Builder) {
			b.Jcc(CondE, "a")
			b.Jmp("b")
			b.Bytes(bytes.Repeat([]byte{0x90}, 124)...)
			b.Label("a")
			b.Bytes(bytes.Repeat([]byte{0x90}, 200)...)
			b.Label("b")
			b.Jcc(CondNE, "a")
		},
		gas: `
			je a
			jmp b
			.fill 124, 1, 0x90
			a:
			.fill 200, 1, 0x90
			b:
			jne a
		`,
	},
	{
		name: "all-conditions",
		build: func(b *Builder) {
			for c := CondO; c < numConds; c++ {
				b.Jcc(c, "out")
				b.Setcc(c, Mem(RDI, int32(c)))
				b.CmovQ(c, R9, R10)
				b.CmovQ(c, Mem(RSI, int32(8*c)), RAX)
			}
			b.Label("out")
		},
		gas: `
			jo out; seto 0(%rdi); cmovoq %r9, %r10; cmovoq 0(%rsi), %rax
			jno out; setno 1(%rdi); cmovnoq %r9, %r10; cmovnoq 8(%rsi), %rax
			jb out; setb 2(%rdi); cmovbq %r9, %r10; cmovbq 16(%rsi), %rax
			jae out; setae 3(%rdi); cmovaeq %r9, %r10; cmovaeq 24(%rsi), %rax
			je out; sete 4(%rdi); cmoveq %r9, %r10; cmoveq 32(%rsi), %rax
			jne out; setne 5(%rdi); cmovneq %r9, %r10; cmovneq 40(%rsi), %rax
			jbe out; setbe 6(%rdi); cmovbeq %r9, %r10; cmovbeq 48(%rsi), %rax
			ja out; seta 7(%rdi); cmovaq %r9, %r10; cmovaq 56(%rsi), %rax
			js out; sets 8(%rdi); cmovsq %r9, %r10; cmovsq 64(%rsi), %rax
			jns out; setns 9(%rdi); cmovnsq %r9, %r10; cmovnsq 72(%rsi), %rax
			jp out; setp 10(%rdi); cmovpq %r9, %r10; cmovpq 80(%rsi), %rax
			jnp out; setnp 11(%rdi); cmovnpq %r9, %r10; cmovnpq 88(%rsi), %rax
			jl out; setl 12(%rdi); cmovlq %r9, %r10; cmovlq 96(%rsi), %rax
			jge out; setge 13(%rdi); cmovgeq %r9, %r10; cmovgeq 104(%rsi), %rax
			jle out; setle 14(%rdi); cmovleq %r9, %r10; cmovleq 112(%rsi), %rax
			jg out; setg 15(%rdi); cmovgq %r9, %r10; cmovgq 120(%rsi), %rax
			out:
		`,
	},
	{
		name: "generic-inst",
		build: func(b *Builder) {
			b.Inst(x86.AIMUL3Q, Imm(8), RAX, RBX) // Go order: from, middle, to
			b.Inst(x86.ANOTQ, RCX)                // unary destination (To)
			b.Inst(x86.APUSHQ, RDX)               // unary source (From)
			b.Inst(x86.ACMPQ, RAX, Imm(1))        // Go order: gas's cmp $1, %rax
			b.Inst(obj.ACALL, RAX)
			b.Inst(x86.ACPUID)
			b.Inst(x86.ACMOVQEQ, Mem(RSP, 8), R9)
			b.Inst(x86.AVPADDD, YMM(1), YMM(2), YMM(3))
		},
		gas: `
			imulq $8, %rax, %rbx
			notq %rcx
			pushq %rdx
			cmpq $1, %rax
			call *%rax
			cpuid
			cmoveq 8(%rsp), %r9
			vpaddd %ymm1, %ymm2, %ymm3
		`,
	},
	{
		name: "raw-bytes",
		build: func(b *Builder) {
			b.Bytes(0x0f, 0x1f, 0x44, 0x00, 0x08) // nopl 8(%rax,%rax,1)
			b.MovQ(RAX, RBX)
			b.Bytes(0xf3, 0x0f, 0x1e, 0xfa) // endbr64
		},
		gas: `
			nopl 8(%rax,%rax,1)
			movq %rax, %rbx
			endbr64
		`,
	},
	{
		name:  "tracing-snippet",
		build: buildTraceSnippet,
		gas: `
			leaq -128(%rsp), %rsp
			pushfq
			pushq %rax
			pushq %rcx
			leaq 24(%rdi,%rsi,8), %rax
			shrq $12, %rax
			movq vpt_buf@gottpoff(%rip), %rcx
			cmpq %fs:8(%rcx), %rax
			je same
			movq %rax, %fs:8(%rcx)
			movq %fs:(%rcx), %rax
			incq %fs:(%rcx)
			andl $1023, %eax
			movq $site_17, %fs:16(%rcx,%rax,8)
			same:
			popq %rcx
			popq %rax
			popfq
			leaq 128(%rsp), %rsp
		`,
	},
}

// buildTraceSnippet is a representative vptrace site: record the page of
// 24(%rdi,%rsi,8) in a TLS ring when it differs from the last one.
func buildTraceSnippet(b *Builder) {
	b.LeaQ(Mem(RSP, -128), RSP) // step over the red zone
	b.Pushfq()
	b.PushQ(RAX)
	b.PushQ(RCX)
	b.LeaQ(MemIndex(RDI, RSI, 8, 24), RAX)
	b.ShrQ(Imm(12), RAX)
	b.MovQ(GOTTPOFF("vpt_buf"), RCX)
	b.CmpQ(Mem(RCX, 8).Seg(FS), RAX)
	b.Jcc(CondE, "same")
	b.MovQ(RAX, Mem(RCX, 8).Seg(FS))
	b.MovQ(Mem(RCX, 0).Seg(FS), RAX)
	b.IncQ(Mem(RCX, 0).Seg(FS))
	b.AndL(Imm(1023), EAX)
	b.MovQ(SymImm("site_17", 0), MemIndex(RCX, RAX, 8, 16).Seg(FS))
	b.Label("same")
	b.PopQ(RCX)
	b.PopQ(RAX)
	b.Popfq()
	b.LeaQ(Mem(RSP, 128), RSP)
}

var asAvailable = sync.OnceValue(func() error {
	_, err := exec.LookPath("as")
	return err
})

// gasAssemble assembles src with GNU as and returns .text and its relocations.
func gasAssemble(t testing.TB, src string, flags []string) Code {
	t.Helper()
	if err := asAvailable(); err != nil {
		t.Skipf("GNU as not available: %v", err)
	}
	dir := t.TempDir()
	s, o := filepath.Join(dir, "x.s"), filepath.Join(dir, "x.o")
	if err := os.WriteFile(s, []byte(".text\n"+src+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--64"}, flags...)
	args = append(args, "-o", o, s)
	if out, err := exec.Command("as", args...).CombinedOutput(); err != nil {
		t.Fatalf("as %v: %v\n%s", args, err, out)
	}
	f, err := elf.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text := f.Section(".text")
	data, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	code := Code{Bytes: data}
	syms, _ := f.Symbols()
	for _, sym := range syms {
		if int(sym.Section) < len(f.Sections) && f.Sections[sym.Section] == text && elf.ST_TYPE(sym.Info) == elf.STT_NOTYPE && sym.Name != "" {
			if code.Labels == nil {
				code.Labels = map[string]int{}
			}
			code.Labels[sym.Name] = int(sym.Value)
		}
	}
	if rs := f.Section(".rela.text"); rs != nil {
		rd, err := rs.Data()
		if err != nil {
			t.Fatal(err)
		}
		for len(rd) >= 24 {
			off := f.ByteOrder.Uint64(rd)
			info := f.ByteOrder.Uint64(rd[8:])
			add := int64(f.ByteOrder.Uint64(rd[16:]))
			rd = rd[24:]
			name := ""
			if si := elf.R_SYM64(info); si > 0 {
				name = syms[si-1].Name
			}
			code.Relocs = append(code.Relocs, Reloc{Off: int(off), Type: elf.R_X86_64(elf.R_TYPE64(info)), Sym: name, Addend: add})
		}
	}
	return code
}

func relocString(rs []Reloc) string {
	var sb strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&sb, "  %#04x %-24v %s%+d\n", r.Off, r.Type, r.Sym, r.Addend)
	}
	return sb.String()
}

func assembleCase(c gasCase) (Code, error) {
	b := New()
	c.build(b)
	return b.Assemble()
}

func TestAgainstGas(t *testing.T) {
	for _, c := range gasCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := assembleCase(c)
			if err != nil {
				t.Fatal(err)
			}
			want := gasAssemble(t, c.gas, c.asFlags)
			if c.decode {
				compareDecoded(t, got, want)
				return
			}
			if !bytes.Equal(got.Bytes, want.Bytes) {
				t.Errorf("bytes differ\n got % x\nwant % x", got.Bytes, want.Bytes)
			}
			if !reflect.DeepEqual(got.Relocs, want.Relocs) {
				t.Errorf("relocations differ\n got:\n%s want:\n%s", relocString(got.Relocs), relocString(want.Relocs))
			}
			// gas keeps non-.L labels as local symbols: their values must
			// match the offsets Assemble reports.
			if !reflect.DeepEqual(got.Labels, want.Labels) {
				t.Errorf("labels differ\n got %v\nwant %v", got.Labels, want.Labels)
			}
		})
	}
}

type decodedInst struct {
	op   x86asm.Op
	args string
}

type decodedReloc struct {
	inst, fromEnd int
	typ           elf.R_X86_64
	sym           string
	addend        int64
}

func decodeAll(t *testing.T, c Code) ([]decodedInst, []decodedReloc) {
	t.Helper()
	var insts []decodedInst
	var rels []decodedReloc
	for off := 0; off < len(c.Bytes); {
		in, err := x86asm.Decode(c.Bytes[off:], 64)
		if err != nil {
			t.Fatalf("decode at %#x: %v", off, err)
		}
		insts = append(insts, decodedInst{in.Op, fmt.Sprint(in.Args)})
		for _, r := range c.Relocs {
			if r.Off >= off && r.Off < off+in.Len {
				rels = append(rels, decodedReloc{len(insts) - 1, off + in.Len - r.Off, r.Type, r.Sym, r.Addend})
			}
		}
		off += in.Len
	}
	return insts, rels
}

func compareDecoded(t *testing.T, got, want Code) {
	t.Helper()
	gi, gr := decodeAll(t, got)
	wi, wr := decodeAll(t, want)
	if !reflect.DeepEqual(gi, wi) {
		t.Errorf("decoded instructions differ\n got %v (% x)\nwant %v (% x)", gi, got.Bytes, wi, want.Bytes)
	}
	if !reflect.DeepEqual(gr, wr) {
		t.Errorf("relocations differ\n got %v\nwant %v", gr, wr)
	}
	if len(got.Relocs) != len(gr) || len(want.Relocs) != len(wr) {
		t.Errorf("relocations outside decoded instructions")
	}
}

// TestColdPart checks where the cold part starts and the jumps between
// the parts that Assemble reports, against gas's labels for the same
// code (gasCases' cold-part).
func TestColdPart(t *testing.T) {
	var c gasCase
	for _, gc := range gasCases {
		if gc.name == "cold-part" {
			c = gc
		}
	}
	got, err := assembleCase(c)
	if err != nil {
		t.Fatal(err)
	}
	want := gasAssemble(t, c.gas, nil)
	l := want.Labels
	if got.Split != l["miss"] {
		t.Errorf("Split = %d, want %d (label miss)", got.Split, l["miss"])
	}
	// The crossings in code order: jne miss, jb cross (hot); jmp same,
	// je same, jmp end (cold).
	targets := []int{l["miss"], l["cross"], l["same"], l["same"], l["end"]}
	if len(got.Crossings) != len(targets) {
		t.Fatalf("crossings %v, want %d", got.Crossings, len(targets))
	}
	for k, x := range got.Crossings {
		rel := int(int32(binary.LittleEndian.Uint32(got.Bytes[x.Off:])))
		if x.Target != targets[k] || x.End-x.Off != 4 || x.End+rel != x.Target {
			t.Errorf("crossing %d: %+v (rel %d), want target %d", k, x, rel, targets[k])
		}
	}
	// No cold part: Split is the end, nothing crosses.
	b := New()
	b.Jcc(CondE, "x")
	b.IncQ(RAX)
	b.Label("x")
	plain, err := b.Assemble()
	if err != nil {
		t.Fatal(err)
	}
	if plain.Split != len(plain.Bytes) || plain.Crossings != nil {
		t.Errorf("without a cold part: Split %d of %d bytes, crossings %v", plain.Split, len(plain.Bytes), plain.Crossings)
	}
}

package vptrace

import (
	"testing"

	"github.com/twitchyliquid64/golang-asm/obj"
	"github.com/twitchyliquid64/golang-asm/obj/x86"
	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg/effect"
	"hijack/ibr/x86len"
	"hijack/snippet"
)

// TestStepDef classifies single instructions, assembled by the snippet
// builder and decoded as the rewriter decodes them, by whether they keep
// the register they write stepping by constants (irregularRegs), with r11
// irregular already.
func TestStepDef(t *testing.T) {
	bad := effect.RegSet(1 << effect.R11)
	for _, tc := range []struct {
		name string
		as   obj.As
		args []snippet.Arg
		want bool
	}{
		{"add $8, %edx", x86.AADDL, []snippet.Arg{snippet.Imm(8), snippet.EDX}, true},
		{"sub $1, %rcx", x86.ASUBQ, []snippet.Arg{snippet.Imm(1), snippet.RCX}, true},
		{"inc %rax", x86.AINCQ, []snippet.Arg{snippet.RAX}, true},
		{"add %rsi, %rdi", x86.AADDQ, []snippet.Arg{snippet.RSI, snippet.RDI}, true},
		{"lea -8(%rdx), %ecx", x86.ALEAL, []snippet.Arg{snippet.Mem(snippet.RDX, -8), snippet.ECX}, true},
		{"lea (%r8,%rcx,8), %rax", x86.ALEAQ, []snippet.Arg{snippet.MemIndex(snippet.R8, snippet.RCX, 8, 0), snippet.RAX}, true},
		{"mov %edx, %ecx", x86.AMOVL, []snippet.Arg{snippet.EDX, snippet.ECX}, true},
		{"movslq %edx, %rcx", x86.AMOVLQSX, []snippet.Arg{snippet.EDX, snippet.RCX}, true},
		{"shl $6, %rbp", x86.ASHLQ, []snippet.Arg{snippet.Imm(6), snippet.RBP}, true},
		{"imul $24, %rsi, %rax", x86.AIMUL3Q, []snippet.Arg{snippet.Imm(24), snippet.RSI, snippet.RAX}, true},
		{"cmovae %edx, %edi", x86.ACMOVLCC, []snippet.Arg{snippet.EDX, snippet.EDI}, true},
		{"cmovl %rsi, %rax", x86.ACMOVQLT, []snippet.Arg{snippet.RSI, snippet.RAX}, true},
		// from an irregular register, or not a step
		{"cmovne %r11, %rax", x86.ACMOVQNE, []snippet.Arg{snippet.R11, snippet.RAX}, false},
		{"cmovae %edx, %r11d", x86.ACMOVLCC, []snippet.Arg{snippet.EDX, snippet.R11}, false},
		{"cmove (%rdi), %rax", x86.ACMOVQEQ, []snippet.Arg{snippet.Mem(snippet.RDI, 0), snippet.RAX}, false},
		{"add %r11, %rdi", x86.AADDQ, []snippet.Arg{snippet.R11, snippet.RDI}, false},
		{"lea (%rdi,%r11), %rax", x86.ALEAQ, []snippet.Arg{snippet.MemIndex(snippet.RDI, snippet.R11, 1, 0), snippet.RAX}, false},
		{"mov (%rdi), %rax", x86.AMOVQ, []snippet.Arg{snippet.Mem(snippet.RDI, 0), snippet.RAX}, false},
		{"movzbl (%rdi), %eax", x86.AMOVBLZX, []snippet.Arg{snippet.Mem(snippet.RDI, 0), snippet.EAX}, false},
		{"and %rsi, %rax", x86.AANDQ, []snippet.Arg{snippet.RSI, snippet.RAX}, false},
		{"imul %rbx, %rdx", x86.AIMULQ, []snippet.Arg{snippet.RBX, snippet.RDX}, false},
		{"shr $33, %rax", x86.ASHRQ, []snippet.Arg{snippet.Imm(33), snippet.RAX}, false},
		{"xor %eax, %eax", x86.AXORL, []snippet.Arg{snippet.EAX, snippet.EAX}, false},
		{"shl %cl, %rax", x86.ASHLQ, []snippet.Arg{snippet.CL, snippet.RAX}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := snippet.New()
			b.Inst(tc.as, tc.args...)
			code, err := b.Assemble()
			if err != nil {
				t.Fatal(err)
			}
			asm, err := x86asm.Decode(code.Bytes, 64)
			if err != nil {
				t.Fatalf("% x: %v", code.Bytes, err)
			}
			lay, err := x86len.Decode(code.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			e := effect.Of(&asm, &lay, code.Bytes)
			def := e.Def | e.Partial
			if def == 0 {
				t.Fatalf("%v writes no register", asm)
			}
			if got := e.Known && stepDef(&asm, def, func(r effect.Reg) bool { return !bad.Has(r) }); got != tc.want {
				t.Errorf("%v (% x): stepDef %v, want %v", asm, code.Bytes, got, tc.want)
			}
		})
	}
}

package snippet

import (
	"bytes"
	"debug/elf"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/twitchyliquid64/golang-asm/obj/x86"
)

func TestErrors(t *testing.T) {
	cases := []struct {
		name  string
		build func(b *Builder)
		want  string
	}{
		{"two-memory-operands", func(b *Builder) { b.MovQ(Mem(RAX, 0), Mem(RBX, 0)) }, "more than one memory operand"},
		{"undefined-label", func(b *Builder) { b.Jmp("nowhere") }, "undefined label"},
		{"duplicate-label", func(b *Builder) { b.Label("x"); b.Ret(); b.Label("x") }, "defined twice"},
		{"imm64-not-mov", func(b *Builder) { b.AddQ(SymImm64("s", 0), RAX) }, "64-bit symbolic immediate"},
		{"imm64-to-memory", func(b *Builder) { b.MovQ(SymImm64("s", 0), Mem(RAX, 0)) }, "64-bit symbolic immediate"},
		{"symbolic-imm8", func(b *Builder) { b.Inst(x86.AINT, SymImm("s", 0)) }, ""},
		{"imm32-in-64-bit-op", func(b *Builder) { b.MovQ(SymImm32("s", 0), RAX) }, "use SymImm"},
		{"imm-addq-u32", func(b *Builder) { b.AddQ(Imm(0xffffffff), RCX) }, "sign-extended 32-bit"},
		{"imm-addq-2^32", func(b *Builder) { b.AddQ(Imm(1<<32), RCX) }, "sign-extended 32-bit"},
		{"imm-movq-mem", func(b *Builder) { b.MovQ(Imm(0x80000000), Mem(RAX, 0)) }, "sign-extended 32-bit"},
		{"imm-pushq", func(b *Builder) { b.PushQ(Imm(0x80000000)) }, "sign-extended 32-bit"},
		{"imm-addl-33bit", func(b *Builder) { b.AddL(Imm(1<<32), ECX) }, "does not fit 32 bits"},
		{"imm-shift-count", func(b *Builder) { b.ShlQ(Imm(300), RAX) }, "invalid instruction"},
		{"imm-movb", func(b *Builder) { b.MovB(Imm(0x1ff), AL) }, "does not fit the instruction's immediate field"},
		{"imm-pshufd", func(b *Builder) { b.Inst(x86.APSHUFD, Imm(0x1ff), XMM(1), XMM(2)) }, "invalid instruction"},
		{"invalid-combination", func(b *Builder) { b.MovQ(Imm(1), Imm(2)) }, "golang-asm"},
		{"zero-operand", func(b *Builder) { b.MovQ(Operand{}, RAX) }, "invalid (zero) operand"},
		{"nil-operand", func(b *Builder) { b.MovQ(nil, RAX) }, "nil operand"},
		{"bad-scale", func(b *Builder) { b.LeaQ(MemIndex(RAX, RBX, 3, 0), RCX) }, "bad scale"},
		{"rsp-index", func(b *Builder) { b.LeaQ(MemIndex(RAX, RSP, 1, 0), RCX) }, "bad base or index"},
		{"xmm-base", func(b *Builder) { b.MovQ(Mem(XMM(0), 0), RAX) }, "bad base or index"},
		{"segment-on-register", func(b *Builder) { b.MovQ(Operand{kind: kindReg, reg: RAX, seg: FS}, RCX) }, "segment override"},
		{"empty-call", func(b *Builder) { b.CallSym("") }, "empty symbol"},
		{"bad-cond", func(b *Builder) { b.Jcc(Cond(99), "x") }, "bad condition"},
		{"disp-range", func(b *Builder) {
			b.MovQ(Mem(RAX, 0).Base(RAX), RAX)
			b.MovQ(Operand{kind: kindMem, reg: RAX, off: 1 << 40}, RCX)
		}, "displacement out of range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := New()
			c.build(b)
			code, err := b.Assemble()
			if err == nil {
				t.Fatalf("no error; got % x %v", code.Bytes, code.Relocs)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
			// The Builder is usable again after a failed Assemble.
			b.MovQ(RAX, RBX)
			code, err = b.Assemble()
			if err != nil || !bytes.Equal(code.Bytes, []byte{0x48, 0x89, 0xc3}) {
				t.Errorf("after error: % x, %v", code.Bytes, err)
			}
		})
	}
}

func TestEmptyAndReset(t *testing.T) {
	b := New()
	code, err := b.Assemble()
	if err != nil || len(code.Bytes) != 0 || code.Relocs != nil {
		t.Errorf("empty snippet: %v %v", code, err)
	}
	b.CallSym("f")
	b.Reset()
	b.Lahf()
	code, err = b.Assemble()
	if err != nil || !bytes.Equal(code.Bytes, []byte{0x9f}) || len(code.Relocs) != 0 {
		t.Errorf("after Reset: % x %v %v", code.Bytes, code.Relocs, err)
	}
	// A label alone yields an empty snippet with the label at 0.
	b.Label("only")
	code, err = b.Assemble()
	if err != nil || len(code.Bytes) != 0 || code.Labels["only"] != 0 {
		t.Errorf("label-only snippet: %v %v", code, err)
	}
}

// TestReuseMatchesFresh checks that a reused Builder (with its Prog arena
// recycled) produces exactly what a fresh one does.
func TestReuseMatchesFresh(t *testing.T) {
	reused := New()
	for round := 0; round < 3; round++ {
		for _, c := range gasCases {
			want, err := assembleCase(c)
			if err != nil {
				t.Fatal(err)
			}
			c.build(reused)
			got, err := reused.Assemble()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s round %d: reused builder differs", c.name, round)
			}
		}
	}
}

// TestConcurrentBuilders assembles every case from many goroutines, each
// with its own Builder, and compares with a serial run. Run with -race: it
// is what catches shared mutable state in golang-asm or here.
func TestConcurrentBuilders(t *testing.T) {
	want := make([]Code, len(gasCases))
	for i, c := range gasCases {
		var err error
		if want[i], err = assembleCase(c); err != nil {
			t.Fatal(err)
		}
	}
	const workers, rounds = 8, 20
	var wg sync.WaitGroup
	errs := make(chan string, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := New() // one Builder per goroutine
			for r := 0; r < rounds; r++ {
				for i, c := range gasCases {
					c.build(b)
					got, err := b.Assemble()
					if err != nil || !reflect.DeepEqual(got, want[i]) {
						errs <- c.name
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for name := range errs {
		t.Errorf("concurrent assembly of %s differs from serial", name)
	}
}

func TestRelocSize(t *testing.T) {
	if (Reloc{Type: elf.R_X86_64_64}).Size() != 8 || (Reloc{Type: elf.R_X86_64_PC32}).Size() != 4 {
		t.Error("Reloc.Size")
	}
}

func TestOperandString(t *testing.T) {
	for _, c := range []struct {
		o    Operand
		want string
	}{
		{Imm(16), "$0x10"},
		{TPOFF("ring", 8).Index(RCX, 8), "%fs:ring+0x8@R_X86_64_TPOFF32(,CX,8)"},
		{RIP("x", -4), "x-0x4@R_X86_64_PC32(%rip)"},
		{Mem(RAX, 8).Seg(GS), "%gs:0x8(AX)"},
		{RAX.operand(), "AX"},
	} {
		if got := c.o.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

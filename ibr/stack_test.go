package ibr_test

import (
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"hijack/internal/testutil"
)

// stackOps: instructions with rsp-based operands in each encoding
// ShiftStack rewrites (no field, one byte with and without an immediate
// after it, four bytes, a SIB index, VEX, legacy prefixes, REX.R), and
// ones it must refuse (EVEX's scaled byte, other bases, no memory
// operand).
const stackOps = `
	.text
	.globl f
	.type f, @function
f:
	movq -0x10(%rsp), %rax
	movq %rax, -0x78(%rsp)
	addq $5, -0x8(%rsp)
	movl $0x12345678, -0x20(%rsp)
	movq (%rsp), %rcx
	leaq 8(%rsp,%rax,4), %rdx
	movq 0x1000(%rsp), %rax
	movq -0x7ffffff0(%rsp), %rax
	vmovdqu -0x40(%rsp), %ymm0
	cmpb $1, -0x11(%rsp)
	movq %xmm0, -0x28(%rsp)
	movw %r9w, 0x7f(%rsp)
	addq %r11, (%rsp,%rax,8)
	vmovdqu64 -0x40(%rsp), %zmm0
	movq -0x10(%rbp), %rax
	movq -0x10(%r12), %rax
	movq %rsp, %rax
	pushq %rax
	ret
	.size f, .-f
	.section .note.GNU-stack,"",@progbits
`

// TestShiftStack checks ShiftStack and ShiftedBytes against x86asm: the
// shifted bytes must decode to the same instruction with the memory
// operand's displacement moved by the shift, in a field of the size
// StackShift says (the original's where the value fits, else four
// bytes), and refused operands must be left alone.
func TestShiftStack(t *testing.T) {
	testutil.Need(t, "gcc")
	o := buildString(t, "gcc", "stack.s", stackOps)
	s := o.Code[0]
	fn := funcNamed(t, o, "f")
	refused := map[string]bool{"vmovdqu64": true, "rbp": true, "r12": true, "mov rax, rsp": true, "push": true, "ret": true}
	for i := fn.Start; i < fn.End; i++ {
		text := x86asm.GNUSyntax(*s.Asm(i), 0, nil)
		intel := x86asm.IntelSyntax(*s.Asm(i), 0, nil)
		refuse := false
		for k := range refused {
			refuse = refuse || strings.Contains(text, k) || strings.Contains(strings.ToLower(intel), k)
		}
		for _, delta := range []int32{8, 136, 168, 1 << 20, -0x7ffffff0} {
			ok := s.CanShiftStack(i, delta)
			if refuse {
				if ok || s.ShiftStack(i, delta) == nil {
					t.Errorf("%s: shifted, want refused", text)
				}
				continue
			}
			old := s.Asm(i)
			oldDisp := memDisp(t, old)
			if int64(oldDisp)+int64(delta) != int64(int32(oldDisp+int64(delta))) {
				if ok {
					t.Errorf("%s by %d: the displacement overflows 32 bits, but CanShiftStack", text, delta)
				}
				continue
			}
			if !ok {
				t.Errorf("%s by %d: refused", text, delta)
				continue
			}
			// (shift, check, shift back)
			if err := s.ShiftStack(i, delta); err != nil {
				t.Fatalf("%s: %v", text, err)
			}
			d, field := s.StackShift(i)
			b := s.ShiftedBytes(nil, i)
			got, err := x86asm.Decode(b, 64)
			if err != nil {
				t.Errorf("%s by %d: % x does not decode: %v", text, delta, b, err)
			} else {
				want := *old
				if d != delta || memDisp(t, &got) != oldDisp+int64(delta) || got.Op != want.Op || got.Len != len(b) {
					t.Errorf("%s by %d: % x decodes to %s (shift %d)", text, delta, b, x86asm.GNUSyntax(got, 0, nil), d)
				}
				grow := field - int(s.Insts[i].Layout.DispSize)
				if len(b) != int(s.Insts[i].Len)+grow || (field != 1 && field != 4) {
					t.Errorf("%s by %d: %d bytes, field %d, from %d bytes", text, delta, len(b), field, s.Insts[i].Len)
				}
				if fits := oldDisp+int64(delta) == int64(int8(oldDisp+int64(delta))); s.Insts[i].Layout.DispSize == 1 && fits != (field == 1) {
					t.Errorf("%s by %d: field %d", text, delta, field)
				}
				// the other operands as they were
				for k, a := range want.Args {
					if _, mem := a.(x86asm.Mem); !mem && a != got.Args[k] {
						t.Errorf("%s by %d: operand %d %v, want %v", text, delta, k, got.Args[k], a)
					}
				}
			}
			if err := s.ShiftStack(i, -delta); err != nil {
				t.Fatal(err)
			}
			// shifted back: the original bytes, no field widened
			if d, field := s.StackShift(i); d != 0 || field != 0 || string(s.ShiftedBytes(nil, i)) != string(s.Bytes(i)) {
				t.Errorf("%s shifted by %d and back: shift %d, field %d, % x", text, delta, d, field, s.ShiftedBytes(nil, i))
			}
		}
	}
}

// memDisp returns the displacement of a's memory operand.
func memDisp(t *testing.T, a *x86asm.Inst) int64 {
	for _, arg := range a.Args {
		if m, ok := arg.(x86asm.Mem); ok {
			return m.Disp
		}
	}
	t.Fatalf("%v: no memory operand", a)
	return 0
}

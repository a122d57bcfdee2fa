package ibr

import (
	"golang.org/x/arch/x86/x86asm"

	"hijack/ibr/x86len"
)

// Decode decodes the instruction at the start of b. The layout (length and
// field positions) comes from x86len, which hijack checks against objdump
// over whole archives; the semantics come from x86asm where x86asm agrees on
// the length. Where x86asm fails or silently mis-decodes (it returns a bare
// prefix with Op == 0 for endbr64, adcx/adox and 67/3e-prefixed VEX, and it
// misses VEX/EVEX RIP-relative operands), Op is 0 or the operand is
// repaired, never wrong.
func Decode(b []byte) (x86len.Layout, x86asm.Inst, error) {
	lay, err := x86len.Decode(b)
	if err != nil {
		return lay, x86asm.Inst{}, err
	}
	return lay, semantics(b[:lay.Len], &lay), nil
}

// semantics decodes one instruction of known layout with x86asm.
func semantics(b []byte, lay *x86len.Layout) x86asm.Inst {
	asm, aerr := x86asm.Decode(b, 64)
	if aerr != nil || asm.Op == 0 || asm.Len != int(lay.Len) {
		return x86asm.Inst{Len: int(lay.Len), Mode: 64}
	}
	if lay.RIPRelative && lay.Escape != x86len.NoEscape {
		// x86asm's VEX/EVEX decoder returns [rip+disp] as an absolute
		// address [disp]; put the base back.
		for i, a := range asm.Args {
			if m, ok := a.(x86asm.Mem); ok && m.Base == 0 && m.Index == 0 {
				m.Base = x86asm.RIP
				asm.Args[i] = m
				break
			}
		}
	}
	return asm
}

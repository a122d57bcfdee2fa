package cfg_test

import (
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg/effect"
	"hijack/internal/testutil"
)

// TestColdPartLiveness: registers live across a jump into another
// function of the object (gcc's .cold parts) and across the jump back
// are live there (testdata/src/coldpart.c), and clobber leaves the
// program's output alone.
func TestColdPartLiveness(t *testing.T) {
	b := build{"gcc", []string{"-O2"}}
	obj := testutil.Compile(t, t.TempDir(), b.cc, "../testdata/src/coldpart.c", b.flags...)
	p := program(t, obj)
	lv := p.Liveness()
	jumpBefore := func(fn string, op x86asm.Op) (effect.RegSet, bool) {
		g := graph(t, p, fn)
		for i := g.Func.Start; i < g.Func.End; i++ {
			if g.Sec.Asm(i).Op == op {
				return lv[g].Before(i).Regs, true
			}
		}
		return 0, false
	}
	for _, c := range []struct {
		fn   string
		op   x86asm.Op
		want effect.RegSet
	}{
		{"hot", x86asm.JNE, regs(effect.RAX, effect.R11, effect.RDX)}, // into hot.cold
		{"hot.cold", x86asm.JMP, regs(effect.RAX, effect.RDX)},        // back into hot
	} {
		live, ok := jumpBefore(c.fn, c.op)
		if !ok {
			t.Fatalf("%s: no %v", c.fn, c.op)
		}
		if live&c.want != c.want {
			t.Errorf("%s: live before the %v %v, want %v", c.fn, c.op, live, c.want)
		}
	}
	if out := clobbered(t, b, obj); out != "0 27\n" {
		t.Errorf("the original prints %q", out)
	}
}

package cfg_test

import (
	"testing"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/internal/testutil"
)

func program(t *testing.T, obj string) *cfg.Program {
	t.Helper()
	return cfg.Build(testutil.BuildIBR(t, obj))
}

func graph(t *testing.T, p *cfg.Program, name string) *cfg.Graph {
	t.Helper()
	for _, g := range p.Graphs {
		if g.Func.Name == name {
			return g
		}
	}
	t.Fatalf("no function %s", name)
	return nil
}

func regs(rs ...effect.Reg) effect.RegSet {
	var s effect.RegSet
	for _, r := range rs {
		s |= r.Set()
	}
	return s
}

const livenessAsm = `
	.text
	.globl	add2
	.type	add2, @function
add2:	movq	%rdi, %rax
	addq	%rsi, %rax
	ret
	.size	add2, .-add2

	.globl	flags_across
	.type	flags_across, @function
flags_across:
	cmpq	%rsi, %rdi
	movq	(%rdx), %rax
	jl	1f
	xorl	%eax, %eax
1:	ret
	.size	flags_across, .-flags_across

# ipa_callee leaves r9 alone; ipa_caller keeps a value in r9 across the
# call, as gcc's -fipa-ra does for functions it sees.
	.type	ipa_callee, @function
ipa_callee:
	leaq	1(%rdi), %rax
	ret
	.size	ipa_callee, .-ipa_callee

	.globl	ipa_caller
	.type	ipa_caller, @function
ipa_caller:
	movq	%rsi, %r9
	call	ipa_callee
	addq	%r9, %rax
	ret
	.size	ipa_caller, .-ipa_caller

# A shift by %cl may leave the flags as they were (a count of 0): the
# imul's flags pass through it, dead where nothing after reads them
# (shift_dead: the sub writes them all), live where a jump does
# (shift_live; rcl reads CF whatever its count).
	.globl	shift_dead
	.type	shift_dead, @function
shift_dead:
	imulq	%rsi, %rdi
	movq	(%rdx), %rax
	shlq	%cl, %rdi
	subq	%rdi, %rax
	ret
	.size	shift_dead, .-shift_dead

	.globl	shift_live
	.type	shift_live, @function
shift_live:
	cmpq	%rsi, %rdi
	movq	(%rdx), %rax
	shrq	%cl, %rdi
	jb	1f
	xorl	%eax, %eax
1:	rclq	%cl, %rax
	movq	(%rdx), %rdi
	rclq	%cl, %rdi
	ret
	.size	shift_live, .-shift_live

# rbx's last use is before the call: nothing needs it in a register at
# the call (the pop restores the caller's) unless an exception may land
# here, where the landing pad expects it as it was (TestLivenessEH).
	.globl	saves_rbx
	.type	saves_rbx, @function
saves_rbx:
	pushq	%rbx
	movq	%rdi, %rbx
	addq	%rbx, %rsi
	movq	%rsi, %rdi
	call	abs
	popq	%rbx
	ret
	.size	saves_rbx, .-saves_rbx

# keeps_rbx never writes rbx: it holds the caller's value at the call to
# abort, which may unwind to the caller's landing pad through this frame
# (the unwinder takes rbx from the register): live though nothing after
# the call returns. shrink_wrapped writes rbx on one path only (after
# saving it): at the call on the other rbx is still the caller's.
	.globl	keeps_rbx
	.type	keeps_rbx, @function
keeps_rbx:
	subq	$8, %rsp
	call	abort
	.size	keeps_rbx, .-keeps_rbx

	.globl	shrink_wrapped
	.type	shrink_wrapped, @function
shrink_wrapped:
	testq	%rdi, %rdi
	je	1f
	pushq	%rbx
	movq	%rdi, %rbx
	leaq	1(%rbx), %rdi
	call	abs
	popq	%rbx
	ret
1:	subq	$8, %rsp
	call	abort
	.size	shrink_wrapped, .-shrink_wrapped

	.globl	dies
	.type	dies, @function
dies:	subq	$8, %rsp
	call	abort
	.size	dies, .-dies
	.section .note.GNU-stack,"",@progbits
`

func TestLiveness(t *testing.T) {
	obj := testutil.CompileString(t, t.TempDir(), "gcc", "live.s", livenessAsm)
	p := program(t, obj)
	lv := p.Liveness()

	g := graph(t, p, "add2")
	l := lv[g].Before(g.Func.Start)
	if l.Regs&regs(effect.RDI, effect.RSI) != regs(effect.RDI, effect.RSI) || l.Regs.Has(effect.RAX) {
		t.Errorf("add2 entry: live %v, want rdi rsi and not rax", l.Regs)
	}
	if l.Flags&effect.Status != 0 {
		t.Errorf("add2 entry: flags %v live", l.Flags)
	}
	// After the add, flags are dead (ret does not read them).
	if l := lv[g].Before(g.Func.Start + 2); l.Flags&effect.Status != 0 {
		t.Errorf("before ret: flags %v live", l.Flags)
	}

	g = graph(t, p, "flags_across")
	// Before the mov between cmp and jl, SF and OF are live (jl reads
	// them); ZF, CF, AF, PF are not.
	l = lv[g].Before(g.Func.Start + 1)
	if l.Flags&(effect.SF|effect.OF) != effect.SF|effect.OF || l.Flags&(effect.ZF|effect.CF|effect.AF|effect.PF) != 0 {
		t.Errorf("flags live across the load: %v, want SF OF only", l.Flags)
	}

	g = graph(t, p, "shift_dead")
	if l := lv[g].Before(g.Func.Start + 1); l.Flags&effect.Status != 0 {
		t.Errorf("shift_dead: flags %v live before the shift by cl, which nothing after reads", l.Flags)
	}
	g = graph(t, p, "shift_live")
	if l := lv[g].Before(g.Func.Start + 1); l.Flags&effect.CF == 0 {
		t.Errorf("shift_live: CF dead before the shift by cl, which jb reads after it: %v", l.Flags)
	}
	// rcl reads CF: live before the load that precedes the second rcl
	if l := lv[g].Before(g.Func.Start + 6); l.Flags&effect.CF == 0 {
		t.Errorf("shift_live: CF dead before rcl: %v", l.Flags)
	}

	g = graph(t, p, "saves_rbx")
	if l := lv[g].Before(g.Func.Start + 4); l.Regs.Has(effect.RBX) {
		t.Errorf("saves_rbx: rbx live at the call, in an object without .gcc_except_table: %v", l.Regs)
	}

	g = graph(t, p, "keeps_rbx")
	if l := lv[g].Before(g.Func.Start + 1); !l.Regs.Has(effect.RBX) {
		t.Errorf("keeps_rbx: rbx dead at the call to abort, but it holds the caller's value: %v", l.Regs)
	}
	g = graph(t, p, "shrink_wrapped")
	if l := lv[g].Before(g.Func.Start + 5); l.Regs.Has(effect.RBX) {
		t.Errorf("shrink_wrapped: rbx live at the call after it was saved, written and last used: %v", l.Regs)
	}
	if l := lv[g].Before(g.Func.Start + 9); !l.Regs.Has(effect.RBX) {
		t.Errorf("shrink_wrapped: rbx dead at the call to abort on the path that never wrote it: %v", l.Regs)
	}

	g = graph(t, p, "ipa_callee")
	// ipa_caller keeps r9 across the call: r9 must be live at the
	// callee's return and therefore everywhere in it.
	for i := g.Func.Start; i < g.Func.End; i++ {
		if !lv[g].Before(i).Regs.Has(effect.R9) {
			t.Errorf("ipa_callee+%d: r9 dead, but its caller keeps a value there", i-g.Func.Start)
		}
	}
	caller := graph(t, p, "ipa_caller")
	if !lv[caller].Before(caller.Func.Start + 1).Regs.Has(effect.R9) {
		t.Errorf("ipa_caller: r9 dead before the call")
	}

	g = graph(t, p, "dies")
	last := g.Blocks[len(g.Blocks)-1]
	if last.Exits&cfg.ExitNoReturn == 0 {
		t.Errorf("call abort does not end the function: exits %v", last.Exits)
	}
}

// TestLivenessEH: in an object where an exception may land (it has a
// .gcc_except_table), calls keep the callee-saved registers live.
func TestLivenessEH(t *testing.T) {
	src := livenessAsm + `
	.section .gcc_except_table,"a",@progbits
	.byte	0xff, 0xff, 0x01, 0x00
`
	obj := testutil.CompileString(t, t.TempDir(), "gcc", "live_eh.s", src)
	p := program(t, obj)
	lv := p.Liveness()
	g := graph(t, p, "saves_rbx")
	if l := lv[g].Before(g.Func.Start + 4); !l.Regs.Has(effect.RBX) {
		t.Errorf("saves_rbx: rbx dead at the call, in an object with .gcc_except_table: %v", l.Regs)
	}
}

func TestJumpTableSuccessors(t *testing.T) {
	for _, c := range []struct {
		cc    string
		flags []string
	}{{"gcc", []string{"-O2"}}, {"gcc", []string{"-O2", "-fno-pie"}}, {"clang", []string{"-O2"}}, {"gcc", []string{"-O0"}}} {
		obj := testutil.Compile(t, t.TempDir(), c.cc, "../testdata/src/loops.c", append(c.flags, "-fno-inline")...)
		p := program(t, obj)
		g := graph(t, p, "switch_in_loop")
		found := false
		for _, b := range g.Blocks {
			if b.Table {
				found = true
				if len(b.Succs) < 6 {
					t.Errorf("%s %v: jump table block has %d successors, want >= 6 distinct cases", c.cc, c.flags, len(b.Succs))
				}
			}
		}
		if !found {
			t.Errorf("%s %v: no jump-table dispatch in switch_in_loop", c.cc, c.flags)
		}
		if len(g.Unresolved) != 0 {
			t.Errorf("%s %v: unresolved indirect jumps %v", c.cc, c.flags, g.Unresolved)
		}
	}
}

const externalAsm = `
	.text
	.globl	ext
	.type	ext, @function
ext:	testq	%rdi, %rdi
	je	2f
1:	addq	$1, %rax
	subq	$1, %rdi
	jne	1b
2:	ret
	.globl	ext_label
ext_label:
	movq	%rsi, %rax
	jmp	2b
	.size	ext, .-ext

	.section .data.rel.local,"aw"
	.quad	3f
	.text
	.globl	taken
	.type	taken, @function
taken:	movq	%rdi, %rax
3:	addq	$2, %rax
	ret
	.size	taken, .-taken
	.section .note.GNU-stack,"",@progbits
`

// TestExternal: Block.External marks the blocks control may enter other
// than through the graph's edges (the entry, labels other code or data
// refers to), and only those.
func TestExternal(t *testing.T) {
	obj := testutil.CompileString(t, t.TempDir(), "gcc", "ext.s", externalAsm)
	p := program(t, obj)
	for _, tc := range []struct {
		fn   string
		want []bool // per block
	}{
		// entry, loop, ret, ext_label (a global symbol inside ext)
		{"ext", []bool{true, false, false, true}},
		// entry, the label data refers to
		{"taken", []bool{true, true}},
	} {
		g := graph(t, p, tc.fn)
		var got []bool
		for _, b := range g.Blocks {
			got = append(got, b.External)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d blocks (External %v), want %d", tc.fn, len(got), got, len(tc.want))
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: block %d External = %v, want %v (all: %v)", tc.fn, i, got[i], tc.want[i], got)
			}
		}
	}
}

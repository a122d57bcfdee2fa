package kit_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hijack/cfg/effect"
	"hijack/internal/testutil"
	"hijack/preset/kit"
	"hijack/snippet"
)

// TestIVStep: the 64-bit steps of an induction register, and what is not
// one.
func TestIVStep(t *testing.T) {
	for _, tc := range []struct {
		name string
		code []byte
		r    effect.Reg
		step int64
		ok   bool
	}{
		{"add $8,%rax", []byte{0x48, 0x83, 0xc0, 0x08}, effect.RAX, 8, true},
		{"sub $1,%rdi", []byte{0x48, 0x83, 0xef, 0x01}, effect.RDI, -1, true},
		{"inc %rcx", []byte{0x48, 0xff, 0xc1}, effect.RCX, 1, true},
		{"dec %rdx", []byte{0x48, 0xff, 0xca}, effect.RDX, -1, true},
		{"lea 0x10(%rsi),%rsi", []byte{0x48, 0x8d, 0x76, 0x10}, effect.RSI, 16, true},
		{"lea 0x10(%rsi,%rax),%rsi", []byte{0x48, 0x8d, 0x74, 0x06, 0x10}, effect.RSI, 0, false},
		{"add %rbx,%rax", []byte{0x48, 0x01, 0xd8}, effect.RAX, 0, false},
		{"add $8,%rax asked for rcx", []byte{0x48, 0x83, 0xc0, 0x08}, effect.RCX, 0, false},
		{"add $1,%eax (32 bits)", []byte{0x83, 0xc0, 0x01}, effect.RAX, 0, false},
	} {
		o := newObject(t, []fn{{"f", cat(tc.code, ret)}}, nil)
		step, ok := kit.IVStep(o.Code[0], 0, tc.r)
		if ok != tc.ok || step != tc.step {
			t.Errorf("%s: IVStep = %d, %v; want %d, %v", tc.name, step, ok, tc.step, tc.ok)
		}
	}
}

// TestEdgeTo: code for an edge goes on a fall-through (after the branch)
// or before an unconditional jump; a conditional jump taken along the
// edge has no place for it.
func TestEdgeTo(t *testing.T) {
	loop := []byte{
		0x48, 0x85, 0xff, // 0: test %rdi,%rdi
		0x74, 0x0a, // 3: je 15
		0x48, 0x83, 0xc0, 0x01, // 5: add $1,%rax
		0x48, 0x83, 0xef, 0x01, // 9: sub $1,%rdi
		0x75, 0xf6, // 13: jne 5
		0xc3, // 15: ret
	}
	jump := []byte{
		0x31, 0xc0, // 0: xor %eax,%eax
		0xeb, 0x00, // 2: jmp 4
		0xc3, // 4: ret
	}
	o := newObject(t, []fn{{"loop", loop}, {"jump", jump}}, nil)
	a := kit.Analyze(o)
	for _, tc := range []struct {
		fn     int
		p, to  int // block indices
		want   kit.Edge
		wantOK bool
	}{
		{0, 0, 1, kit.Edge{Inst: 1, After: true}, true}, // je falls through into the loop
		{0, 1, 2, kit.Edge{Inst: 4, After: true}, true}, // the loop's exit
		{0, 0, 2, kit.Edge{}, false},                    // je taken
		{0, 1, 1, kit.Edge{}, false},                    // the back edge, a jne taken
		{1, 0, 1, kit.Edge{Inst: 6 + 1}, true},          // before the jmp (after loop's 6 instructions)
	} {
		g, _ := a.Func(o.Funcs[tc.fn])
		if len(g.Blocks) <= max(tc.p, tc.to) {
			t.Fatalf("%s: %d blocks", g.Func.Name, len(g.Blocks))
		}
		got, ok := kit.EdgeTo(g, g.Blocks[tc.p], tc.to)
		if ok != tc.wantOK || (ok && got != tc.want) {
			t.Errorf("%s: EdgeTo(block %d, block %d) = %+v, %v; want %+v, %v", g.Func.Name, tc.p, tc.to, got, ok, tc.want, tc.wantOK)
		}
	}
}

// TestEdgeToOrTaken: where EdgeTo finds no place, on a conditional jump
// taken along the edge, EdgeToOrTaken puts the code out of line; a jump
// taken and falling through to the same block has no place still.
func TestEdgeToOrTaken(t *testing.T) {
	both := []byte{
		0x48, 0x85, 0xff, // 0: test %rdi,%rdi
		0x74, 0x00, // 3: je 5 (taken or not: 5)
		0xc3, // 5: ret
	}
	o := newObject(t, []fn{{"loop", takenLoop}, {"both", both}}, nil)
	a := kit.Analyze(o)
	for _, tc := range []struct {
		fn       int
		from, to int // instruction indices: the branch, the target
		want     kit.Edge
		wantOK   bool
	}{
		{0, 4, 9, kit.Edge{Inst: 4, Taken: true, To: 9}, true}, // je out of the loop
		{0, 7, 2, kit.Edge{Inst: 7, Taken: true, To: 2}, true}, // jne back
		{0, 7, 8, kit.Edge{Inst: 7, After: true}, true},        // jne falls through: EdgeTo's
		{0, 4, 5, kit.Edge{Inst: 4, After: true}, true},        // je falls through
		{1, 11, 12, kit.Edge{}, false},                         // je to where it falls through
	} {
		g, lv := a.Func(o.Funcs[tc.fn])
		got, ok := kit.EdgeToOrTaken(g, g.BlockOf(tc.from), g.BlockOf(tc.to).Index)
		if ok != tc.wantOK || (ok && got != tc.want) {
			t.Errorf("%s: EdgeToOrTaken(%d -> %d) = %+v, %v; want %+v, %v", g.Func.Name, tc.from, tc.to, got, ok, tc.want, tc.wantOK)
		}
		// On a taken path the jump has tested the flags: the flags live
		// there are its target's (ret: none; the loop: its cmp sets
		// them before any read); the registers those before the jump
		// (code put on the same path later may read them).
		if ok && got.Taken {
			if live := got.Live(lv); live.Flags&effect.Status != 0 || live.Regs != lv.Before(tc.from).Regs || live.Flags != lv.Before(tc.to).Flags {
				t.Errorf("%s: %d -> %d: live %+v, want the registers before the jump (%+v), the flags of the target (%+v)", g.Func.Name, tc.from, tc.to, live, lv.Before(tc.from), lv.Before(tc.to))
			}
		}
	}
}

// takenLoop counts in rcx up to rsi (returning early there) and in rax
// down from rdi iterations:
//
//	0: xor %eax,%eax
//	1: xor %ecx,%ecx
//	2: L: add $1,%rcx
//	3: cmp %rsi,%rcx
//	4: je OUT
//	5: add $1,%rax
//	6: sub $1,%rdi
//	7: jne L
//	8: ret
//	9: OUT: ret
var takenLoop = []byte{
	0x31, 0xc0, 0x31, 0xc9,
	0x48, 0x83, 0xc1, 0x01,
	0x48, 0x39, 0xf1,
	0x74, 0x0b,
	0x48, 0x83, 0xc0, 0x01,
	0x48, 0x83, 0xef, 0x01,
	0x75, 0xed,
	0xc3,
	0xc3,
}

// TestTakenEdgeRuns inserts code on the two taken edges of takenLoop (the
// early exit adds 1000 to rax, the back edge 0x10000, with lea: the flags
// stay; the back edge's code jumps to a cold part of its own and back, and
// a second code on it adds 0x100 0000), and code before the back edge's
// jump after those (adds 0x100 0000 0000, on both of its paths), links the
// object into a program and runs it: what it returns must be what the
// loop computes with the additions on those edges alone. The jumps are
// re-targeted, not repeated: the function has its two conditional jumps
// still (objdump), where a jump before each to the code and back would
// make five.
func TestTakenEdgeRuns(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	dir := t.TempDir()
	o := newObject(t, []fn{{"f", takenLoop}}, nil)
	a := kit.Analyze(o)
	g, _ := a.Func(o.Funcs[0])
	b := kit.NewBuilder()
	for _, e := range []struct {
		from, to int
		add      int32
		cold     bool
	}{{4, 9, 1000, false}, {7, 2, 0x10000, true}, {7, 2, 0x1000000, false}} {
		edge, ok := kit.EdgeToOrTaken(g, g.BlockOf(e.from), g.BlockOf(e.to).Index)
		if !ok || !edge.Taken {
			t.Fatalf("edge %d -> %d: %+v, %v", e.from, e.to, edge, ok)
		}
		if e.cold {
			b.Jmp("add")
			b.Label("back")
			b.Cold()
			b.Label("add")
			b.LeaQ(snippet.Mem(snippet.RAX, e.add), snippet.RAX)
			b.Jmp("back")
			b.Hot()
		} else {
			b.LeaQ(snippet.Mem(snippet.RAX, e.add), snippet.RAX)
		}
		sn, err := b.Assemble()
		if err != nil {
			t.Fatal(err)
		}
		if (sn.Cold != nil) != e.cold {
			t.Fatalf("edge %d -> %d: cold part %v, want %v", e.from, e.to, sn.Cold != nil, e.cold)
		}
		if err := edge.Insert(g.Sec, sn); err != nil {
			t.Fatal(err)
		}
	}
	// (rdx is free; the flags are the jump's: mov and lea keep them)
	b.MovQ(snippet.Imm(0x10000000000), snippet.RDX)
	b.LeaQ(snippet.MemIndex(snippet.RAX, snippet.RDX, 1, 0), snippet.RAX)
	sn, err := b.Assemble()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Sec.InsertBefore(7, sn); err != nil {
		t.Fatal(err)
	}
	obj, exe, main := filepath.Join(dir, "f.o"), filepath.Join(dir, "f"), filepath.Join(dir, "main.c")
	writeObject(t, o, obj)
	if err := os.WriteFile(main, []byte(`#include <stdio.h>
long f(long n, long limit);
int main(void) {
	for (long n = 1; n <= 4; n++)
		for (long limit = 1; limit <= 5; limit++)
			printf("%ld %ld %lx\n", n, limit, f(n, limit));
	return 0;
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Link(t, "gcc", exe, main, obj)
	// (a wrong link can loop forever)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", exe, err, out)
	}
	var want strings.Builder
	for n := int64(1); n <= 4; n++ {
		for limit := int64(1); limit <= 5; limit++ {
			rax, rdi := int64(0), n
			for rcx := int64(1); ; rcx++ {
				if rcx == limit {
					rax += 1000
					break
				}
				rax++
				rax += 0x10000000000
				if rdi--; rdi == 0 {
					break
				}
				rax += 0x10000 + 0x1000000
			}
			fmt.Fprintf(&want, "%d %d %x\n", n, limit, rax)
		}
	}
	if string(out) != want.String() {
		t.Errorf("output\n%s\nwant\n%s", out, want.String())
	}
	dis, err := exec.Command("objdump", "-d", "--no-show-raw-insn", obj).Output()
	if err != nil {
		t.Fatal(err)
	}
	var jcc []string
	for _, line := range strings.Split(string(dis), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && strings.HasPrefix(f[1], "j") && f[1] != "jmp" {
			jcc = append(jcc, strings.Join(f[1:], " "))
		}
	}
	if len(jcc) != 2 {
		t.Errorf("conditional jumps %q, want the function's two (je, jne), re-targeted", jcc)
	}
}

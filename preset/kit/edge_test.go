package kit_test

import (
	"testing"

	"hijack/cfg/effect"
	"hijack/preset/kit"
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

package snippet

import (
	"fmt"
	"reflect"
	"testing"
)

// TestCacheMatchesFresh: one Builder assembles snippets of a few shapes
// over and over, with the symbols' offsets, the label names and the plain
// operands varied; every result must equal what a fresh Builder (nothing
// encoded yet) assembles from the same calls. The shapes cover every kind
// of relocated field (RIP-relative, GOT, TLS, absolute displacement, 32-
// and 64-bit immediates, calls), labels in the middle and at the end, jumps
// whose targets swap, raw bytes and segment prefixes; the plain values
// cross the disp8/disp32 and imm8/imm32 boundaries, where the encoding's
// length changes. The second round assembles with AssembleReusing.
func TestCacheMatchesFresh(t *testing.T) {
	type params struct {
		k    int64  // symbolic offsets
		disp int32  // a plain displacement
		imm  int64  // a plain immediate
		name string // label names
		reg  Reg
	}
	shapes := map[string]func(b *Builder, p params){
		"symbols": func(b *Builder, p params) {
			b.MovQ(RIP("sites", 32*p.k), RAX)
			b.MovQ(GOTPCRELX("hot"), RCX)
			b.AddQ(Mem(RCX, 16), RAX)
			b.CmpQ(Mem(NoReg, 0).Seg(FS), RAX)
			b.MovQ(TPOFF("slots", 8*p.k), p.reg)
			b.MovQ(SymAbs("tab", 4*p.k).Index(RAX, 8), RDX)
			b.MovQ(SymImm("site", p.k), Mem(RCX, 0))
			b.MovQ(SymImm64("big", p.k<<20), RSI)
			b.CallSym("vpt_slow_rax")
			b.Bytes(0x0f, 0x1f, 0x05)
		},
		"labels": func(b *Builder, p params) {
			b.LeaQ(MemIndex(RDI, RSI, 8, p.disp), p.reg)
			b.ShrQ(Imm(12), p.reg)
			b.CmpQ(Mem(RBX, 8*int32(p.k)).Seg(FS), p.reg)
			b.Jcc(CondE, "hit"+p.name)
			b.MovQ(p.reg, Mem(RBX, 8*int32(p.k)).Seg(FS))
			b.AddQ(Imm(p.imm), p.reg)
			b.Jcc(CondNE, "end"+p.name)
			b.MovQ(RIP("sites", 32*p.k), RAX)
			b.Label("hit" + p.name)
			b.Bytes(0x90)
			b.Label("end" + p.name)
		},
		"jumps": func(b *Builder, p params) {
			// the same instructions and label positions, the jumps' targets swapped
			a, c := "a"+p.name, "c"+p.name
			if p.k%2 == 1 {
				a, c = c, a
			}
			b.Jcc(CondE, a)
			b.Jmp(c)
			b.Label("a" + p.name)
			b.Bytes(0x90)
			b.Label("c" + p.name)
			b.Bytes(0x90, 0x90)
		},
		"tls": func(b *Builder, p params) {
			b.MovQ(GOTTPOFF("slots"), p.reg)
			b.MovQ(Mem(p.reg, p.disp).Seg(FS), RAX)
			b.Jmp("out" + p.name)
			b.Label("mid" + p.name)
			b.MovQ(TPOFF("slots", 8*p.k).Seg(FS), RAX)
			b.Label("out" + p.name)
		},
	}
	// plain displacements on every kind of base (rbp and r13 take a disp8
	// for 0, rsp and r12 a SIB byte), in pushes, pops, SSE and AVX moves
	shapes["bases"] = func(b *Builder, p params) {
		for _, base := range []Reg{RBP, R13, RSP, R12, RBX, R15} {
			b.CmpQ(p.reg, Mem(base, p.disp))
			b.PushQ(Mem(base, p.disp))
			b.PopQ(Mem(base, p.disp+8))
			b.IncQ(MemIndex(base, RCX, 4, p.disp))
		}
		b.Movdqu(Mem(RDI, p.disp), XMM(1))
		b.Vmovdqu(Mem(R13, p.disp).Seg(GS), YMM(2))
		b.XorQ(Mem(RSI, p.disp), R9)
	}
	var ps []params
	for i, d := range []int32{0, 8, 120, 127, 128, 4096, -128, -129} {
		for j, imm := range []int64{1, 127, 128, -1, 0x7fffffff} {
			reg := []Reg{RAX, R10, RDX, R15}[(i+j)%4]
			ps = append(ps, params{k: int64(i*7 + j), disp: d, imm: imm, name: fmt.Sprintf(".%d.%d", i, j), reg: reg})
		}
	}
	cached := New()
	for round := 0; round < 2; round++ {
		for name, build := range shapes {
			for _, p := range ps {
				fresh := New()
				build(fresh, p)
				want, err := fresh.Assemble()
				if err != nil {
					t.Fatalf("%s %+v: %v", name, p, err)
				}
				build(cached, p)
				assemble := cached.Assemble
				if round == 1 { // the Builder's own Relocs and Labels, the same
					assemble = cached.AssembleReusing
				}
				got, err := assemble()
				if err != nil {
					t.Fatalf("%s %+v (cached): %v", name, p, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s %+v: cached builder gives\n% x %v %v\nfresh one\n% x %v %v", name, p, got.Bytes, got.Relocs, got.Labels, want.Bytes, want.Relocs, want.Labels)
				}
			}
		}
	}
	if len(cached.encodings) == 0 {
		t.Errorf("no instruction encodings kept")
	}
	t.Logf("%d snippets, %d instructions encoded", 8*len(ps), len(cached.encodings))
}

// TestDisplacementClasses: an instruction is encoded once for every plain
// displacement of its size class (the slots of a preset's sites), not once
// per displacement.
func TestDisplacementClasses(t *testing.T) {
	b := New()
	for k := int32(1); k < 200; k++ {
		b.CmpQ(RAX, Mem(R15, 8*k))
		code, err := b.Assemble()
		if err != nil {
			t.Fatal(err)
		}
		fresh := New()
		fresh.CmpQ(RAX, Mem(R15, 8*k))
		want, _ := fresh.Assemble()
		if !reflect.DeepEqual(code, want) {
			t.Fatalf("disp %d: % x, want % x", 8*k, code.Bytes, want.Bytes)
		}
	}
	if len(b.encodings) != 2 {
		t.Errorf("%d encodings kept, want 2 (disp8 and disp32)", len(b.encodings))
	}
}

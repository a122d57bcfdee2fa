package snippet

import "testing"

// build15 is a 15-instruction snippet with three relocations and a jump.
func build15(b *Builder) {
	b.LeaQ(Mem(RSP, -128), RSP)
	b.PushQ(RAX)
	b.PushQ(RCX)
	b.LeaQ(MemIndex(RDI, RSI, 8, 24), RAX)
	b.ShrQ(Imm(12), RAX)
	b.MovQ(GOTTPOFF("vpt_buf"), RCX)
	b.CmpQ(Mem(RCX, 8).Seg(FS), RAX)
	b.Jcc(CondE, "same")
	b.MovQ(RAX, Mem(RCX, 8).Seg(FS))
	b.IncQ(RIP("counter", 8))
	b.MovQ(SymImm("site_17", 0), Mem(RCX, 16).Seg(FS))
	b.Label("same")
	b.PopQ(RCX)
	b.PopQ(RAX)
	b.LeaQ(Mem(RSP, 128), RSP)
	b.Lahf()
}

func BenchmarkAssemble15(b *testing.B) {
	bld := New()
	b.ReportAllocs()
	for b.Loop() {
		build15(bld)
		if _, err := bld.Assemble(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAssemble15NewBuilder(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		bld := New()
		build15(bld)
		if _, err := bld.Assemble(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAssemble15Parallel(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		bld := New()
		for pb.Next() {
			build15(bld)
			if _, err := bld.Assemble(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package trace

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// blockSample is a trace with block counts only (no vptrace object): a
// blockcount object registered twice (loaded, unloaded, loaded again),
// another registered once; two threads, one with two instances (a reused
// TID); counts written more than once (cumulative snapshots).
func blockSample(t testing.TB) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Begin(&Header{PID: 77, PPID: 1, Program: "./bc"})
	strs := []byte("\x00hot.o\x00loop\x00main\x00")
	hot := func(reg uint32, desc uint64) *BlockObject {
		return &BlockObject{Reg: reg, Version: 1, Desc: desc, ID: 0xfeed, TPOff: -64, NameOff: 1,
			Blocks: []BlockRec{
				{Func: 7, Off: 0, Score: 0, LoopDepth: 0, Insns: 4},
				{Func: 7, Off: 0x10, Score: 2000000, LoopDepth: 1, Insns: 6},
				{Func: 12, Off: 0x4, Score: 500000, LoopDepth: 0, Insns: 2},
			}, Strs: strs}
	}
	w.BlockObject(hot(1, 0x4000))
	w.BlockObject(&BlockObject{Reg: 2, Version: 1, Desc: 0x9000, ID: 0xbeef, NameOff: 1,
		Blocks: []BlockRec{{Func: 7, Off: 0x20, LoopDepth: 2, Score: 4000000}}, Strs: strs})
	w.ThreadStart(&ThreadStart{Serial: 1, TID: 77, Name: "bc"})
	// snapshots of thread 77 (serial 1): the later one is the larger
	w.BlockCounts(&BlockCounts{Serial: 1, TID: 77, Reg: 1, Time: 10, Name: "bc",
		Counts: []BlockCount{{0, 1}, {1, 50}}})
	w.BlockCounts(&BlockCounts{Serial: 1, TID: 77, Reg: 1, Time: 20, Flags: CountsFinal, Name: "bc",
		Counts: []BlockCount{{0, 1}, {1, 100}, {2, 3}}})
	// a snapshot taken earlier but written later must not lower anything
	w.BlockCounts(&BlockCounts{Serial: 1, TID: 77, Reg: 1, Time: 15, Name: "bc",
		Counts: []BlockCount{{1, 70}}})
	w.BlockCounts(&BlockCounts{Serial: 1, TID: 77, Reg: 2, Time: 20, Name: "bc", Counts: []BlockCount{{0, 1000}}})
	// thread 80, two instances (serials 2 and 3)
	w.BlockCounts(&BlockCounts{Serial: 2, TID: 80, Reg: 1, Flags: CountsFinal, Name: "w1", Counts: []BlockCount{{1, 7}}})
	w.BlockCounts(&BlockCounts{Serial: 3, TID: 80, Reg: 1, Flags: CountsFinal, Name: "w2", Counts: []BlockCount{{1, 5}}})
	// the object loaded again where it was (registration 3): fresh
	// counters, its tables those of registration 1
	w.BlockObject(&BlockObject{Reg: 3, Version: 1, Desc: 0x4000, ID: 0xfeed, TPOff: -64, NameOff: 1, Same: 1})
	w.BlockCounts(&BlockCounts{Serial: 3, TID: 80, Reg: 3, Flags: CountsFinal, Name: "w2", Counts: []BlockCount{{1, 11}, {2, 2}}})
	// a registration without its BLOCKS chunk (damage)
	w.BlockCounts(&BlockCounts{Serial: 1, TID: 77, Reg: 9, Name: "bc", Counts: []BlockCount{{4, 9}}})
	w.End(&End{Time: 30, Flags: EndClean})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestBlockCounts(t *testing.T) {
	tr := readAll(t, blockSample(t))
	if len(tr.Errors) != 0 || len(tr.Objects) != 0 || len(tr.BlockObjects) != 3 || !tr.HasBlocks() {
		t.Fatalf("errors %v, objects %d, block objects %d", tr.Errors, len(tr.Objects), len(tr.BlockObjects))
	}
	want := map[uint32]map[BlockID]uint64{
		77: {{1, 0}: 1, {1, 1}: 100, {1, 2}: 3, {2, 0}: 1000, {9, 4}: 9},
		80: {{1, 1}: 7 + 5 + 11, {1, 2}: 2},
	}
	if len(tr.Threads) != 2 {
		t.Fatalf("%d threads", len(tr.Threads))
	}
	for tid, w := range want {
		th := tr.Thread(tid)
		if th == nil || !reflect.DeepEqual(th.Blocks, w) {
			t.Errorf("thread %d: %v, want %v", tid, th.Blocks, w)
			continue
		}
		var sum uint64
		for _, n := range w {
			sum += n
		}
		if th.BlockExecs != sum {
			t.Errorf("thread %d: %d executions, want %d", tid, th.BlockExecs, sum)
		}
	}
	if th := tr.Thread(80); len(th.Instances) != 2 || th.Name != "w2" {
		t.Errorf("thread 80: %d instances, name %q", len(th.Instances), th.Name)
	}
	got := tr.Thread(77).SortedBlocks()
	if got[0] != (BlockStat{BlockID{2, 0}, 1000}) || got[1] != (BlockStat{BlockID{1, 1}, 100}) || got[len(got)-1] != (BlockStat{BlockID{1, 0}, 1}) {
		t.Errorf("sorted: %v", got)
	}
	tot := tr.BlockTotals()
	if tot[0] != (BlockStat{BlockID{2, 0}, 1000}) || tot[1] != (BlockStat{BlockID{1, 1}, 123}) || len(tot) != 5 {
		t.Errorf("totals: %v", tot)
	}
	b := tr.Block(BlockID{1, 1})
	if !b.Known() || b.Where() != "loop+0x10" || b.LoopDepth != 1 || b.Score != 2000000 || b.Insns != 6 || b.Object.Name() != "hot.o" {
		t.Errorf("block 1.1: %+v %s", b, b.Where())
	}
	if o := tr.BlockObjects[2]; o.Reg != 3 || o.Same != 1 || len(o.Blocks) != 3 || o.Name() != "hot.o" {
		t.Errorf("registration 3: %+v", o)
	}
	if b := tr.Block(BlockID{9, 4}); b.Known() || b.Where() != "?9.4" {
		t.Errorf("unknown block: %+v", b)
	}
	if b := tr.Block(BlockID{1, 3}); b.Known() {
		t.Errorf("block past the object's end resolved: %+v", b)
	}
	if tr.Chunks[ChunkBlocks] != 3 || tr.Chunks[ChunkCounts] != 8 {
		t.Errorf("chunks %v", tr.Chunks)
	}
}

// TestBlocksOldTrace: a trace without block chunks has none, and the
// vptrace part of a trace with them reads as before.
func TestBlocksOldTrace(t *testing.T) {
	old := readAll(t, sample(t))
	if old.HasBlocks() || len(old.BlockTotals()) != 0 || old.Thread(42).Blocks != nil {
		t.Errorf("an old trace has blocks")
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.BlockObject(&BlockObject{Reg: 1, Version: 1, ID: 1, Blocks: []BlockRec{{}}})
	w.BlockCounts(&BlockCounts{Serial: 1, TID: 42, Reg: 1, Counts: []BlockCount{{0, 5}}})
	w.Flush()
	mixed := readAll(t, append(sample(t), buf.Bytes()...))
	if !reflect.DeepEqual(mixed.Thread(42).Pages, old.Thread(42).Pages) || mixed.Thread(42).Blocks[BlockID{1, 0}] != 5 {
		t.Errorf("mixed trace: pages differ or blocks %v", mixed.Thread(42).Blocks)
	}
}

func TestBlockChunkErrors(t *testing.T) {
	good := (&BlockCounts{Serial: 1, TID: 2, Reg: 1, Counts: []BlockCount{{3, 4}, {5, 6}}}).AppendPayload(nil)
	if c, err := DecodeBlockCounts(good); err != nil || !reflect.DeepEqual(c.Counts, []BlockCount{{3, 4}, {5, 6}}) {
		t.Fatalf("%+v %v", c, err)
	}
	dup := (&BlockCounts{Counts: []BlockCount{{3, 4}, {3, 6}}}).AppendPayload(nil)
	huge := (&BlockCounts{Counts: []BlockCount{{1 << 24, 4}}}).AppendPayload(nil)
	obj := (&BlockObject{Blocks: []BlockRec{{}, {}}, Strs: []byte("\x00ab\x00")}).AppendPayload(nil)
	for _, c := range []struct {
		name string
		typ  ChunkType
		p    []byte
		msg  string
	}{
		{"counts cut", ChunkCounts, good[:len(good)-1], "short"},
		{"fixed part cut", ChunkCounts, good[:40], "short"},
		{"block twice", ChunkCounts, dup, "counted twice"},
		{"block out of range", ChunkCounts, huge, "out of range"},
		{"object cut", ChunkBlocks, obj[:len(obj)-1], "short"},
		{"object fixed part cut", ChunkBlocks, obj[:47], "short"},
	} {
		if _, err := Decode(c.typ, c.p); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", c.name, err, c.msg)
		}
	}
	// an undecodable counts chunk is listed, the rest read
	data := AppendChunk(blockSample(t), ChunkCounts, dup)
	tr := readAll(t, data)
	if len(tr.Errors) != 1 || !strings.Contains(tr.Errors[0], "counts chunk at offset") || tr.Thread(77).Blocks[BlockID{1, 1}] != 100 {
		t.Errorf("errors %v", tr.Errors)
	}
}

// FuzzBlocks: the block decoders and resolution on arbitrary payloads.
func FuzzBlocks(f *testing.F) {
	f.Add(uint16(ChunkCounts), (&BlockCounts{Counts: []BlockCount{{1, 2}}}).AppendPayload(nil))
	f.Add(uint16(ChunkBlocks), (&BlockObject{Blocks: []BlockRec{{Func: 1}}, Strs: []byte("\x00f\x00")}).AppendPayload(nil))
	f.Fuzz(func(t *testing.T, typ uint16, p []byte) {
		v, err := Decode(ChunkType(typ), p)
		if err != nil {
			return
		}
		switch x := v.(type) {
		case *BlockObject:
			for _, b := range x.Blocks {
				_ = x.Str(b.Func) + x.Name()
			}
		case *BlockCounts:
			if x.AppendPayload(nil) == nil {
				t.Fatal("no payload")
			}
		}
	})
}

package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

const pg = PageSize

// TestRegionAt: which region owns a page at a time, from allocation events
// in process order (Seq), whatever the order of the chunks.
func TestRegionAt(t *testing.T) {
	ev := func(seq, time uint64, k AllocKind, addr, size, old uint64) AllocEvent {
		return AllocEvent{Seq: seq, Time: time, Kind: k, Addr: addr, Size: size, Old: old, Site: 0x400000 + seq}
	}
	rb := regionBuilder{}
	// thread 2's chunk comes first in the file; Seq orders them
	rb.allocs(&Allocs{Serial: 2, TID: 11, Lost: 3, Events: []AllocEvent{
		ev(4, 40, AllocFree, 0x100000, 0, 0),                    // frees A
		ev(5, 50, AllocMalloc, 0x100000, 3*pg, 0),               // B reuses A's pages
		ev(6, 60, AllocRealloc, 0x900000, 8*pg, 0x100000),       // B moves
		ev(9, 90, AllocMunmap, 0x20000000+4*pg, 2*pg, 0),        // a hole in M
		ev(10, 95, AllocMremap, 0x30000000, 100*pg, 0x20000000), // M's first part moves
	}})
	rb.allocs(&Allocs{Serial: 1, TID: 10, Lost: 1, Events: []AllocEvent{
		ev(1, 10, AllocMalloc, 0x100000, 2*pg, 0),         // A
		ev(2, 10, AllocNewArray, 0x100000+2*pg+16, 64, 0), // small block on A's last page... after it
		{Seq: 3, Time: 20, Kind: AllocMmap, Addr: 0x20000000, Size: 10*pg - 1, Flags: AllocFile, Path: "/data/f", Site: 0x400003},
	}})
	rb.allocs(&Allocs{Serial: 1, TID: 10, Lost: 2}) // cumulative: the larger counts
	rb.thread(&ThreadStart{Serial: 1, TID: 10, Time: 5, Stack: Range{0x7000000, 0x7000000 + 64*pg},
		TLS: []Range{{0x7000000 + 63*pg, 0x7000000 + 63*pg + 128}}})
	rb.exit(&ThreadExit{Serial: 1, TID: 10, Time: 70})
	rs, lost := rb.build()
	if lost != 5 {
		t.Errorf("lost %d, want 5", lost)
	}
	x := newRegionIndex(rs)
	type want struct {
		kind  RegionKind
		alloc AllocKind
		seq   uint64 // the allocating event's site - 0x400000
		tid   uint32
	}
	heap := func(a AllocKind, seq uint64) *want { return &want{RegionHeap, a, seq, 0} }
	for _, c := range []struct {
		name    string
		page, t uint64
		want    *want
	}{
		{"A at its birth", 0x100, 10, heap(AllocMalloc, 1)},
		{"A before", 0x100, 9, nil},
		{"A's last page: A covers more than the new[] block", 0x101, 30, heap(AllocMalloc, 1)},
		{"the new[] block's page", 0x102, 30, heap(AllocNewArray, 2)},
		{"freed A's page reused by B", 0x100, 50, heap(AllocMalloc, 5)},
		{"between free and reuse", 0x100, 45, nil},
		{"B moved away", 0x100, 61, nil},
		{"B's new place", 0x908, 60, nil}, // 8 pages from 0x900: 0x900..0x907
		{"B's new place, last page", 0x907, 60, heap(AllocRealloc, 6)},
		{"mapping", 0x20000, 25, &want{RegionMmap, AllocMmap, 3, 10}},
		{"mapping's rounded last page", 0x20009, 25, &want{RegionMmap, AllocMmap, 3, 10}},
		{"hole", 0x20004, 91, nil},
		{"after the hole, split part", 0x20006, 91, &want{RegionMmap, AllocMmap, 3, 10}},
		{"first part, before mremap", 0x20000, 92, &want{RegionMmap, AllocMmap, 3, 10}},
		{"first part, moved", 0x20000, 96, nil},
		{"moved part", 0x30000, 96, &want{RegionMmap, AllocMmap, 3, 10}},
		{"stack", 0x7000, 6, &want{RegionStack, 0, 0, 10}},
		{"TLS inside the stack", 0x703f, 6, &want{RegionTLS, 0, 0, 10}},
		{"stack after the thread exited", 0x7000, 71, nil},
		{"stack at the exit tick", 0x7000, 70, &want{RegionStack, 0, 0, 10}},
	} {
		r := x.at(c.page, c.t)
		switch {
		case c.want == nil && r != nil:
			t.Errorf("%s: got %+v, want none", c.name, r)
		case c.want == nil:
		case r == nil:
			t.Errorf("%s: got none, want %+v", c.name, c.want)
		case r.Kind != c.want.kind || r.Alloc != c.want.alloc || (c.want.seq != 0 && r.Site != 0x400000+c.want.seq) ||
			(c.want.tid != 0 && r.TID != c.want.tid):
			t.Errorf("%s: got %+v, want %+v", c.name, r, c.want)
		}
	}
	if r := x.at(0x20000, 25); r.Path != "/data/f" || r.Flags != AllocFile {
		t.Errorf("mapping path %+v", r)
	}
	if r := x.at(0x30000, 96); r.Path != "/data/f" || r.End-r.Start != 100*pg {
		t.Errorf("moved mapping %+v", r)
	}
}

// TestLoadSplitsPages: Load splits a page's events by the region that
// owned it at each time, even when the ALLOCS chunk comes after the
// aggregates; ReadAll (one pass) names the owner at the first event.
func TestLoadSplitsPages(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Begin(&Header{PID: 7, PageSize: PageSize})
	w.ThreadStart(&ThreadStart{Serial: 1, TID: 7, Time: 1, Stack: Range{0x7000000, 0x7010000}})
	w.Agg(&Agg{Serial: 1, TID: 7, From: 0, To: 100, Pages: []PageAgg{
		{Page: 0x100, Events: 2, Reads: 2, First: 10, Last: 20, Sites: []SiteCount{{0x10, 2}}},
		{Page: 0x7000, Events: 1, Writes: 1, First: 5, Last: 5, Sites: []SiteCount{{0x20, 1}}},
	}})
	w.Agg(&Agg{Serial: 1, TID: 7, From: 100, To: 200, Pages: []PageAgg{
		{Page: 0x100, Events: 3, Writes: 3, First: 150, Last: 160, Sites: []SiteCount{{0x30, 3}}},
	}})
	w.Allocs(&Allocs{Serial: 1, TID: 7, Events: []AllocEvent{
		{Seq: 1, Time: 8, Kind: AllocMalloc, Addr: 0x100000, Size: pg, Site: 0x401000},
		{Seq: 2, Time: 120, Kind: AllocFree, Addr: 0x100000},
		{Seq: 3, Time: 130, Kind: AllocCalloc, Addr: 0x100000, Size: 2 * pg, Site: 0x402000},
	}})
	w.Maps(&Maps{Time: 0, Why: MapsStart, Maps: []Mapping{{Start: 0x400000, End: 0x401000, Prot: ProtRead | ProtExec, Path: "/bin/app"}}})
	w.End(&End{Time: 300, Flags: EndClean})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.vpt")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if tr.AllocEvents != 3 || len(tr.Maps) != 1 || tr.Maps[0].Maps[0].Path != "/bin/app" {
		t.Errorf("allocs %d maps %+v", tr.AllocEvents, tr.Maps)
	}
	p := tr.Thread(7).Pages[0x100]
	if len(p.Parts) != 2 {
		t.Fatalf("page 0x100: %d parts, want 2", len(p.Parts))
	}
	got := map[AllocKind][4]uint64{}
	for _, pp := range p.Parts {
		got[pp.Region.Alloc] = [4]uint64{pp.Events, pp.Reads, pp.Writes, pp.First}
	}
	if want := map[AllocKind][4]uint64{AllocMalloc: {2, 2, 0, 10}, AllocCalloc: {3, 0, 3, 150}}; !reflect.DeepEqual(got, want) {
		t.Errorf("parts %v, want %v", got, want)
	}
	if p.Region == nil || p.Region.Alloc != AllocCalloc {
		t.Errorf("page owner %+v, want the calloc block (most events)", p.Region)
	}
	if s := tr.Thread(7).Pages[0x7000]; s.Region == nil || s.Region.Kind != RegionStack || s.Parts != nil {
		t.Errorf("stack page %+v", s)
	}
	// one pass: the owner at the first event, no parts
	one := readAll(t, buf.Bytes())
	if p := one.Thread(7).Pages[0x100]; p.Parts != nil || p.Region == nil || p.Region.Alloc != AllocMalloc {
		t.Errorf("one pass: %+v", p)
	}
}

func TestAllocsRoundTrip(t *testing.T) {
	a := &Allocs{Serial: 3, TID: 9, Flags: FlagExit, Time: 77, Lost: 2, Events: []AllocEvent{
		{Seq: 1, Time: 2, Addr: 3, Size: 4, Old: 5, Site: 6, Kind: AllocMremap, Flags: AllocFile | AllocShared, Prot: 3, Path: "/x"},
		{Seq: 2, Kind: AllocFree, Addr: 3},
	}}
	b, err := DecodeAllocs(a.AppendPayload(nil))
	if err != nil || !reflect.DeepEqual(a, b) {
		t.Errorf("allocs: %+v %v", b, err)
	}
	m := &Maps{Time: 4, Why: MapsDlopen, Maps: []Mapping{{1, 2, 3, ProtRead, "[heap]"}, {4, 5, 0, 0, ""}}}
	n, err := DecodeMaps(m.AppendPayload(nil))
	if err != nil || !reflect.DeepEqual(m, n) {
		t.Errorf("maps: %+v %v", n, err)
	}
	ts := &ThreadStart{Serial: 1, TID: 2, Time: 3, Name: "w", Stack: Range{1, 2}, TLS: []Range{{3, 4}}}
	u, err := DecodeThreadStart(ts.AppendPayload(nil))
	if err != nil || !reflect.DeepEqual(ts, u) {
		t.Errorf("thread: %+v %v", u, err)
	}
	if _, err := DecodeAllocs(a.AppendPayload(nil)[:60]); err == nil {
		t.Errorf("short allocs decoded")
	}
	if AllocNewArray.String() != "new[]" || AllocKind(99).String() != "alloc-99" {
		t.Errorf("names")
	}
}

// TestLoadChild: a fork child's pages of blocks its parent allocated
// before the fork are named by the parent's regions, until the child
// frees them.
func TestLoadChild(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, h *Header, f func(w *Writer)) string {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		w.Begin(h)
		f(w)
		w.End(&End{Time: 1000, Flags: EndClean})
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	parentPath := write("p.vpt", &Header{PID: 10, PageSize: PageSize}, func(w *Writer) {
		w.Allocs(&Allocs{Serial: 1, TID: 10, Events: []AllocEvent{
			{Seq: 1, Time: 10, Kind: AllocMalloc, Addr: 0x100000, Size: pg, Site: 0x401000}, // A: alive at the fork
			{Seq: 2, Time: 10, Kind: AllocMalloc, Addr: 0x200000, Size: pg, Site: 0x402000}, // B: freed before
			{Seq: 3, Time: 50, Kind: AllocFree, Addr: 0x200000},
			{Seq: 4, Time: 300, Kind: AllocMalloc, Addr: 0x300000, Size: pg, Site: 0x403000}, // after the fork
		}})
	})
	childPath := write("c.vpt", &Header{PID: 11, PPID: 10, Flags: HeaderForked, OpenTime: 100, PageSize: PageSize}, func(w *Writer) {
		w.Agg(&Agg{Serial: 2, TID: 11, From: 100, To: 200, Pages: []PageAgg{
			{Page: 0x100, Events: 1, Reads: 1, First: 120, Last: 120},
			{Page: 0x200, Events: 1, Reads: 1, First: 120, Last: 120},
			{Page: 0x300, Events: 1, Reads: 1, First: 120, Last: 120},
		}})
		w.Agg(&Agg{Serial: 2, TID: 11, From: 200, To: 300, Pages: []PageAgg{
			{Page: 0x100, Events: 1, Reads: 1, First: 260, Last: 260},
		}})
		w.Allocs(&Allocs{Serial: 2, TID: 11, Events: []AllocEvent{{Seq: 5, Time: 250, Kind: AllocFree, Addr: 0x100000}}})
	})
	parent, err := Load(parentPath)
	if err != nil {
		t.Fatal(err)
	}
	child, err := LoadChild(childPath, parent)
	if err != nil {
		t.Fatal(err)
	}
	th := child.Thread(11)
	a := th.Pages[0x100]
	if len(a.Parts) != 2 || a.Parts[0].Region == nil || a.Parts[0].Region.Site != 0x401000 || a.Parts[1].Region != nil {
		t.Errorf("A's page: %+v (parts %+v)", a, a.Parts)
	}
	if r := th.Pages[0x200].Region; r != nil {
		t.Errorf("B (freed before the fork): %+v", r)
	}
	if r := th.Pages[0x300].Region; r != nil {
		t.Errorf("the parent's allocation after the fork: %+v", r)
	}
	// without the parent: nothing named
	alone, err := Load(childPath)
	if err != nil {
		t.Fatal(err)
	}
	if r := alone.Thread(11).Pages[0x100].Region; r != nil {
		t.Errorf("child alone: %+v", r)
	}
}

// TestAllocsLost: the lost counts of ALLOCS chunks are cumulative per
// thread, first under serial 0 then under the thread's serial; a tid the
// kernel reuses after a thread's last chunk counts again.
func TestAllocsLost(t *testing.T) {
	for _, c := range []struct {
		name   string
		chunks []Allocs
		want   uint64
	}{
		{"one thread, serial 0 then known", []Allocs{{TID: 5, Lost: 2}, {Serial: 1, TID: 5, Lost: 3}, {Serial: 1, TID: 5, Lost: 3}}, 3},
		{"two threads", []Allocs{{Serial: 1, TID: 5, Lost: 2}, {Serial: 2, TID: 6, Lost: 4}}, 6},
		{"a reused tid", []Allocs{{Serial: 1, TID: 5, Lost: 2, Flags: FlagExit}, {TID: 5, Lost: 1}, {Serial: 3, TID: 5, Lost: 1, Flags: FlagExit}}, 3},
		{"none", []Allocs{{Serial: 1, TID: 5}}, 0},
	} {
		var rb regionBuilder
		for i := range c.chunks {
			rb.allocs(&c.chunks[i])
		}
		if _, lost := rb.build(); lost != c.want {
			t.Errorf("%s: %d lost, want %d", c.name, lost, c.want)
		}
	}
}

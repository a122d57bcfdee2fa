package trace

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestLoadMetaStream: LoadMeta and a second read of the page chunks, each
// owned by RegionIndex().At, give what Load gives: the same objects,
// notes, end and regions, and per (thread, page, owner) the same events.
func TestLoadMetaStream(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Begin(&Header{PID: 7, PageSize: PageSize})
	w.Object(&Object{Desc: 0x5000, SitesAddr: 0x5030, StrsAddr: 0x5090, Version: 1, ID: 7, NameOff: 1,
		Sites: []SiteRec{{Func: 5, Kind: KindRead}, {Func: 5, InsnOff: 4, Kind: KindWrite}}, Strs: []byte("\x00a.o\x00main\x00")})
	w.ThreadStart(&ThreadStart{Serial: 1, TID: 7, Time: 1, Stack: Range{0x7000000, 0x7010000}})
	w.Agg(&Agg{Serial: 1, TID: 7, From: 0, To: 100, Pages: []PageAgg{
		{Page: 0x100, Events: 2, Reads: 2, First: 10, Last: 20, Sites: []SiteCount{{0x5030, 2}}},
		{Page: 0x7000, Events: 1, Writes: 1, First: 5, Last: 5, Sites: []SiteCount{{0x5050, 1}}},
	}})
	w.Note(&Note{Kind: NoteText, TID: 7, Time: 50, Text: "phase"})
	w.Agg(&Agg{Serial: 1, TID: 7, From: 100, To: 200, Pages: []PageAgg{
		{Page: 0x100, Events: 3, Writes: 3, First: 150, Last: 160, Sites: []SiteCount{{0x5050, 3}}},
	}})
	w.Raw(&Raw{Serial: 2, TID: 8, Time: 210, Events: []Event{
		{Page1: 0x101, Site: 0x5030, Time: 140}, {Page1: 0x101, Site: 0x5050, Time: 205}, {Page1: 0x200, Site: 0, Time: 0}}})
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
	full, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := LoadMeta(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(meta.Objects, full.Objects) || !reflect.DeepEqual(meta.Notes, full.Notes) ||
		!reflect.DeepEqual(meta.End, full.End) || !reflect.DeepEqual(meta.Regions, full.Regions) ||
		!reflect.DeepEqual(meta.Chunks, full.Chunks) || meta.AllocEvents != 3 || len(meta.Maps) != 1 {
		t.Fatalf("meta differs from Load:\n%+v\n%+v", meta, full)
	}
	if th := meta.Thread(7); th == nil || len(th.Pages) != 0 || th.Events != 0 {
		t.Errorf("meta thread 7: %+v", th)
	}

	type key struct {
		tid  uint32
		page uint64
		reg  *Region
	}
	want := map[key][3]uint64{}
	for _, th := range full.Threads {
		for _, p := range th.Pages {
			if len(p.Parts) == 0 {
				want[key{th.TID, p.Page, p.Region}] = [3]uint64{p.Events, p.Reads, p.Writes}
			}
			for _, pp := range p.Parts {
				want[key{th.TID, p.Page, pp.Region}] = [3]uint64{pp.Events, pp.Reads, pp.Writes}
			}
		}
	}
	idx := meta.RegionIndex()
	// meta's regions are equal to full's, not the same: compare by index
	same := func(r *Region) *Region {
		for i, x := range meta.Regions {
			if x == r {
				return full.Regions[i]
			}
		}
		return nil
	}
	got := map[key][3]uint64{}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch x, _ := c.Decode(); x := x.(type) {
		case *Agg:
			for _, pa := range x.Pages {
				k := key{x.TID, pa.Page, same(idx.At(pa.Page, pa.First))}
				v := got[k]
				got[k] = [3]uint64{v[0] + pa.Events, v[1] + pa.Reads, v[2] + pa.Writes}
			}
		case *Raw:
			for _, e := range x.Events {
				if e.Site == 0 {
					continue
				}
				k := key{x.TID, e.Page1 - 1, same(idx.At(e.Page1-1, e.Time))}
				v := got[k]
				kind := meta.Site(e.Site).Kind
				got[k] = [3]uint64{v[0] + 1, v[1] + uint64(kind&KindRead), v[2] + uint64(kind&KindWrite)>>1}
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("streamed\n%v\nwant\n%v", got, want)
	}
	if len(got) != 4 {
		t.Errorf("%d (thread, page, owner) keys, want 4 (page 0x100 has two owners)", len(got))
	}
	if (&Trace{}).RegionIndex().At(1, 1) != nil {
		t.Errorf("an index without regions found one")
	}
}

// TestLoadMetaChild: a fork child's metadata has the regions LoadChild
// gives it: its parent's blocks alive at the fork.
func TestLoadMetaChild(t *testing.T) {
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
	pp := write("p.vpt", &Header{PID: 10}, func(w *Writer) {
		w.Allocs(&Allocs{Serial: 1, TID: 10, Events: []AllocEvent{
			{Seq: 1, Time: 10, Kind: AllocMalloc, Addr: 0x100000, Size: pg, Site: 0x401000},
			{Seq: 2, Time: 300, Kind: AllocMalloc, Addr: 0x300000, Size: pg, Site: 0x403000},
		}})
	})
	cp := write("c.vpt", &Header{PID: 11, PPID: 10, Flags: HeaderForked, OpenTime: 100}, func(w *Writer) {
		w.Agg(&Agg{Serial: 2, TID: 11, From: 100, To: 200, Pages: []PageAgg{{Page: 0x100, Events: 1, Reads: 1, First: 120, Last: 120}}})
	})
	parent, err := LoadMeta(pp)
	if err != nil {
		t.Fatal(err)
	}
	full, err := LoadChild(cp, parent)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := LoadMetaChild(cp, parent)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(meta.Regions, full.Regions) || len(meta.Regions) != 1 {
		t.Fatalf("regions %+v, want %+v", meta.Regions, full.Regions)
	}
	if r := meta.RegionIndex().At(0x100, 120); r == nil || r.Site != 0x401000 {
		t.Errorf("the child's page of its parent's block: %+v", r)
	}
	if alone, _ := LoadMeta(cp); len(alone.Regions) != 0 {
		t.Errorf("without the parent: %+v", alone.Regions)
	}
}

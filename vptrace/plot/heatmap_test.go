package plot

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hijack/vptrace/trace"
)

// writeTrace writes a trace with one object (a read site naming "table",
// a write site naming nothing), two threads and two aggregation intervals.
func writeTrace(t *testing.T) (string, *trace.Trace) {
	t.Helper()
	var buf bytes.Buffer
	w := trace.NewWriter(&buf)
	w.Begin(&trace.Header{PID: 7, Program: "./app", ClockRes: 1e6})
	w.Object(&trace.Object{Desc: 0x1000, SitesAddr: 0x1030, StrsAddr: 0x1070, Version: 1, ID: 1, NameOff: 1,
		Sites: []trace.SiteRec{
			{Func: 7, Sym: 12, Kind: trace.KindRead, Seg: trace.SegGlobal, Size: 8},
			{Func: 7, Sym: trace.NoSym, Kind: trace.KindWrite, Seg: trace.SegUnknown, Size: 8},
		}, Strs: []byte("\x00app.o\x00fill\x00table\x00")})
	w.ThreadStart(&trace.ThreadStart{Serial: 1, TID: 100, Name: "app"})
	// interval 1 (0..100 ms): pages 0x1000-0x1003 read (table), page
	// 0x9000 written; interval 2 (100..200 ms): page 0x1000 read again
	w.Agg(&trace.Agg{Serial: 1, TID: 100, From: 0, To: 100e6, Pages: []trace.PageAgg{
		{Page: 0x1000, Events: 10, Reads: 10, First: 0, Last: 40e6, Sites: []trace.SiteCount{{Site: 0x1030, Count: 10}}},
		{Page: 0x1001, Events: 10, Reads: 10, First: 10e6, Last: 10e6, Sites: []trace.SiteCount{{Site: 0x1030, Count: 10}}},
		{Page: 0x1003, Events: 10, Reads: 10, First: 20e6, Last: 20e6, Sites: []trace.SiteCount{{Site: 0x1030, Count: 10}}},
		{Page: 0x9000, Events: 4, Writes: 4, First: 50e6, Last: 50e6, Sites: []trace.SiteCount{{Site: 0x1050, Count: 4}}},
	}})
	w.Agg(&trace.Agg{Serial: 1, TID: 100, From: 100e6, To: 200e6, Pages: []trace.PageAgg{
		{Page: 0x1000, Events: 5, Reads: 5, First: 150e6, Last: 150e6, Sites: []trace.SiteCount{{Site: 0x1030, Count: 5}}},
	}})
	w.ThreadStart(&trace.ThreadStart{Serial: 2, TID: 101, Name: "w"})
	w.Raw(&trace.Raw{Serial: 2, TID: 101, Events: []trace.Event{{Page1: 0x9000 + 1, Site: 0x1050, Time: 190e6}}})
	w.End(&trace.End{Time: 200e6, Flags: trace.EndClean})
	w.Flush()
	path := filepath.Join(t.TempDir(), "t.vpt")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, tr
}

func TestHeatmapBins(t *testing.T) {
	path, tr := writeTrace(t)
	h, err := NewHeatmap(path, tr, HeatmapOptions{TID: -1, Bins: 20})
	if err != nil {
		t.Fatal(err)
	}
	// two regions: the table (pages 0x1000-0x1003, the gap of one page
	// inside) and the heap page
	if len(h.Regions) != 2 || h.Regions[0].Lo != 0x1000 || h.Regions[0].Hi != 0x1003 || h.Regions[1].Lo != 0x9000 {
		t.Fatalf("regions %+v", h.Regions)
	}
	if !strings.HasPrefix(h.Regions[0].Label, "table") || !strings.HasPrefix(h.Regions[1].Label, "[unknown] fill") {
		t.Errorf("labels %q, %q", h.Regions[0].Label, h.Regions[1].Label)
	}
	if h.Rows != 4+1+1 || h.Total != 10+10+10+4+5+1 {
		t.Fatalf("rows %d, total %v", h.Rows, h.Total)
	}
	// page 0x1000: 10 events spread over 0..40 ms, then 5 at 150 ms
	row0 := h.Counts[0:h.Bins]
	var early float64
	for b := 0; b < h.Bins; b++ {
		if float64(b)*h.BinNS < 40e6 {
			early += row0[b]
		}
	}
	if math.Abs(early-10) > 1e-6 || row0[h.bin(150e6)] != 5 {
		t.Errorf("row 0: %v", row0)
	}
	// the untouched page 0x1002 is an empty row
	for b := 0; b < h.Bins; b++ {
		if h.Counts[2*h.Bins+b] != 0 {
			t.Fatalf("page 0x1002 has events: %v", h.Counts[2*h.Bins:3*h.Bins])
		}
	}
	// writes of thread 101 only: the raw event
	h, err = NewHeatmap(path, tr, HeatmapOptions{TID: 101, Kind: "writes", Bins: 20})
	if err != nil {
		t.Fatal(err)
	}
	if h.Total != 1 || len(h.Regions) != 1 {
		t.Errorf("thread 101 writes: total %v, %d regions", h.Total, len(h.Regions))
	}
	if _, err := NewHeatmap(path, tr, HeatmapOptions{TID: 101, Kind: "reads"}); err != ErrNoEvents {
		t.Errorf("thread 101 reads: %v", err)
	}
	if _, err := NewHeatmap(path, tr, HeatmapOptions{TID: -1, Kind: "bogus"}); err == nil {
		t.Error("kind bogus accepted")
	}
}

func TestHeatmapRowsShared(t *testing.T) {
	path, tr := writeTrace(t)
	// at most 3 rows for 5 pages in 2 regions (plus the blank row): the
	// table shares rows, every region keeps at least one
	h, err := NewHeatmap(path, tr, HeatmapOptions{TID: -1, Rows: 3})
	if err != nil {
		t.Fatal(err)
	}
	if h.Regions[0].Rows < 1 || h.Regions[1].Rows != 1 || h.Rows > 4 {
		t.Fatalf("rows %d, regions %+v", h.Rows, h.Regions)
	}
	out := filepath.Join(t.TempDir(), "h.png")
	if err := h.Save(out, 400, 300); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(out)
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 400 || b.Dy() != 300 {
		t.Errorf("size %v", b)
	}
	if err := h.Save(filepath.Join(t.TempDir(), "h.gif"), 400, 300); err == nil {
		t.Error("gif accepted")
	}
}

package vptrace_test

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"hijack/internal/testutil"
	"hijack/vptrace/trace"
)

// TestSweepSpill: a spill's entry code does not save a register that a
// sweep's code on the same edge reads (spill.go, sweepEdgeRegs). sw_fill
// (testdata/sweepspill.S) fills a KiB indexed by r14, then reads four
// longs with every register live: the region after the loop would save
// r14 (it does not reference it) and hold the slot base or the cache's
// address in it, and the sweep's range, computed after that on the shared
// edge, went from the table to that address: terabytes of pages never
// touched (csmith seed 10000280, clang -O3). The trace must hold exactly
// the three pages sw_fill touched, in every TLS model, and the loop must
// be a sweep (its range recorded at the exit).
func TestSweepSpill(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	rt := runtimeArchive(t)
	dir := t.TempDir()
	obj := testutil.Compile(t, dir, "gcc", "testdata/sweepspill.S")
	for _, tls := range []string{"local-exec", "initial-exec", "indirect"} {
		t.Run(tls, func(t *testing.T) {
			sub := t.TempDir()
			inst := instrument(t, obj, "tls="+tls)
			if code := strings.Join(disasm(t, inst, "sw_fill"), "\n"); !strings.Contains(code, "vpt_range") {
				t.Fatalf("no range call in sw_fill: the loop is not a sweep\n%s", code)
			}
			drv := testutil.Compile(t, sub, "gcc", "testdata/sweepspill_main.c", "-O2")
			exe := filepath.Join(sub, "app")
			testutil.Link(t, "gcc", exe, drv, inst, rt, "-lpthread")
			out, vpt := runTraced(t, exe)
			if f := strings.Fields(strings.SplitN(string(out), "\n", 2)[0]); len(f) != 3 || f[0] != "sw" || f[1] != f[2] {
				t.Fatalf("sw_fill and its C sum differ: %s", out)
			}
			want := printedKinds(out)
			got, err := tracedPages(vpt, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("pages traced %v, want %v", hexKeys(got), hexKeys(want))
			}
		})
	}
}

// tracedPages reads the pages of a trace's events (RAW chunks, kinds from
// the sites of its OBJECT chunks) and aggregates (AGG, AGGC) and their
// kinds ("R", "W", "RW"), failing once there are more than max: unlike
// trace.Load it does not hold a wrong trace's millions of pages.
func tracedPages(path string, max int) (map[uint64]string, error) {
	r, err := trace.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	pages := map[uint64]*trace.Page{}
	var objs []*trace.Object
	add := func(page, reads, writes uint64) error {
		pg := pages[page]
		if pg == nil {
			if len(pages) == max {
				return fmt.Errorf("%s: more than %d pages (%#x...)", path, max, page<<12)
			}
			pg = &trace.Page{}
			pages[page] = pg
		}
		pg.Reads += reads
		pg.Writes += writes
		return nil
	}
	for {
		c, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		x, err := c.Decode()
		if err != nil {
			return nil, err
		}
		switch x := x.(type) {
		case *trace.Object:
			objs = append(objs, x)
		case *trace.Raw:
			for _, e := range x.Events {
				var kind trace.Kind
				for _, o := range objs {
					if k := (e.Site - o.SitesAddr) / 32; e.Site >= o.SitesAddr && k < uint64(len(o.Sites)) {
						kind = o.Sites[k].Kind
					}
				}
				var rd, wr uint64
				if kind&trace.KindRead != 0 {
					rd = 1
				}
				if kind&trace.KindWrite != 0 {
					wr = 1
				}
				if err := add(e.Page1-1, rd, wr); err != nil {
					return nil, err
				}
			}
		case *trace.Agg:
			for _, p := range x.Pages {
				if err := add(p.Page, p.Reads, p.Writes); err != nil {
					return nil, err
				}
			}
		}
	}
	got := map[uint64]string{}
	for p, pg := range pages {
		got[p] = kindsOf(pg)
	}
	return got, nil
}

// hexKeys lists a page map as "0x...: KINDS" for messages.
func hexKeys(m map[uint64]string) []string {
	var out []string
	for p, k := range m {
		out = append(out, fmt.Sprintf("%#x: %s", p<<12, k))
	}
	return out
}

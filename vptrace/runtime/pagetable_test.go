package main

import (
	"slices"
	"testing"

	"hijack/vptrace/trace"
)

// TestPageTableOrder: pages come out in page order, whatever the table's
// slots, and all of them when a key is too large to pack with its slot.
func TestPageTableOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pages []uint64
	}{
		{"empty", nil},
		{"scattered", []uint64{0x7f00_0123_4000 >> 12, 5, 0x5555_0000_1000 >> 12, 64, 63, 1<<35 - 1, 0x7f00_0123_3000 >> 12}},
		{"a sweep", func() []uint64 {
			var p []uint64
			for i := uint64(0); i < 5000; i++ {
				p = append(p, 0x7fff_0000_0000>>12+i*3)
			}
			return p
		}()},
		{"a key too large to pack", []uint64{9, 1 << 40, 3}}, // (not a user address)
	} {
		var pt pageTable
		pt.reset()
		for _, p := range tc.pages {
			pt.get(p+1).events++
		}
		var got []uint64
		ps, _ := pt.pages(nil, nil)
		for _, a := range ps {
			got = append(got, a.Page)
		}
		want := slices.Clone(tc.pages)
		slices.Sort(want)
		if tc.name == "a key too large to pack" {
			slices.Sort(got) // table order: the writer sorts
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: pages %x, want %x", tc.name, got, want)
		}
	}
}

// BenchmarkIntervalPages measures what the consumer does per thread and
// interval before writing an aggregate: the pages out of the table and in
// page order (trace.SortAgg), for 40000 pages (a working set recorded
// again every interval). "table-order" is the aggregates copied out in
// slot order and sorted by SortAgg alone.
func BenchmarkIntervalPages(b *testing.B) {
	var pt pageTable
	pt.reset()
	for i := uint64(0); i < 40000; i++ {
		pt.get(0x7f00_0000_0000>>12+i*7919%100000+1).events++
	}
	buf := make([]trace.PageAgg, 0, pt.n)
	var arena []trace.SiteCount
	b.Run("page-order", func(b *testing.B) {
		for b.Loop() {
			a := &trace.Agg{}
			a.Pages, arena = pt.pages(buf[:0], arena)
			trace.SortAgg(a)
		}
	})
	b.Run("table-order", func(b *testing.B) {
		for b.Loop() {
			a := &trace.Agg{Pages: buf[:0]}
			for k, key := range pt.keys {
				if key != 0 {
					s := &pt.vals[k]
					a.Pages = append(a.Pages, trace.PageAgg{Page: key - 1, Events: s.events, Sites: []trace.SiteCount{{Site: s.site0, Count: s.count0}}})
				}
			}
			trace.SortAgg(a)
		}
	})
}

package main

import (
	"math/rand/v2"
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
			pt.addSite(pt.get(p+1), 0x1000)
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
		pt.addSite(pt.get(0x7f00_0000_0000>>12+i*7919%100000+1), 0x1000)
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
			for k := range pt.slots {
				if s := &pt.slots[k]; s.gen == pt.gen {
					a.Pages = append(a.Pages, trace.PageAgg{Page: s.key - 1, Events: s.count0, Sites: []trace.SiteCount{{Site: s.site0, Count: s.count0}}})
				}
			}
			trace.SortAgg(a)
		}
	})
}

// TestPageTableOracle: what the table says of each page (events, sites and
// their counts, in page order) is what a map of the same events says,
// over intervals (reset, and shrinking after a large one), tables that
// grow while pages have lists of sites, and lists that outgrow their
// first size (up to 40 sites a page). pages again, after the writer
// sorted what the first call returned (trace.SortAgg), says the same.
func TestPageTableOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var pt pageTable
	pt.reset()
	for interval, c := range []struct {
		pages, events int
		maxSites      uint64
	}{{10, 100, 1}, {3000, 20000, 3}, {50, 5000, 40}, {20000, 60000, 6}, {5, 10, 2}, {1, 1, 1}, {0, 0, 1}, {700, 30000, 17}} {
		want := map[uint64]map[uint64]uint64{} // page: site: count
		events := map[uint64]uint64{}
		for range c.events {
			page := 0x7f00_0000_0000>>12 + uint64(rng.IntN(max(c.pages, 1)))*uint64(1+interval%3)
			site := 0x1000 + 32*rng.Uint64N(c.maxSites)
			pt.addSite(pt.get(page+1), site)
			if want[page] == nil {
				want[page] = map[uint64]uint64{}
			}
			want[page][site]++
			events[page]++
		}
		check := func(when string) {
			ps, _ := pt.pages(nil, nil)
			if len(ps) != len(events) {
				t.Fatalf("interval %d, %s: %d pages, want %d", interval, when, len(ps), len(events))
			}
			for i, a := range ps {
				if i > 0 && ps[i-1].Page >= a.Page {
					t.Fatalf("interval %d, %s: page %#x after %#x", interval, when, a.Page, ps[i-1].Page)
				}
				if a.Events != events[a.Page] {
					t.Errorf("interval %d, %s: page %#x: %d events, want %d", interval, when, a.Page, a.Events, events[a.Page])
				}
				seen := map[uint64]bool{}
				for _, s := range a.Sites {
					if w := want[a.Page][s.Site]; seen[s.Site] || s.Count != w || w == 0 {
						t.Errorf("interval %d, %s: page %#x: site %#x count %d, want %d once", interval, when, a.Page, s.Site, s.Count, w)
					}
					seen[s.Site] = true
				}
				if len(seen) != len(want[a.Page]) {
					t.Errorf("interval %d, %s: page %#x: %d sites, want %d", interval, when, a.Page, len(seen), len(want[a.Page]))
				}
			}
			trace.SortAgg(&trace.Agg{Pages: ps})
		}
		check("first")
		check("after the writer's sort")
		pt.reset()
	}
}

// TestSortPacked: the radix sort of packed keys orders them as
// slices.Sort does, for sizes around its threshold and keys spread over
// every digit, a few ranges (digits all keys share: skipped passes) or
// one page group.
func TestSortPacked(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, radixMin - 1, radixMin, radixMin + 1, 70000} {
		for _, spread := range []struct {
			name string
			key  func(i int) uint64
		}{
			{"any", func(int) uint64 { return 1 + rng.Uint64N(1<<(64-slotBits)-1) }},
			{"ranges", func(i int) uint64 {
				return []uint64{0x5555_5555_4000 >> 12, 0x7f12_3456_7000 >> 12, 0x7ffd_0000_0000 >> 12}[i%3] + uint64(i)
			}},
			{"one digit", func(i int) uint64 { return 0x7f00_0000_0000>>12 + uint64(i%4096) }},
		} {
			var pt pageTable
			seen := map[uint64]bool{}
			for i := 0; len(pt.packed) < n; i++ {
				k := spread.key(i)
				if !seen[k] {
					seen[k] = true
					pt.packed = append(pt.packed, k<<slotBits|uint64(rng.IntN(1<<slotBits)))
				}
				if len(seen) == 4096 && spread.name == "one digit" {
					break
				}
			}
			want := slices.Clone(pt.packed)
			slices.Sort(want)
			if got := pt.sortPacked(); !slices.Equal(got, want) {
				t.Errorf("%d keys, %s: not in order", len(want), spread.name)
			}
		}
	}
}

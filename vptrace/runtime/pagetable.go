package main

import (
	"slices"

	"hijack/vptrace/trace"
)

// pageVal is one page's aggregate for the current interval.
type pageVal struct {
	events, reads, writes uint64
	first, last           uint64
	site0, count0         uint64 // the first site, inline
	more                  int32  // index+1 in pageTable.more: further sites
}

// pageTable is an open-addressing hash table (linear probing, load <= 1/2)
// of page aggregates: keys (page number + 1, 0 = empty) apart from values so
// that probing reads 8 keys per cache line, and emptying it for the next
// interval clears only the keys. The slot of a page is hash(page/64)*64 +
// page%64: the pages of an aligned group of 64 sit in consecutive slots, so
// sweeps stay cache-friendly, and groups are spread by a multiplicative
// hash.
type pageTable struct {
	keys []uint64
	vals []pageVal
	n    int
	more [][]trace.SiteCount
}

const (
	minTableSlots = 64
	groupShift    = 6 // 64-page groups: best for sweeps and strides (BenchmarkAggregate)
)

func (t *pageTable) slot(page1 uint64) uint64 {
	mask := uint64(len(t.keys) - 1)
	g := (page1 >> groupShift) * 0x9E3779B97F4A7C15
	return ((g>>32)<<groupShift | page1&(1<<groupShift-1)) & mask
}

// get returns the aggregate of page1 (page number + 1), adding it (zero).
func (t *pageTable) get(page1 uint64) *pageVal {
	if (t.n+1)*2 > len(t.keys) {
		t.grow()
	}
	mask := uint64(len(t.keys) - 1)
	for i := t.slot(page1); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case page1:
			return &t.vals[i]
		case 0:
			t.keys[i] = page1
			t.vals[i] = pageVal{}
			t.n++
			return &t.vals[i]
		}
	}
}

// full reports whether the next get of a new page grows the table (and
// moves the values).
func (t *pageTable) full() bool { return (t.n+1)*2 > len(t.keys) }

func (t *pageTable) grow() {
	ok, ov := t.keys, t.vals
	n := max(minTableSlots, 2*len(ok))
	t.keys, t.vals = make([]uint64, n), make([]pageVal, n)
	mask := uint64(n - 1)
	for k, key := range ok {
		if key == 0 {
			continue
		}
		for i := t.slot(key); ; i = (i + 1) & mask {
			if t.keys[i] == 0 {
				t.keys[i], t.vals[i] = key, ov[k]
				break
			}
		}
	}
}

// addSite counts one event of site on p.
func (t *pageTable) addSite(p *pageVal, site uint64) {
	switch {
	case p.site0 == site:
		p.count0++
		return
	case p.site0 == 0:
		p.site0, p.count0 = site, 1
		return
	}
	if p.more == 0 {
		t.more = append(t.more, nil)
		p.more = int32(len(t.more))
	}
	list := t.more[p.more-1]
	for j := range list {
		if list[j].Site == site {
			list[j].Count++
			return
		}
	}
	t.more[p.more-1] = append(list, trace.SiteCount{Site: site, Count: 1})
}

// reset empties the table for the next interval, shrinking it when it was
// mostly empty.
func (t *pageTable) reset() {
	if len(t.keys) > 4*minTableSlots && t.n*8 < len(t.keys) {
		n := max(minTableSlots, len(t.keys)/4)
		t.keys, t.vals = make([]uint64, n), make([]pageVal, n)
	} else {
		clear(t.keys)
	}
	t.n = 0
	clear(t.more)
	t.more = t.more[:0]
}

// pages appends the table's aggregates as trace.PageAgg to dst, their
// sites in arena (reused: one allocation per interval, not one per page;
// the aggregates are valid until the next call).
func (t *pageTable) pages(dst []trace.PageAgg, arena []trace.SiteCount) ([]trace.PageAgg, []trace.SiteCount) {
	nsites := t.n
	for _, m := range t.more {
		nsites += len(m)
	}
	if cap(arena) < nsites {
		arena = make([]trace.SiteCount, 0, nsites)
	}
	arena = arena[:0]
	for _, k := range t.order() {
		s := &t.vals[k]
		i := len(arena)
		arena = append(arena, trace.SiteCount{Site: s.site0, Count: s.count0})
		if s.more != 0 {
			arena = append(arena, t.more[s.more-1]...)
		}
		dst = append(dst, trace.PageAgg{
			Page: t.keys[k] - 1, Events: s.events, Reads: s.reads, Writes: s.writes,
			First: s.first, Last: s.last, Sites: arena[i:len(arena):len(arena)],
		})
	}
	return dst, arena
}

// order returns the slots of the table's pages in page order (the trace
// wants it; its writer's sort then finds them sorted): each key packed
// with its slot in one word sorts without a comparison function, far
// faster than the aggregates would. Keys (page+1 < 2^37 for user
// addresses) or tables too large to pack give table order; the writer
// sorts.
func (t *pageTable) order() []int {
	const slotBits = 26
	packed := make([]uint64, 0, t.n)
	for k, key := range t.keys {
		if key == 0 {
			continue
		}
		if key>>(64-slotBits) != 0 || len(t.keys) > 1<<slotBits {
			packed = nil
			break
		}
		packed = append(packed, key<<slotBits|uint64(k))
	}
	order := make([]int, 0, t.n)
	if packed == nil {
		for k, key := range t.keys {
			if key != 0 {
				order = append(order, k)
			}
		}
		return order
	}
	slices.Sort(packed)
	for _, p := range packed {
		order = append(order, int(p&(1<<slotBits-1)))
	}
	return order
}

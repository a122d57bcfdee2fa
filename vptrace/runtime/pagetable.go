package main

import (
	"slices"

	"hijack/vptrace/trace"
)

// pageEntry is one slot of a pageTable: a page's key and its aggregate for
// the current interval, in one 64-byte cache line, so that finding a page
// (the probe reads the key) also brings in what the event updates. An
// interval has mostly new pages (zstd's zstreamtest: 2.5 events per page
// and interval), so the aggregation runs at the speed of these misses: a
// key array apart from the values cost two a page.
type pageEntry struct {
	key           uint64 // page number + 1 (the slot is empty unless gen is the table's)
	reads, writes uint64
	first, last   uint64
	// site0 is the first site of the page, counted inline (count0);
	// further sites are in a list of the table's site arena (more).
	site0, count0 uint64
	// more is 1 + the index in pageTable.sites of the page's list of
	// sites (a header, then the sites, site0's first), or 0. A page's
	// events are count0 plus the list's other counts.
	more uint32
	// gen is the table's generation when the entry was made: an entry of
	// another is an empty slot (emptying the table for the next interval
	// is a new generation, not a memory clear).
	gen uint32
}

// pageTable is an open-addressing hash table (linear probing, load <= 1/2)
// of page aggregates. The slot of a page is hash(page/64)*64 + page%64:
// the pages of an aligned group of 64 sit in consecutive slots, so sweeps
// stay cache-friendly, and groups are spread by a multiplicative hash.
//
// The sites of pages with more than one are lists in one arena (sites),
// emptied with the table: no allocation per page. A list is a header
// ({Site: sites used, Count: capacity}) and its capacity of entries, the
// first for site0 (whose count the entry keeps); a full list moves to the
// arena's end at twice the size.
type pageTable struct {
	slots []pageEntry
	gen   uint32 // of the entries in the table (never 0: zeroed slots are empty)
	n     int
	// packed lists the table's pages as key<<slotBits | slot, as they
	// came: order sorts it. nil (and packOK false) once a key or the
	// table is too large to pack: order then scans the slots.
	packed []uint64
	packOK bool
	sites  []trace.SiteCount
	sink   uint64 // (touch)
	// sortPacked's counts and buffer, reused
	counts *[radixPasses][1 << radixBits]uint32
	radix  []uint64
}

const (
	minTableSlots = 64
	groupShift    = 6 // 64-page groups: best for sweeps and strides (BenchmarkAggregate)
	firstListCap  = 4 // sites of a list when a page gets its second (few pages have more)
	slotBits      = 26
)

func (t *pageTable) slot(page1 uint64) uint64 {
	mask := uint64(len(t.slots) - 1)
	g := (page1 >> groupShift) * 0x9E3779B97F4A7C15
	return ((g>>32)<<groupShift | page1&(1<<groupShift-1)) & mask
}

// get returns the aggregate of page1 (page number + 1), adding it (zero
// but its key).
func (t *pageTable) get(page1 uint64) *pageEntry {
	if (t.n+1)*2 > len(t.slots) {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.slot(page1); ; i = (i + 1) & mask {
		e := &t.slots[i]
		if e.gen != t.gen {
			*e = pageEntry{key: page1, gen: t.gen}
			t.n++
			t.pack(page1, i)
			return e
		}
		if e.key == page1 {
			return e
		}
	}
}

// pack adds the page in slot i to t.packed.
func (t *pageTable) pack(page1, i uint64) {
	if !t.packOK {
		return
	}
	if page1>>(64-slotBits) != 0 || len(t.slots) > 1<<slotBits {
		t.packed, t.packOK = nil, false
		return
	}
	t.packed = append(t.packed, page1<<slotBits|i)
}

// aggBatch is how many events (or pages) the aggregation reads the table
// ahead for (pageTable.touch, touchLists).
const aggBatch = 16

// touch reads the slots where the pages of evs start their probes, all
// before any is needed: the loads do not depend on one another, so the
// CPU has their cache misses in flight together, not one an event (the
// table is larger than the caches: an interval of zstd's zstreamtest has
// 80000 pages). What it reads is returned to nobody (t.sink keeps the
// compiler from dropping the loads). The caller touches one batch ahead
// and calls touchLists for the batch it is about to use.
func (t *pageTable) touch(evs []event) {
	if len(t.slots) == 0 {
		return
	}
	var x uint64
	for i := range evs {
		x += t.slots[t.slot(evs[i].Page1)].key
	}
	t.sink += x
}

// touchLists reads, as touch the slots, the site lists of those pages of
// evs already in the table at their first slot (their slots were touched
// a batch before: these loads depend on them).
func (t *pageTable) touchLists(evs []event) {
	if len(t.slots) == 0 {
		return
	}
	var x uint64
	for i := range evs {
		if e := &t.slots[t.slot(evs[i].Page1)]; e.gen == t.gen && e.more != 0 && e.key == evs[i].Page1 {
			x += t.sites[e.more-1].Site
		}
	}
	t.sink += x
}

// full reports whether the next get of a new page grows the table (and
// moves the entries).
func (t *pageTable) full() bool { return (t.n+1)*2 > len(t.slots) }

func (t *pageTable) grow() {
	old, gen := t.slots, t.gen
	n := max(minTableSlots, 2*len(old))
	t.slots = make([]pageEntry, n)
	if t.gen == 0 {
		t.gen = 1 // (a new table)
	}
	t.packed, t.packOK = t.packed[:0], true // (the slots change: packed again)
	mask := uint64(n - 1)
	for k := range old {
		if old[k].gen != gen {
			continue
		}
		for i := t.slot(old[k].key); ; i = (i + 1) & mask {
			if t.slots[i].gen != t.gen {
				t.slots[i] = old[k]
				t.slots[i].gen = t.gen
				t.pack(old[k].key, i)
				break
			}
		}
	}
}

// addSite counts one event of site on p.
func (t *pageTable) addSite(p *pageEntry, site uint64) {
	switch {
	case p.site0 == site:
		p.count0++
		return
	case p.site0 == 0:
		p.site0, p.count0 = site, 1
		return
	}
	if p.more == 0 {
		h := len(t.sites)
		t.sites = append(t.sites, trace.SiteCount{Site: 2, Count: firstListCap}, trace.SiteCount{Site: p.site0}, trace.SiteCount{Site: site, Count: 1})
		t.sites = append(t.sites, make([]trace.SiteCount, firstListCap-2)...)
		p.more = uint32(h + 1)
		return
	}
	h := int(p.more - 1)
	used, capacity := int(t.sites[h].Site), int(t.sites[h].Count)
	list := t.sites[h+2 : h+1+used] // (after site0's)
	for j := range list {
		if list[j].Site == site {
			list[j].Count++
			return
		}
	}
	if used == capacity {
		// to the end, twice the size (the old list is left unused)
		nh := len(t.sites)
		t.sites = append(t.sites, trace.SiteCount{Site: uint64(used), Count: uint64(2 * capacity)})
		t.sites = append(t.sites, t.sites[h+1:h+1+used]...)
		t.sites = append(t.sites, make([]trace.SiteCount, capacity)...)
		h = nh
		p.more = uint32(h + 1)
	}
	t.sites[h+1+used] = trace.SiteCount{Site: site, Count: 1}
	t.sites[h].Site++
}

// reset empties the table for the next interval, shrinking it when it was
// mostly empty.
func (t *pageTable) reset() {
	if len(t.slots) > 4*minTableSlots && t.n*8 < len(t.slots) {
		t.slots = make([]pageEntry, max(minTableSlots, len(t.slots)/4))
	}
	if t.gen++; t.gen == 0 { // (after 2^32 intervals)
		clear(t.slots)
		t.gen = 1
	}
	t.n = 0
	t.packed, t.packOK = t.packed[:0], true
	if cap(t.sites) > 1<<20 && len(t.sites)*8 < cap(t.sites) {
		t.sites = nil // a burst: do not keep its memory
	}
	t.sites = t.sites[:0]
}

// pages appends the table's aggregates as trace.PageAgg to dst, their
// sites copied into arena in page order (reused: one allocation per
// interval, not one per page; the writer then reads them in order, which
// costs it a third of reading them where the table keeps them; the
// aggregates are valid until the next call).
func (t *pageTable) pages(dst []trace.PageAgg, arena []trace.SiteCount) ([]trace.PageAgg, []trace.SiteCount) {
	nsites := t.n + len(t.sites) // (at least: lists hold their headers and room)
	if cap(arena) < nsites {
		arena = make([]trace.SiteCount, 0, nsites)
	}
	arena = arena[:0]
	order := t.order()
	t.touchOrdered(order[:min(aggBatch, len(order))], false)
	for j, k := range order {
		if j%aggBatch == 0 { // (as in aggregate: a batch's misses together)
			t.touchOrdered(order[min(j+aggBatch, len(order)):min(j+2*aggBatch, len(order))], false)
			t.touchOrdered(order[j:min(j+aggBatch, len(order))], true)
		}
		s := &t.slots[k]
		i := len(arena)
		events := s.count0
		if s.more == 0 {
			arena = append(arena, trace.SiteCount{Site: s.site0, Count: s.count0})
		} else {
			h := int(s.more - 1)
			arena = append(arena, t.sites[h+1:h+1+int(t.sites[h].Site)]...)
			arena[i].Count = s.count0 // (site0's, counted in the entry)
			for _, c := range arena[i+1:] {
				events += c.Count
			}
		}
		dst = append(dst, trace.PageAgg{
			Page: s.key - 1, Events: events, Reads: s.reads, Writes: s.writes,
			First: s.first, Last: s.last, Sites: arena[i:len(arena):len(arena)],
		})
	}
	return dst, arena
}

// touchOrdered is touch (lists false) and touchLists (true) for pages
// by their slots.
func (t *pageTable) touchOrdered(slots []int, lists bool) {
	var x uint64
	for _, k := range slots {
		if e := &t.slots[k]; !lists {
			x += e.key
		} else if e.more != 0 {
			x += t.sites[e.more-1].Site
		}
	}
	t.sink += x
}

// order returns the slots of the table's pages in page order (the trace
// wants it; its writer's sort then finds them sorted): each key packed
// with its slot in one word (t.packed) sorts without a comparison
// function, far faster than the aggregates would. Keys (page+1 < 2^37 for
// user addresses) or tables too large to pack give table order; the writer
// sorts.
func (t *pageTable) order() []int {
	order := make([]int, 0, t.n)
	if !t.packOK {
		for k := range t.slots {
			if t.slots[k].gen == t.gen {
				order = append(order, k)
			}
		}
		return order
	}
	for _, p := range t.sortPacked() {
		order = append(order, int(p&(1<<slotBits-1)))
	}
	return order
}

// Radix sort of t.packed: keys below 2^(64-slotBits) in radixPasses
// digits of radixBits.
const (
	radixBits   = 13
	radixPasses = (64 - slotBits + radixBits - 1) / radixBits
	radixMin    = 2048 // fewer: slices.Sort (the counts cost more)
)

// sortPacked returns t.packed sorted by key (its slot bits do not matter:
// keys are distinct), in t.packed or in t.radix: an LSD radix sort for the
// tens of thousands of pages of an interval of a program that records
// many (slices.Sort was 8% of the replayed zstreamtest's aggregation
// profile), which skips the digits all keys share (a program's pages are
// a few ranges).
func (t *pageTable) sortPacked() []uint64 {
	a := t.packed
	if len(a) < radixMin {
		slices.Sort(a)
		return a
	}
	if t.counts == nil {
		t.counts = new([radixPasses][1 << radixBits]uint32)
	}
	c := t.counts
	*c = [radixPasses][1 << radixBits]uint32{}
	for _, p := range a {
		k := p >> slotBits
		for d := range radixPasses {
			c[d][k>>(d*radixBits)&(1<<radixBits-1)]++
		}
	}
	t.radix = slices.Grow(t.radix[:0], len(a))[:len(a)]
	src, dst := a, t.radix
	for d := range radixPasses {
		cd := &c[d]
		if cd[(src[0]>>slotBits)>>(d*radixBits)&(1<<radixBits-1)] == uint32(len(src)) {
			continue // every key has this digit
		}
		var sum uint32
		for i := range cd {
			sum, cd[i] = sum+cd[i], sum
		}
		for _, p := range src {
			b := (p >> slotBits) >> (d * radixBits) & (1<<radixBits - 1)
			dst[cd[b]] = p
			cd[b]++
		}
		src, dst = dst, src
	}
	return src
}

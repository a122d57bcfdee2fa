package trace

import (
	"cmp"
	"slices"
	"sort"
)

// RegionKind says what a Region is.
type RegionKind uint8

// Region kinds, in the order a page's owner is chosen among regions that
// cover it at the same time: a heap block inside a mapping the program
// made (a custom allocator's arena) is the block; a thread's TLS block
// inside its stack mapping is TLS.
const (
	RegionHeap  RegionKind = 1 + iota // a block from malloc, new, ... (Alloc, Site)
	RegionTLS                         // a thread's TLS block (TID)
	RegionStack                       // a thread's stack (TID)
	RegionMmap                        // a mapping the program made with mmap (Alloc, Site; Path if a file)
)

func (k RegionKind) String() string {
	switch k {
	case RegionHeap:
		return "heap"
	case RegionTLS:
		return "tls"
	case RegionStack:
		return "stack"
	case RegionMmap:
		return "mmap"
	}
	return "unknown"
}

// Alive is Region.Died of a region still alive at the end of the trace.
const Alive = ^uint64(0)

// Region is memory with an owner and a lifetime: a heap block an
// allocation returned, a mapping the program made, a thread's stack or TLS
// block. Regions come from the ALLOCS chunks and the THREAD chunks'
// ranges (format 1.3).
type Region struct {
	Kind       RegionKind
	Start, End uint64 // [Start, End)
	Born, Died uint64 // ns since start; Died is Alive if never released
	Alloc      AllocKind
	Site       uint64 // return address of the allocating call (heap, mmap)
	TID        uint32 // the allocating thread (heap, mmap); the owner (stack, tls)
	Flags      uint16 // AllocFile, AllocShared (mmap)
	Path       string // mmap of a file

	id int // index in Trace.Regions
}

// Bytes is the region's size.
func (r *Region) Bytes() uint64 { return r.End - r.Start }

// overlap is how many bytes of page pg the region covers.
func (r *Region) overlap(pg uint64) uint64 {
	lo, hi := max(r.Start, pg<<PageShift), min(r.End, (pg+1)<<PageShift)
	if hi <= lo {
		return 0
	}
	return hi - lo
}

// regionIndex answers "which region owned page P at time T".
type regionIndex struct {
	small  map[uint64][]int32 // page -> regions of at most smallPages pages
	large  []int32            // the others, ascending Start
	maxEnd []uint64           // maxEnd[i]: the largest End of large[:i+1]
	all    []*Region
	lost   uint64 // allocation events the runtime lost
}

const smallPages = 64

func newRegionIndex(rs []*Region) *regionIndex {
	x := &regionIndex{small: map[uint64][]int32{}, all: rs}
	for i, r := range rs {
		if r.End <= r.Start {
			continue
		}
		first, last := r.Start>>PageShift, (r.End-1)>>PageShift
		if last-first < smallPages {
			for p := first; p <= last; p++ {
				x.small[p] = append(x.small[p], int32(i))
			}
			continue
		}
		x.large = append(x.large, int32(i))
	}
	slices.SortFunc(x.large, func(a, b int32) int { return cmp.Compare(rs[a].Start, rs[b].Start) })
	x.maxEnd = make([]uint64, len(x.large))
	var m uint64
	for i, k := range x.large {
		m = max(m, rs[k].End)
		x.maxEnd[i] = m
	}
	return x
}

// at returns the region that owned page pg at time t, or nil: among the
// regions covering the page and alive at t (born at or before t, released
// after it) the first by kind (RegionKind order), then the one covering
// most of the page, then the latest born. When none is alive strictly, a
// region released at t itself qualifies (times have the clock's
// resolution: an access and the release may share a tick).
func (x *regionIndex) at(pg, t uint64) *Region {
	if x == nil {
		return nil
	}
	var best, tie *Region
	consider := func(r *Region) {
		if r.Born > t || r.Died < t {
			return
		}
		if r.Died == t {
			if better(r, tie, pg) {
				tie = r
			}
			return
		}
		if better(r, best, pg) {
			best = r
		}
	}
	for _, k := range x.small[pg] {
		consider(x.all[k])
	}
	addr := pg << PageShift
	// large regions starting before the page's end, walking back while
	// some region at or before them may still reach the page
	i := sort.Search(len(x.large), func(i int) bool { return x.all[x.large[i]].Start > addr+PageSize-1 }) - 1
	for ; i >= 0 && x.maxEnd[i] > addr; i-- {
		if r := x.all[x.large[i]]; r.End > addr {
			consider(r)
		}
	}
	if best == nil {
		return tie
	}
	return best
}

func better(r, than *Region, pg uint64) bool {
	if than == nil {
		return true
	}
	if r.Kind != than.Kind {
		return r.Kind < than.Kind
	}
	if a, b := r.overlap(pg), than.overlap(pg); a != b {
		return a > b
	}
	return r.Born > than.Born || (r.Born == than.Born && r.id > than.id)
}

// regionBuilder turns allocation events (in Seq order) and thread ranges
// into regions.
type regionBuilder struct {
	events  []AllocEvent
	tids    []uint32 // the thread of events[i]
	threads []threadMem
	// lost allocation events: each thread's ALLOCS carry a cumulative
	// count, first under serial 0 (no event yet), then under its serial.
	// By tid, the largest count of the thread alive under it (open),
	// added to lost when its last chunk (FlagExit) ends it: a tid the
	// kernel reuses starts again.
	open  map[uint32]uint64
	lost  uint64
	exits map[uint64]uint64 // thread exit times by serial
	// inherited: a fork child's copies of its parent's heap blocks and
	// mappings alive at the fork (Born: the fork time)
	inherited []*Region
}

// inherit seeds a fork child's regions with its parent's heap blocks and
// mappings alive at the fork (time forked, the child's file open time:
// parent and child share the clock).
func (rb *regionBuilder) inherit(parent []*Region, forked uint64) {
	for _, r := range parent {
		if (r.Kind == RegionHeap || r.Kind == RegionMmap) && r.Born <= forked && r.Died > forked {
			c := *r
			c.Born, c.Died = min(r.Born, forked), Alive
			rb.inherited = append(rb.inherited, &c)
		}
	}
}

type threadMem struct {
	serial uint64
	tid    uint32
	start  uint64
	stack  Range
	tls    []Range
}

func (rb *regionBuilder) allocs(a *Allocs) {
	for _, e := range a.Events {
		rb.events = append(rb.events, e)
		rb.tids = append(rb.tids, a.TID)
	}
	if rb.open == nil {
		rb.open = map[uint32]uint64{}
	}
	n := max(rb.open[a.TID], a.Lost)
	if a.Flags&FlagExit != 0 {
		rb.lost += n
		delete(rb.open, a.TID)
	} else {
		rb.open[a.TID] = n
	}
}

func (rb *regionBuilder) thread(t *ThreadStart) {
	if t.Stack == (Range{}) && len(t.TLS) == 0 {
		return
	}
	rb.threads = append(rb.threads, threadMem{serial: t.Serial, tid: t.TID, start: t.Time, stack: t.Stack, tls: t.TLS})
}

func (rb *regionBuilder) exit(t *ThreadExit) {
	if rb.exits == nil {
		rb.exits = map[uint64]uint64{}
	}
	rb.exits[t.Serial] = max(rb.exits[t.Serial], t.Time)
}

// empty reports whether there is nothing to build regions from.
func (rb *regionBuilder) empty() bool {
	return len(rb.events) == 0 && len(rb.threads) == 0 && len(rb.inherited) == 0
}

// build returns the regions and the number of allocation events the
// runtime lost.
func (rb *regionBuilder) build() ([]*Region, uint64) {
	exits := rb.exits
	var out []*Region
	add := func(r *Region) *Region {
		r.id = len(out)
		out = append(out, r)
		return r
	}
	for _, tm := range rb.threads {
		died := Alive
		if t, ok := exits[tm.serial]; ok {
			died = t
		}
		if tm.stack.Hi > tm.stack.Lo {
			add(&Region{Kind: RegionStack, Start: tm.stack.Lo, End: tm.stack.Hi, Born: tm.start, Died: died, TID: tm.tid})
		}
		for _, r := range tm.tls {
			if r.Hi > r.Lo {
				add(&Region{Kind: RegionTLS, Start: r.Lo, End: r.Hi, Born: tm.start, Died: died, TID: tm.tid})
			}
		}
	}
	// the events in process order
	idx := make([]int, len(rb.events))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return rb.events[idx[a]].Seq < rb.events[idx[b]].Seq })
	live := map[uint64]*Region{} // heap blocks by address
	var maps []*Region           // live mappings
	for _, r := range rb.inherited {
		add(r)
		if r.Kind == RegionHeap {
			live[r.Start] = r
		} else {
			maps = append(maps, r)
		}
	}
	unmap := func(lo, hi, t uint64) {
		keep := maps[:0]
		var split []*Region
		for _, r := range maps {
			if r.End <= lo || r.Start >= hi {
				keep = append(keep, r)
				continue
			}
			r.Died = t
			// what the release left of it lives on as a region of its own
			for _, part := range []Range{{r.Start, min(lo, r.End)}, {max(hi, r.Start), r.End}} {
				if part.Hi > part.Lo {
					n := *r
					n.Start, n.End, n.Born, n.Died = part.Lo, part.Hi, t, Alive
					split = append(split, &n)
				}
			}
		}
		maps = keep
		for _, n := range split {
			maps = append(maps, add(n))
		}
	}
	for _, i := range idx {
		e := rb.events[i]
		tid := rb.tids[i]
		switch {
		case e.Kind == AllocMmap:
			if e.Flags&AllocFixed != 0 {
				unmap(e.Addr, e.Addr+pageRound(e.Size), e.Time)
			}
			maps = append(maps, add(&Region{Kind: RegionMmap, Start: e.Addr, End: e.Addr + pageRound(e.Size),
				Born: e.Time, Died: Alive, Alloc: e.Kind, Site: e.Site, TID: tid, Flags: e.Flags, Path: e.Path}))
		case e.Kind == AllocMunmap:
			unmap(e.Addr, e.Addr+pageRound(e.Size), e.Time)
		case e.Kind == AllocMremap:
			var old *Region
			for _, r := range maps {
				if r.Start == e.Old {
					old = r
					break
				}
			}
			if old == nil {
				continue
			}
			unmap(old.Start, old.End, e.Time)
			n := *old
			n.Start, n.End, n.Born, n.Died = e.Addr, e.Addr+pageRound(e.Size), e.Time, Alive
			maps = append(maps, add(&n))
		case e.Kind.Releases():
			if r := live[e.Addr]; r != nil {
				r.Died = e.Time
				delete(live, e.Addr)
			}
		default: // allocations, realloc
			if e.Kind.Moves() && e.Old != 0 {
				if r := live[e.Old]; r != nil {
					r.Died = e.Time
					delete(live, e.Old)
				}
			}
			if e.Addr == 0 {
				continue // realloc(p, 0) freed p
			}
			if r := live[e.Addr]; r != nil { // a release we did not see
				r.Died = e.Time
			}
			live[e.Addr] = add(&Region{Kind: RegionHeap, Start: e.Addr, End: e.Addr + max(e.Size, 1),
				Born: e.Time, Died: Alive, Alloc: e.Kind, Site: e.Site, TID: tid})
		}
	}
	lost := rb.lost
	for _, n := range rb.open {
		lost += n
	}
	return out, lost
}

func pageRound(n uint64) uint64 { return (n + PageSize - 1) &^ (PageSize - 1) }

package trace

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
)

// Trace is a whole trace file, aggregated: per thread, per page.
type Trace struct {
	Path    string
	Header  *Header
	Objects []*Object // ascending SitesAddr; duplicates removed
	Threads []*Thread // ascending TID
	Notes   []*Note   // in file order
	End     *End      // nil: the process did not finish (still running, killed, or a write failed)
	// Exec is the program this process image exec'd (End has EndExec),
	// "" if it did not.
	Exec string

	// WriteError: the runtime could not write some chunks (a STATUS
	// chunk or the End says so); WriteErrno is the first failure's errno
	// (0 if unknown).
	WriteError bool
	WriteErrno uint32

	// Reading problems: Truncated (the file ends inside a chunk),
	// Damaged regions and Skipped bytes, Errors (undecodable chunks).
	Truncated bool
	Damaged   int
	Skipped   int64
	Errors    []string

	// Chunks counts the chunks by type.
	Chunks map[ChunkType]int

	// BlockObjects are the objects of the blockcount preset (ascending
	// Reg); Thread.Blocks holds their counts.
	BlockObjects []*BlockObject

	// Regions are the heap blocks, mappings, stacks and TLS blocks the
	// allocation events and thread ranges describe (1.3), in the order
	// they were built; Page.Region and PagePart.Region point into it.
	// Maps are the MAPS snapshots in file order. AllocEvents counts the
	// allocation events read, AllocsLost those the runtime could not
	// record.
	Regions     []*Region
	Maps        []*Maps
	AllocEvents uint64
	AllocsLost  uint64

	byTID     map[uint32]*Thread
	blockObjs map[uint32]*BlockObject // by Reg
}

// Thread is everything one kernel thread id did. A TID the kernel reused
// for several threads during the run gathers them as Instances.
type Thread struct {
	TID       uint32
	Name      string // thread name at exit (the last instance's), or ""
	Instances []*Instance
	Pages     map[uint64]*Page // by page number (address >> 12)

	// Totals over Pages.
	Events, Reads, Writes uint64
	First, Last           uint64 // ns since start
	Drops                 uint64 // events the runtime had to drop

	// Blocks: executions of the blocks of blockcount objects (nonzero
	// counts only; nil without any), and their sum.
	Blocks     map[BlockID]uint64
	BlockExecs uint64
}

// Instance is one thread (one runtime serial) under a TID.
type Instance struct {
	Serial      uint64
	Start, Exit uint64 // ns since start
	Exited      bool
	Events      uint64 // as the runtime counted them at exit
	Drops       uint64
	Name        string
}

// Page is what one thread did to one page.
type Page struct {
	Page   uint64 // page number; the address is Page << 12
	Events uint64
	Reads  uint64 // events at read and read-modify-write sites
	Writes uint64 // events at write and read-modify-write sites
	First  uint64 // ns since start
	Last   uint64
	Sites  []SiteCount // ascending Site

	// Region is the page's owner (the region with most of its events;
	// nil: no region of the trace covered it). Parts splits the page's
	// events by owner when its owner changed over time (a block freed and
	// the page reused by another); nil when it had one or none.
	Region *Region
	Parts  []*PagePart

	raw []SiteCount // events from raw chunks: kinds resolved at the end
}

// PagePart is what a thread did to a page while one region owned it.
type PagePart struct {
	Region                *Region
	Events, Reads, Writes uint64
	First, Last           uint64
	Sites                 []SiteCount // ascending Site

	raw []SiteCount
}

func (p *Page) part(r *Region) *PagePart {
	for _, x := range p.Parts {
		if x.Region == r {
			return x
		}
	}
	x := &PagePart{Region: r, First: ^uint64(0)}
	p.Parts = append(p.Parts, x)
	return x
}

// Addr is the page's address.
func (p *Page) Addr() uint64 { return p.Page << PageShift }

// TopSite is the site with the most events on the page (0 if none).
func (p *Page) TopSite() uint64 {
	var best SiteCount
	for _, s := range p.Sites {
		if s.Count > best.Count || (s.Count == best.Count && s.Site < best.Site) {
			best = s
		}
	}
	return best.Site
}

// Thread returns the thread with the given TID, or nil.
func (t *Trace) Thread(tid uint32) *Thread { return t.byTID[tid] }

// SortedPages returns the thread's pages in ascending address order.
func (th *Thread) SortedPages() []*Page {
	ps := make([]*Page, 0, len(th.Pages))
	for _, p := range th.Pages {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Page < ps[j].Page })
	return ps
}

// WorkingSet is the number of bytes of the pages the thread touched.
func (th *Thread) WorkingSet() uint64 { return uint64(len(th.Pages)) * PageSize }

// Site is a resolved site address.
type Site struct {
	Addr   uint64
	Object *Object // nil: no object in the trace holds this address
	Index  int     // site index in Object
	SiteRec
	Function string // function name ("" if unknown)
	Symbol   string // variable name, "" if the site names none
}

// Known reports whether the site was found in an object.
func (s *Site) Known() bool { return s.Object != nil }

// Where is "function+0xOFF" (the instruction in the original object), or
// "?0xADDR" for an unknown site.
func (s *Site) Where() string {
	if s.Object == nil {
		return fmt.Sprintf("?%#x", s.Addr)
	}
	return fmt.Sprintf("%s+%#x", s.Function, s.InsnOff)
}

// Variable is "symbol+offset" (or "symbol"), or "" when the site names no
// variable.
func (s *Site) Variable() string {
	if s.Symbol == "" {
		return ""
	}
	if s.SymOff == 0 {
		return s.Symbol
	}
	return fmt.Sprintf("%s%+d", s.Symbol, s.SymOff)
}

// Site resolves a site address (from Page.Sites) through the object tables.
func (t *Trace) Site(addr uint64) Site {
	s := Site{Addr: addr, Index: -1}
	objs := t.Objects
	i := sort.Search(len(objs), func(i int) bool { return objs[i].SitesAddr > addr }) - 1
	if i < 0 {
		return s
	}
	o := objs[i]
	off := addr - o.SitesAddr
	if off%SiteRecSize != 0 || off/SiteRecSize >= uint64(len(o.Sites)) {
		return s
	}
	s.Object = o
	s.Index = int(off / SiteRecSize)
	s.SiteRec = o.Sites[s.Index]
	s.Function = o.Str(s.Func)
	if s.Sym != NoSym {
		s.Symbol = o.Str(s.Sym)
	}
	return s
}

// ---- building ----

type builder struct {
	t         *Trace
	instances map[uint64]*Instance // by serial
	tidOf     map[uint64]uint32
	objs      map[uint64]*Object // by Desc
	exec      string             // the program of the last NoteExec
	counts    map[blockKey]uint64

	rb  regionBuilder
	idx *regionIndex // regions known before the pages (Load's first pass), or nil
}

func newBuilder(h *Header) *builder {
	return &builder{
		t:         &Trace{Header: h, Chunks: map[ChunkType]int{}, byTID: map[uint32]*Thread{}, blockObjs: map[uint32]*BlockObject{}},
		instances: map[uint64]*Instance{},
		tidOf:     map[uint64]uint32{},
		objs:      map[uint64]*Object{},
	}
}

func (b *builder) thread(tid uint32) *Thread {
	th := b.t.byTID[tid]
	if th == nil {
		th = &Thread{TID: tid, Pages: map[uint64]*Page{}, First: ^uint64(0)}
		b.t.byTID[tid] = th
	}
	return th
}

// instance returns the instance of a thread serial, which its first chunk
// ties to a TID: a serial seen with another TID comes from another
// process (ErrMultiProcess).
func (b *builder) instance(serial uint64, tid uint32) (*Instance, error) {
	in := b.instances[serial]
	if in != nil && b.tidOf[serial] != tid {
		return nil, fmt.Errorf("%w (thread serial %d is TID %d and TID %d)", ErrMultiProcess, serial, b.tidOf[serial], tid)
	}
	if in == nil {
		in = &Instance{Serial: serial, Start: ^uint64(0)}
		b.instances[serial] = in
		b.tidOf[serial] = tid
		th := b.thread(tid)
		th.Instances = append(th.Instances, in)
	}
	return in, nil
}

func (th *Thread) page(n uint64) *Page {
	p := th.Pages[n]
	if p == nil {
		p = &Page{Page: n, First: ^uint64(0)}
		th.Pages[n] = p
	}
	return p
}

func addSite(list []SiteCount, site, n uint64) []SiteCount {
	for i := range list {
		if list[i].Site == site {
			list[i].Count += n
			return list
		}
	}
	return append(list, SiteCount{site, n})
}

// add adds a chunk to the trace. An undecodable chunk is an error the
// trace lists (Trace.Errors); a fatal one (ErrMultiProcess) is returned
// as fatal.
func (b *builder) add(c *Chunk) (err, fatal error) {
	b.t.Chunks[c.Type]++
	if c.Type == ChunkHeader && b.t.Header != nil {
		// NewReader took the first: this one starts another process's
		// trace (files concatenated)
		what := fmt.Sprintf("a second header at offset %d", c.Offset)
		if h, err := DecodeHeader(c.Payload); err == nil {
			what += fmt.Sprintf(": pid %d, after pid %d", h.PID, b.t.Header.PID)
		}
		return nil, fmt.Errorf("%w (%s)", ErrMultiProcess, what)
	}
	v, err := c.Decode()
	if err != nil {
		return err, nil
	}
	switch x := v.(type) {
	case *Header:
		b.t.Header = x
	case *Object:
		if _, dup := b.objs[x.Desc]; !dup {
			b.objs[x.Desc] = x
			b.t.Objects = append(b.t.Objects, x)
		}
	case *ThreadStart:
		in, err := b.instance(x.Serial, x.TID)
		if err != nil {
			return nil, err
		}
		in.Start = min(in.Start, x.Time)
		if in.Name == "" {
			in.Name = x.Name
		}
		b.rb.thread(x)
	case *ThreadExit:
		b.rb.exit(x)
		in, err := b.instance(x.Serial, x.TID)
		if err != nil {
			return nil, err
		}
		in.Exited = true
		in.Exit = max(in.Exit, x.Time)
		in.Events = max(in.Events, x.Events)
		in.Drops = max(in.Drops, x.Drops)
		if x.Name != "" {
			in.Name = x.Name
		}
	case *Agg:
		in, err := b.instance(x.Serial, x.TID)
		if err != nil {
			return nil, err
		}
		in.Drops = max(in.Drops, x.Drops)
		th := b.thread(x.TID)
		for i := range x.Pages {
			pa := &x.Pages[i]
			p := th.page(pa.Page)
			p.Events += pa.Events
			p.Reads += pa.Reads
			p.Writes += pa.Writes
			p.First = min(p.First, pa.First)
			p.Last = max(p.Last, pa.Last)
			for _, s := range pa.Sites {
				p.Sites = addSite(p.Sites, s.Site, s.Count)
			}
			in.Start = min(in.Start, pa.First)
			if b.idx != nil {
				pp := p.part(b.idx.at(pa.Page, pa.First))
				pp.Events += pa.Events
				pp.Reads += pa.Reads
				pp.Writes += pa.Writes
				pp.First = min(pp.First, pa.First)
				pp.Last = max(pp.Last, pa.Last)
				for _, s := range pa.Sites {
					pp.Sites = addSite(pp.Sites, s.Site, s.Count)
				}
			}
		}
	case *Raw:
		in, err := b.instance(x.Serial, x.TID)
		if err != nil {
			return nil, err
		}
		in.Drops = max(in.Drops, x.Drops)
		th := b.thread(x.TID)
		for _, e := range x.Events {
			if e.Site == 0 || e.Page1 == 0 {
				continue
			}
			p := th.page(e.Page1 - 1)
			p.Events++
			p.First = min(p.First, e.Time)
			p.Last = max(p.Last, e.Time)
			p.raw = addSite(p.raw, e.Site, 1)
			in.Start = min(in.Start, e.Time)
			if b.idx != nil {
				pp := p.part(b.idx.at(e.Page1-1, e.Time))
				pp.Events++
				pp.First = min(pp.First, e.Time)
				pp.Last = max(pp.Last, e.Time)
				pp.raw = addSite(pp.raw, e.Site, 1)
			}
		}
	case *Note:
		b.t.Notes = append(b.t.Notes, x)
		switch x.Kind {
		case NoteExec:
			b.exec = x.Text
		case NoteExecFailed:
			// tracing went on in this file: the exec's end is void
			b.exec = ""
			if b.t.End != nil && b.t.End.Flags&EndExec != 0 {
				b.t.End = nil
			}
		}
	case *End:
		b.t.End = x
		if x.Flags&EndWriteError != 0 {
			b.writeError(x.Errno)
		}
	case *Status:
		if x.Flags&StatusWriteError != 0 {
			b.writeError(x.Errno)
		}
	case *Allocs:
		b.rb.allocs(x)
		b.t.AllocEvents += uint64(len(x.Events))
	case *Maps:
		b.t.Maps = append(b.t.Maps, x)
	case *BlockObject:
		b.blockObject(x)
	case *BlockCounts:
		if err := b.blockCounts(x); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// addRaw adds raw events' site counts to a page's (or part's) reads,
// writes and sites, the kinds from the object tables.
func (t *Trace) addRaw(raw []SiteCount, reads, writes uint64, sites []SiteCount) (uint64, uint64, []SiteCount) {
	for _, s := range raw {
		k := t.Site(s.Site).Kind
		if k&KindRead != 0 {
			reads += s.Count
		}
		if k&KindWrite != 0 {
			writes += s.Count
		}
		sites = addSite(sites, s.Site, s.Count)
	}
	return reads, writes, sites
}

// finishRegions builds the trace's regions from what the chunks said and
// returns their index (nil without any). With a first pass (Load) the
// regions are already built and pages split by them.
func (b *builder) finishRegions() *regionIndex {
	if b.idx != nil {
		b.t.Regions, b.t.AllocsLost = b.idx.all, b.idx.lost
		return b.idx
	}
	if b.rb.empty() {
		return nil
	}
	var lost uint64
	b.t.Regions, lost = b.rb.build()
	b.t.AllocsLost = lost
	return newRegionIndex(b.t.Regions)
}

func (b *builder) writeError(errno uint32) {
	b.t.WriteError = true
	if b.t.WriteErrno == 0 {
		b.t.WriteErrno = errno
	}
}

func (b *builder) finish() *Trace {
	t := b.t
	if t.End != nil && t.End.Flags&EndExec != 0 {
		t.Exec = b.exec
	}
	slices.SortFunc(t.Objects, func(x, y *Object) int {
		return cmp.Compare(x.SitesAddr, y.SitesAddr)
	})
	b.finishBlocks()
	idx := b.finishRegions()
	bySite := func(x, y SiteCount) int { return cmp.Compare(x.Site, y.Site) }
	for _, th := range t.byTID {
		t.Threads = append(t.Threads, th)
		for _, p := range th.Pages {
			p.Reads, p.Writes, p.Sites = t.addRaw(p.raw, p.Reads, p.Writes, p.Sites)
			p.raw = nil
			slices.SortFunc(p.Sites, bySite)
			if b.idx == nil && idx != nil {
				// regions known only now (one pass): the owner at the
				// page's first event
				p.Region = idx.at(p.Page, p.First)
			}
			for _, pp := range p.Parts {
				pp.Reads, pp.Writes, pp.Sites = t.addRaw(pp.raw, pp.Reads, pp.Writes, pp.Sites)
				pp.raw = nil
				slices.SortFunc(pp.Sites, bySite)
				if p.Region == nil || pp.Events > p.part(p.Region).Events {
					p.Region = pp.Region
				}
			}
			if len(p.Parts) == 1 {
				p.Region, p.Parts = p.Parts[0].Region, nil
			}
			th.Events += p.Events
			th.Reads += p.Reads
			th.Writes += p.Writes
			th.First = min(th.First, p.First)
			th.Last = max(th.Last, p.Last)
		}
		if len(th.Pages) == 0 {
			th.First = 0
		}
		slices.SortFunc(th.Instances, func(x, y *Instance) int {
			return cmp.Compare(x.Serial, y.Serial)
		})
		for _, in := range th.Instances {
			if in.Start == ^uint64(0) {
				in.Start = 0
			}
			th.Drops += in.Drops
			if in.Name != "" {
				th.Name = in.Name
			}
		}
	}
	sort.Slice(t.Threads, func(i, j int) bool { return t.Threads[i].TID < t.Threads[j].TID })
	return t
}

// Totals over all threads.
func (t *Trace) Totals() (pages, events, reads, writes, drops uint64) {
	for _, th := range t.Threads {
		pages += uint64(len(th.Pages))
		events += th.Events
		reads += th.Reads
		writes += th.Writes
		drops += th.Drops
	}
	return
}

package dataset

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"sync/atomic"
	"time"

	"github.com/parquet-go/parquet-go"

	"hijack/vptrace/owner"
	"hijack/vptrace/trace"
)

// RunStats is what the export of one run wrote.
type RunStats struct {
	Run      string
	PID      uint32
	PageRows int64
	Events   int64
	// Warnings: what the runs table says of the trace (Options.Describe)
	// and what reading its page chunks found (undecodable chunks), and
	// the mapped files whose symbols could not be read.
	Warnings []string
}

// Input is a trace file to export, and the name of its run.
type Input struct{ Path, Run string }

// Add exports the trace files, each as its run, and calls done after
// each. A fork child whose parent's trace is among them (the trace of its
// PPID on the same clock opened last before the fork, as hijack report
// finds it) has the pages of blocks its parent allocated before the fork
// named by those: parents are exported first, and their metadata kept
// until their last child's export.
func (e *Export) Add(inputs []Input, done func(Input, *RunStats)) error {
	type head struct {
		h      *trace.Header
		parent int // index in inputs, -1: none
		kids   int
		meta   *trace.Trace
	}
	hs := make([]head, len(inputs))
	for i, in := range inputs {
		r, err := trace.Open(in.Path)
		if err != nil {
			return err
		}
		hs[i] = head{h: r.Header, parent: -1}
		r.Close()
	}
	order := make([]int, len(inputs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(hs[a].h.OpenTime, hs[b].h.OpenTime) })
	for _, i := range order {
		h := hs[i].h
		if h.Flags&trace.HeaderForked == 0 {
			continue
		}
		for _, j := range order {
			p := hs[j].h
			if j != i && p.PID == h.PPID && p.StartMono == h.StartMono && p.OpenTime <= h.OpenTime &&
				(hs[i].parent < 0 || p.OpenTime >= hs[hs[i].parent].h.OpenTime) {
				hs[i].parent = j
			}
		}
		if hs[i].parent >= 0 {
			hs[hs[i].parent].kids++
		}
	}
	for _, i := range order {
		var parent *trace.Trace
		if k := hs[i].parent; k >= 0 {
			parent = hs[k].meta
			if hs[k].kids--; hs[k].kids == 0 {
				hs[k].meta = nil
			}
		}
		st, meta, err := e.addRun(inputs[i].Path, inputs[i].Run, parent)
		if err != nil {
			return err
		}
		if hs[i].kids > 0 {
			hs[i].meta = meta
		}
		if done != nil {
			done(inputs[i], st)
		}
	}
	return nil
}

// AddRun exports the trace file at path as run (the partition name). It
// reads the file twice: its metadata (trace.LoadMeta), then its page
// chunks one at a time.
func (e *Export) AddRun(path, run string) (*RunStats, error) {
	st, _, err := e.addRun(path, run, nil)
	return st, err
}

func (e *Export) addRun(path, run string, parent *trace.Trace) (*RunStats, *trace.Trace, error) {
	if e.runs[run] {
		return nil, nil, fmt.Errorf("%s: run %q: %w", path, run, errRunTaken)
	}
	e.runs[run] = true
	meta, err := trace.LoadMetaChild(path, parent)
	if err != nil {
		return nil, nil, err
	}
	c := newConverter(meta)
	f, err := e.create("pages", run)
	if err != nil {
		return nil, nil, err
	}
	w := parquet.NewGenericWriter[PageRow](f, e.writerOptions()...)
	c.out = newPipe(w)
	err = c.pages(path)
	if werr := c.out.close(); werr != nil && (err == nil || errors.Is(err, errWriting)) {
		err = fmt.Errorf("%s: writing the pages table: %w", path, werr)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := closeTable(f, w, "pages"); err != nil {
		return nil, nil, err
	}
	st := &RunStats{Run: run, PID: meta.Header.PID, PageRows: c.nrows, Events: c.events}
	status := ""
	if e.opts.Describe != nil {
		status, st.Warnings = e.opts.Describe(meta)
	}
	st.Warnings = append(st.Warnings, c.errors...)
	runRow := c.runRow(path, status, st.Warnings)
	if err := writeTable(e, "threads", run, c.threadRows()); err != nil {
		return nil, nil, err
	}
	if err := writeTable(e, "sites", run, c.siteRows()); err != nil {
		return nil, nil, err
	}
	if err := writeTable(e, "allocations", run, c.allocRows()); err != nil {
		return nil, nil, err
	}
	if err := writeTable(e, "regions", run, c.regionRows()); err != nil {
		return nil, nil, err
	}
	if err := writeTable(e, "notes", run, c.noteRows()); err != nil {
		return nil, nil, err
	}
	if err := writeTable(e, "runs", run, []RunRow{runRow}); err != nil {
		return nil, nil, err
	}
	for _, p := range c.res.Problems() {
		st.Warnings = append(st.Warnings, "cannot read the symbols of a mapped file, its addresses are named by the mapping: "+p)
	}
	return st, meta, nil
}

// converter turns one trace's page chunks into rows of the pages table
// and totals them for the other tables.
type converter struct {
	meta    *trace.Trace
	res     *owner.Resolver
	idx     *trace.RegionIndex
	hasMaps bool
	pid     int32

	sites      map[uint64]*siteInfo
	regionOwn  map[*trace.Region]owner.Owner
	names      map[regionKey]owner.Owner // regions' owners by what names them
	lastRegion *trace.Region             // the last row's region and owner
	lastOwner  owner.Owner
	pageOwn    map[uint64]owner.Owner // pages no region covers
	threads    map[uint64]*threadAcc  // by serial
	allocs     map[allocKey]*allocAcc
	lastPageNS uint64

	out    *pipe
	rows   []PageRow
	nrows  int64
	events int64
	errors []string

	syms []symCount // scratch
	raw  map[rawKey]*rawAcc
}

// siteInfo is a site as the pages table names it.
type siteInfo struct {
	known            bool
	function, object string
	symbol           string
	insn             int64
	kind             trace.Kind
	seg              trace.Segment
}

type regionKey struct {
	kind  trace.RegionKind
	alloc trace.AllocKind
	site  uint64
	tid   uint32
	file  bool
	path  string
}

type allocKey struct {
	alloc trace.AllocKind
	site  uint64
}

// allocAcc totals an allocation site. Its pages are a set of 64-page
// words: rows come page after page (a chunk's records ascend), so most
// rows only set a bit in the word at hand.
type allocAcc struct {
	row      AllocRow
	words    map[uint64]uint64 // page>>6 -> bits
	word     uint64            // the word at hand: words[key] lacks its bits
	wordBits uint64
}

func (a *allocAcc) addPage(pg uint64) {
	if k := pg >> 6; k != a.word {
		if a.wordBits != 0 {
			a.words[a.word] |= a.wordBits
		}
		a.word, a.wordBits = k, 0
	}
	a.wordBits |= 1 << (pg & 63)
}

func (a *allocAcc) pages() int64 {
	if a.wordBits != 0 {
		a.words[a.word] |= a.wordBits
		a.wordBits = 0
	}
	var n int
	for _, w := range a.words {
		n += bits.OnesCount64(w)
	}
	return int64(n)
}

type threadAcc struct {
	tid                   uint32
	name                  string
	rows                  int64
	events, reads, writes uint64
	first, last           uint64
	drops                 uint64
	start                 uint64
}

type symCount struct {
	name string
	n    uint64
}

const (
	batchRows = 4096
	// maxPageOwners bounds the cache of owners by page (pages no region
	// covers: globals, libraries, mappings): cleared when full.
	maxPageOwners = 1 << 18
)

func newConverter(meta *trace.Trace) *converter {
	c := &converter{
		meta:      meta,
		res:       owner.New(meta),
		idx:       meta.RegionIndex(),
		sites:     map[uint64]*siteInfo{},
		regionOwn: map[*trace.Region]owner.Owner{},
		names:     map[regionKey]owner.Owner{},
		pageOwn:   map[uint64]owner.Owner{},
		threads:   map[uint64]*threadAcc{},
		allocs:    map[allocKey]*allocAcc{},
		pid:       int32(meta.Header.PID),
	}
	c.hasMaps = c.res.HasMaps()
	for _, th := range meta.Threads {
		for _, in := range th.Instances {
			c.threads[in.Serial] = &threadAcc{tid: th.TID, name: in.Name, start: in.Start, first: ^uint64(0), drops: in.Drops}
		}
	}
	return c
}

// thread returns the totals of a thread serial; a serial seen with
// another TID is another process's (trace.ErrMultiProcess).
func (c *converter) thread(serial uint64, tid uint32) (*threadAcc, error) {
	t := c.threads[serial]
	if t == nil {
		t = &threadAcc{tid: tid, first: ^uint64(0), start: ^uint64(0)}
		c.threads[serial] = t
	}
	if t.tid != tid {
		return nil, fmt.Errorf("%w (thread serial %d is TID %d and TID %d)", trace.ErrMultiProcess, serial, t.tid, tid)
	}
	return t, nil
}

func (c *converter) site(addr uint64) *siteInfo {
	if s := c.sites[addr]; s != nil {
		return s
	}
	rs := c.meta.Site(addr)
	s := &siteInfo{known: rs.Known(), kind: rs.Kind, seg: rs.Seg}
	if s.known {
		s.function, s.object, s.symbol, s.insn = owner.Demangle(rs.Function), rs.Object.Name(), owner.Demangle(rs.Symbol), int64(rs.InsnOff)
	}
	c.sites[addr] = s
	return s
}

// pages reads the trace's page chunks and writes their rows.
func (c *converter) pages(path string) error {
	r, err := trace.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		ch, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if !trace.PageChunk(ch.Type) {
			continue
		}
		v, err := ch.Decode()
		if err != nil {
			c.errors = append(c.errors, err.Error())
			continue
		}
		switch x := v.(type) {
		case *trace.Agg:
			err = c.agg(x)
		case *trace.Raw:
			err = c.rawChunk(x)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return c.flush()
}

// flush hands the rows to the writer; an error is the writer's (the rest
// need not be converted).
func (c *converter) flush() error {
	if len(c.rows) > 0 {
		c.out.full <- c.rows
		c.rows = nil
	}
	if c.out.failed.Load() {
		return errWriting
	}
	return nil
}

// errWriting: the pipe's writer failed (pipe.close says how).
var errWriting = errors.New("writing the pages table failed")

// pipe writes batches of rows in a goroutine of its own: encoding and
// compressing the columns takes about as long as decoding the chunks and
// naming owners, and the two overlap. Memory stays bounded: batches come
// back through free, at most pipeBatches of them.
type pipe struct {
	full   chan []PageRow
	free   chan []PageRow
	done   chan error
	failed atomic.Bool
}

const pipeBatches = 4

func newPipe(w *parquet.GenericWriter[PageRow]) *pipe {
	p := &pipe{full: make(chan []PageRow, pipeBatches), free: make(chan []PageRow, pipeBatches+1), done: make(chan error, 1)}
	for range pipeBatches {
		p.free <- make([]PageRow, 0, batchRows)
	}
	go func() {
		var err error
		for b := range p.full {
			if err == nil {
				if _, err = w.Write(b); err != nil {
					p.failed.Store(true)
				}
			}
			clear(b) // drop the strings
			p.free <- b[:0]
		}
		p.done <- err
	}()
	return p
}

// batch returns an empty batch, waiting for one to be written.
func (p *pipe) batch() []PageRow { return <-p.free }

// close waits for the batches handed over to be written.
func (p *pipe) close() error {
	close(p.full)
	return <-p.done
}

// agg writes the rows of an AGG chunk.
func (c *converter) agg(a *trace.Agg) error {
	t, err := c.thread(a.Serial, a.TID)
	if err != nil {
		return err
	}
	t.drops = max(t.drops, a.Drops)
	for i := range a.Pages {
		pa := &a.Pages[i]
		var top trace.SiteCount
		for _, s := range pa.Sites {
			if s.Count > top.Count || (s.Count == top.Count && s.Site < top.Site) {
				top = s
			}
		}
		sym := ""
		if len(pa.Sites) == 1 {
			sym = c.site(pa.Sites[0].Site).symbol
		} else if len(pa.Sites) > 1 {
			c.syms = c.syms[:0]
			for _, s := range pa.Sites {
				c.syms = addSym(c.syms, c.site(s.Site).symbol, s.Count)
			}
			sym = topSym(c.syms)
		}
		region := c.idx.At(pa.Page, pa.First)
		if err := c.row(t, a.Serial, a.From, a.To, pa.Page, region, pa.Events, pa.Reads, pa.Writes, pa.First, pa.Last,
			len(pa.Sites), top.Site, sym); err != nil {
			return err
		}
	}
	return nil
}

type rawKey struct {
	page   uint64
	region *trace.Region
}

type rawAcc struct {
	events, reads, writes uint64
	first, last           uint64
	sites                 []trace.SiteCount
}

// rawChunk writes the rows of a RAW chunk: its events grouped by page
// (and owner), the interval from its first to its last event.
func (c *converter) rawChunk(x *trace.Raw) error {
	t, err := c.thread(x.Serial, x.TID)
	if err != nil {
		return err
	}
	t.drops = max(t.drops, x.Drops)
	if c.raw == nil {
		c.raw = map[rawKey]*rawAcc{}
	}
	clear(c.raw)
	from, to := ^uint64(0), uint64(0)
	for _, e := range x.Events {
		if e.Site == 0 || e.Page1 == 0 {
			continue
		}
		pg := e.Page1 - 1
		k := rawKey{pg, c.idx.At(pg, e.Time)}
		acc := c.raw[k]
		if acc == nil {
			acc = &rawAcc{first: ^uint64(0)}
			c.raw[k] = acc
		}
		kind := c.site(e.Site).kind
		acc.events++
		if kind&trace.KindRead != 0 {
			acc.reads++
		}
		if kind&trace.KindWrite != 0 {
			acc.writes++
		}
		acc.first, acc.last = min(acc.first, e.Time), max(acc.last, e.Time)
		from, to = min(from, e.Time), max(to, e.Time)
		i := slices.IndexFunc(acc.sites, func(s trace.SiteCount) bool { return s.Site == e.Site })
		if i < 0 {
			acc.sites = append(acc.sites, trace.SiteCount{Site: e.Site, Count: 1})
		} else {
			acc.sites[i].Count++
		}
	}
	keys := make([]rawKey, 0, len(c.raw))
	for k := range c.raw {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b rawKey) int {
		return cmp.Or(cmp.Compare(a.page, b.page), cmp.Compare(c.raw[a].first, c.raw[b].first))
	})
	for _, k := range keys {
		acc := c.raw[k]
		var top trace.SiteCount
		c.syms = c.syms[:0]
		for _, s := range acc.sites {
			if s.Count > top.Count || (s.Count == top.Count && s.Site < top.Site) {
				top = s
			}
			c.syms = addSym(c.syms, c.site(s.Site).symbol, s.Count)
		}
		if err := c.row(t, x.Serial, from, to, k.page, k.region, acc.events, acc.reads, acc.writes, acc.first, acc.last,
			len(acc.sites), top.Site, topSym(c.syms)); err != nil {
			return err
		}
	}
	return nil
}

func addSym(list []symCount, name string, n uint64) []symCount {
	if name == "" {
		return list
	}
	for i := range list {
		if list[i].name == name {
			list[i].n += n
			return list
		}
	}
	return append(list, symCount{name, n})
}

// topSym is the variable with the most events, the first by name among
// equals (as hijack report --csv's top_symbol).
func topSym(list []symCount) string {
	var best symCount
	for _, s := range list {
		if s.n > best.n || (s.n == best.n && s.name < best.name) {
			best = s
		}
	}
	return best.name
}

// row appends one row of the pages table and adds it to the totals.
func (c *converter) row(t *threadAcc, serial, from, to, pg uint64, region *trace.Region,
	events, reads, writes, first, last uint64, nsites int, topSite uint64, sym string) error {
	top := c.site(topSite)
	seg, name := c.ownerOf(pg, region, top)
	if c.rows == nil {
		c.rows = c.out.batch()
	}
	c.rows = append(c.rows, PageRow{
		PID: c.pid, Thread: int32(t.tid), Serial: int64(serial), ThreadName: t.name,
		IntervalStart: int64(from), IntervalEnd: int64(to), Page: pg << trace.PageShift,
		Reads: int64(reads), Writes: int64(writes), Events: int64(events), First: int64(first), Last: int64(last),
		Sites: int32(nsites), TopSite: topSite, TopFunction: top.function, TopInsn: top.insn, TopSymbol: sym,
		Object: top.object, Segment: seg, Owner: name,
	})
	c.nrows++
	c.events += int64(events)
	t.rows++
	t.events += events
	t.reads += reads
	t.writes += writes
	t.first, t.last = min(t.first, first), max(t.last, last)
	t.start = min(t.start, first)
	c.lastPageNS = max(c.lastPageNS, last)
	if region != nil && (region.Kind == trace.RegionHeap || region.Kind == trace.RegionMmap) {
		acc := c.alloc(region)
		acc.row.Events += int64(events)
		acc.addPage(pg)
	}
	if len(c.rows) == cap(c.rows) {
		return c.flush()
	}
	return nil
}

// ownerOf names a page's owner as hijack report does: by the region that
// held it, else by its address in the process's mappings; a trace
// without mappings (runtimes before format 1.3) only by what the
// instruction's operand told (cmd/hijack's ownerOf).
func (c *converter) ownerOf(pg uint64, region *trace.Region, top *siteInfo) (segment, name string) {
	if region != nil {
		if region == c.lastRegion {
			return c.lastOwner.Segment, c.lastOwner.Name
		}
		ow, ok := c.regionOwn[region]
		if !ok {
			// one name per site, thread or path, not per block
			k := regionKey{kind: region.Kind, alloc: region.Alloc, site: region.Site, tid: region.TID,
				file: region.Flags&trace.AllocFile != 0, path: region.Path}
			if ow, ok = c.names[k]; !ok {
				ow = c.res.Of(pg, region)
				ow.Region = nil
				c.names[k] = ow
			}
			c.regionOwn[region] = ow
		}
		c.lastRegion, c.lastOwner = region, ow
		return ow.Segment, ow.Name
	}
	if c.hasMaps {
		ow, ok := c.pageOwn[pg]
		if !ok {
			if len(c.pageOwn) >= maxPageOwners {
				clear(c.pageOwn)
			}
			ow = c.res.Of(pg, nil)
			c.pageOwn[pg] = ow
		}
		return ow.Segment, ow.Name
	}
	ow := owner.OfInstruction(top.known, top.seg, top.symbol)
	return ow.Segment, ow.Name
}

func (c *converter) alloc(g *trace.Region) *allocAcc {
	k := allocKey{g.Alloc, g.Site}
	a := c.allocs[k]
	if a == nil {
		a = &allocAcc{words: map[uint64]uint64{}, word: ^uint64(0), row: AllocRow{PID: c.pid, Site: c.res.Site(g.Site),
			Line: c.res.Line(g.Site), Allocator: g.Alloc.String(), Address: g.Site,
			First: int64(g.Born), Last: int64(g.Born)}}
		a.row.Owner = a.row.Allocator + "@" + a.row.Site
		c.allocs[k] = a
	}
	return a
}

// ---- the other tables ----

func (c *converter) threadRows() []ThreadRow {
	exits := map[uint64]*trace.Instance{}
	for _, th := range c.meta.Threads {
		for _, in := range th.Instances {
			exits[in.Serial] = in
		}
	}
	rows := []ThreadRow{}
	for serial, t := range c.threads {
		r := ThreadRow{PID: c.pid, Thread: int32(t.tid), Serial: int64(serial), Name: t.name,
			Drops: int64(t.drops), Rows: t.rows, Events: int64(t.events), Reads: int64(t.reads), Writes: int64(t.writes)}
		if t.start != ^uint64(0) {
			r.Start = int64(t.start)
		}
		if in := exits[serial]; in != nil {
			r.Counted = int64(in.Events)
			if in.Exited {
				r.Exit = ptr(int64(in.Exit))
			}
		}
		if t.rows > 0 {
			r.First, r.Last = ptr(int64(t.first)), ptr(int64(t.last))
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b ThreadRow) int {
		return cmp.Or(cmp.Compare(a.Thread, b.Thread), cmp.Compare(a.Serial, b.Serial))
	})
	return rows
}

func ptr[T any](v T) *T { return &v }

func (c *converter) siteRows() []SiteRow {
	rows := []SiteRow{}
	for _, o := range c.meta.Objects {
		name := o.Name()
		for i, s := range o.Sites {
			r := SiteRow{PID: c.pid, Site: o.SitesAddr + uint64(i)*trace.SiteRecSize, Object: name, ObjectID: o.ID,
				Index: int32(i), Function: owner.Demangle(o.Str(s.Func)), Offset: int64(s.InsnOff), Kind: s.Kind.String(),
				KindBits: int32(s.Kind), Segment: s.Seg.String(), SymbolOff: s.SymOff, Size: int32(s.Size),
				Covers: int32(s.Covers), Score: float64(s.Score) / 1e6}
			if s.Sym != trace.NoSym {
				r.Symbol = owner.Demangle(o.Str(s.Sym))
			}
			rows = append(rows, r)
		}
	}
	return rows
}

func (c *converter) allocRows() []AllocRow {
	for _, g := range c.meta.Regions {
		if g.Kind != trace.RegionHeap && g.Kind != trace.RegionMmap {
			continue
		}
		a := c.alloc(g)
		a.row.Count++
		a.row.Bytes += int64(g.Bytes())
		a.row.First, a.row.Last = min(a.row.First, int64(g.Born)), max(a.row.Last, int64(g.Born))
	}
	rows := []AllocRow{}
	for _, a := range c.allocs {
		a.row.Pages = a.pages()
		rows = append(rows, a.row)
	}
	slices.SortFunc(rows, func(a, b AllocRow) int {
		return cmp.Or(cmp.Compare(b.Events, a.Events), cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Site, b.Site), cmp.Compare(a.Allocator, b.Allocator))
	})
	return rows
}

func (c *converter) regionRows() []RegionRow {
	rows := []RegionRow{}
	for _, g := range c.meta.Regions {
		_, name := c.ownerOf(g.Start>>trace.PageShift, g, nil)
		r := RegionRow{PID: c.pid, Kind: g.Kind.String(), Start: g.Start, End: g.End, Bytes: int64(g.Bytes()),
			Born: int64(g.Born), Address: g.Site, Thread: int32(g.TID), Path: g.Path, Owner: name}
		if g.Died != trace.Alive {
			r.Died = ptr(int64(g.Died))
		}
		if g.Kind == trace.RegionHeap || g.Kind == trace.RegionMmap {
			r.Allocator = g.Alloc.String()
		}
		rows = append(rows, r)
	}
	return rows
}

// NoteKind names a note kind as the notes table does.
func NoteKind(k uint32) string {
	switch k {
	case trace.NoteText:
		return "note"
	case trace.NoteStart:
		return "start"
	case trace.NoteStop:
		return "stop"
	case trace.NoteWarning:
		return "warning"
	case trace.NoteFork:
		return "fork"
	case trace.NoteExec:
		return "exec"
	case trace.NoteExecFailed:
		return "exec-failed"
	}
	return fmt.Sprintf("kind-%d", k)
}

func (c *converter) noteRows() []NoteRow {
	rows := []NoteRow{}
	for _, n := range c.meta.Notes {
		rows = append(rows, NoteRow{PID: c.pid, Time: int64(n.Time), Kind: NoteKind(n.Kind), Thread: int32(n.TID),
			Value: int64(n.Value), Text: n.Text})
	}
	return rows
}

func (c *converter) runRow(path, status string, warnings []string) RunRow {
	h := c.meta.Header
	d := c.lastPageNS
	if c.meta.End != nil {
		d = max(d, c.meta.End.Time)
	}
	var drops uint64
	for _, t := range c.threads {
		drops += t.drops
	}
	return RunRow{Path: path, PID: c.pid, PPID: int32(h.PPID), ForkChild: h.Flags&trace.HeaderForked != 0,
		Program: h.Program, Exe: h.Exe, Cmdline: nonNil(h.Cmdline), Start: time.Unix(0, int64(h.StartUnix)).UTC(),
		Duration: int64(d), Format: fmt.Sprintf("%d.%d", h.Major, h.Minor), IntervalMS: int32(h.IntervalMS),
		ClockRes: int64(h.ClockRes), Complete: c.meta.End != nil && c.meta.End.Flags&trace.EndLost == 0 && !c.meta.WriteError, Status: status,
		Warnings: nonNil(warnings), Exec: c.meta.Exec, Objects: int32(len(c.meta.Objects)), Threads: int32(len(c.threads)),
		PageRows: c.nrows, Events: c.events, Drops: int64(drops), AllocEvents: int64(c.meta.AllocEvents),
		AllocsLost: int64(c.meta.AllocsLost)}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

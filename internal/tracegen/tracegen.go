// Package tracegen writes synthetic vptrace trace files of any size, for
// tests and benchmarks of the trace readers and exporters: threads (with
// stack and TLS ranges), an instrumented object with sites in a few
// functions, heap blocks from a few allocation sites (freed and reused
// over time), aggregate chunks interval after interval, a raw chunk,
// notes. The same Config gives the same bytes.
package tracegen

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"

	"hijack/vptrace/trace"
)

// Config says what to generate.
type Config struct {
	Seed      uint64
	PID       uint32
	Threads   int   // default 4
	Bytes     int64 // stop after the first interval that brings the file to this size
	Intervals int   // or after this many intervals (0: Bytes decides)
	Pages     int   // pages each thread touches per interval (default 256)
	Working   int   // pages of each thread's heap arrays (default 4096)
	Allocs    bool  // write ALLOCS chunks and thread ranges (format 1.3)
	Raw       bool  // end each thread with a RAW chunk
	Notes     int   // notes, spread over the run
	// ForkOf, when nonzero, makes the trace a fork child's, of the process
	// ForkOf (a trace of this package with the same Threads and Working)
	// at time ForkAt: its threads use the arrays the parent allocated
	// before the fork, with no allocation events of their own for them.
	ForkOf uint32
	ForkAt uint64
	// Compress writes the chunks as the runtime does by default (format
	// 1.4): zstd-compressed, the aggregates as AGGC.
	Compress bool
}

// Stats says what was generated.
type Stats struct {
	Bytes      int64
	Intervals  int
	PageRecs   int64 // page records in AGG chunks
	RawEvents  int64
	Events     int64 // in AGG records and RAW chunks
	AllocEvent int64
}

const (
	base       = 0x7f0000000000 // heap blocks
	stackBase  = 0x7ff000000000 // thread stacks, 1 MiB each
	globalPage = 0x555555558    // the object's global data: 16 pages
	sitesAddr  = 0x555555560040
	intervalNS = 100_000_000
)

// funcs and their sites: {function, symbol (or "")}.
var sites = []struct{ fn, sym string }{
	{"fill", ""}, {"fill", ""}, {"sum", ""}, {"sum", "table"}, {"update", "table"},
	{"update", ""}, {"scan", ""}, {"scan", "counters"}, {"main", "counters"}, {"worker", ""},
}

// siteKind is the kind of the site at addr (the runtime's aggregator
// counts reads and writes by it).
func siteKind(addr uint64) trace.Kind {
	i := (addr - sitesAddr) / trace.SiteRecSize
	if addr < sitesAddr || i >= uint64(len(sites)) {
		return 0
	}
	return trace.Kind(1 + i%3)
}

// Generate writes a trace to w.
func Generate(out io.Writer, c Config) (Stats, error) {
	if c.Threads <= 0 {
		c.Threads = 4
	}
	if c.Pages <= 0 {
		c.Pages = 256
	}
	if c.Working <= 0 {
		c.Working = 4096
	}
	if c.PID == 0 {
		c.PID = 4242
	}
	if c.Bytes <= 0 && c.Intervals <= 0 {
		c.Intervals = 10
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	cw := &countWriter{w: bw}
	w, err := trace.NewWriterOptions(cw, trace.WriterOptions{Compress: c.Compress, Kinds: siteKind})
	if err != nil {
		return Stats{}, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x9e3779b97f4a7c15))
	var st Stats

	h := &trace.Header{PID: c.PID, PPID: 1, ClockRes: 1, StartUnix: 1_700_000_000_000_000_000, StartMono: 5e9, IntervalMS: 100,
		BufEvents: 4096, Program: "./synthetic", Exe: "/nonexistent/synthetic", Cmdline: []string{"./synthetic", fmt.Sprint(c.Threads)},
		Runtime: "tracegen"}
	t0 := uint64(0) // the first interval's start
	if c.ForkOf != 0 {
		h.PPID, h.Flags, h.OpenTime = c.ForkOf, trace.HeaderForked, c.ForkAt
		t0 = c.ForkAt
	}
	w.Begin(h)
	strs := []byte("\x00synthetic.o\x00")
	off := map[string]uint32{}
	str := func(s string) uint32 {
		if o, ok := off[s]; ok {
			return o
		}
		o := uint32(len(strs))
		strs = append(append(strs, s...), 0)
		off[s] = o
		return o
	}
	var recs []trace.SiteRec
	for i, s := range sites {
		r := trace.SiteRec{Func: str(s.fn), InsnOff: uint32(0x10 + 4*i), Sym: trace.NoSym, Kind: siteKind(sitesAddr + uint64(i)*trace.SiteRecSize), Size: 8, Covers: 1}
		if s.sym != "" {
			r.Sym, r.Seg = str(s.sym), trace.SegGlobal
		}
		recs = append(recs, r)
	}
	w.Object(&trace.Object{Desc: sitesAddr - 0x40, SitesAddr: sitesAddr, StrsAddr: sitesAddr + 0x1000, Version: 1, ID: 0xfeed,
		NameOff: 1, Sites: recs, Strs: strs})
	if c.Allocs {
		w.Maps(&trace.Maps{Time: 0, Why: trace.MapsStart, Maps: []trace.Mapping{
			{Start: base, End: base + uint64(c.Threads*2*c.Working+64)*trace.PageSize, Prot: trace.ProtRead | trace.ProtWrite},
			{Start: stackBase, End: stackBase + uint64(c.Threads)<<20, Prot: trace.ProtRead | trace.ProtWrite, Path: "[stack]"},
		}})
	}
	// each thread: two heap arrays of Working pages (from sites "malloc
	// in fill" and "calloc in worker"), its stack, the globals
	var seq uint64
	site := func(i int) uint64 { return sitesAddr + uint64(i)*trace.SiteRecSize }
	arr := func(th, k int) uint64 { return base + uint64((2*th+k)*c.Working)*trace.PageSize }
	for th := 0; th < c.Threads; th++ {
		tid := c.PID + uint32(th)
		ts := &trace.ThreadStart{Serial: uint64(th + 1), TID: tid, Time: t0 + uint64(th)*1000, Name: fmt.Sprintf("worker-%d", th)}
		if c.Allocs {
			lo := uint64(stackBase) + uint64(th)<<20
			ts.Stack = trace.Range{Lo: lo, Hi: lo + 1<<20}
			ts.TLS = []trace.Range{{Lo: lo + 1<<20 - 2*trace.PageSize, Hi: lo + 1<<20 - trace.PageSize}}
			var evs []trace.AllocEvent
			for k := range 2 {
				if c.ForkOf != 0 {
					break // the parent's
				}
				seq++
				kind, at := trace.AllocMalloc, uint64(0x555555551234)
				if k == 1 {
					kind, at = trace.AllocCalloc, 0x555555552345
				}
				evs = append(evs, trace.AllocEvent{Seq: seq, Time: uint64(th)*1000 + uint64(k), Addr: arr(th, k),
					Size: uint64(c.Working) * trace.PageSize, Site: at, Kind: kind})
			}
			if len(evs) > 0 {
				w.Allocs(&trace.Allocs{Serial: uint64(th + 1), TID: tid, Time: uint64(th) * 1000, Events: evs})
				st.AllocEvent += int64(len(evs))
			}
		}
		w.ThreadStart(ts)
	}
	if err := w.Flush(); err != nil {
		return st, err
	}
	notes := 0
	for iv := 0; ; iv++ {
		if c.Intervals > 0 && iv >= c.Intervals || c.Bytes > 0 && cw.n >= c.Bytes {
			break
		}
		from, to := t0+uint64(iv)*intervalNS, t0+uint64(iv+1)*intervalNS
		for th := 0; th < c.Threads; th++ {
			tid := c.PID + uint32(th)
			a := &trace.Agg{Serial: uint64(th + 1), TID: tid, From: from, To: to}
			seen := map[uint64]bool{}
			// a window sliding over the thread's arrays, the stack, a global page
			start := (iv * c.Pages / 2) % c.Working
			for k := 0; k < c.Pages; k++ {
				var pg uint64
				switch r := rng.IntN(16); {
				case r == 0:
					pg = (stackBase + uint64(th)<<20 + 1<<20 - uint64(1+rng.IntN(4))*trace.PageSize) >> trace.PageShift
				case r == 1:
					pg = globalPage + uint64(rng.IntN(16))
				default:
					pg = arr(th, r&1)>>trace.PageShift + uint64((start+k)%c.Working)
				}
				if seen[pg] {
					continue
				}
				seen[pg] = true
				n := 1 + rng.IntN(3)
				pa := trace.PageAgg{Page: pg, First: from + uint64(rng.IntN(intervalNS/2))}
				pa.Last = pa.First + uint64(rng.IntN(intervalNS/2))
				for s := 0; s < n; s++ {
					i := rng.IntN(len(sites))
					cnt := uint64(1 + rng.IntN(100))
					pa.Sites = append(pa.Sites, trace.SiteCount{Site: site(i), Count: cnt})
					pa.Events += cnt
					k := recs[i].Kind
					if k&trace.KindRead != 0 {
						pa.Reads += cnt
					}
					if k&trace.KindWrite != 0 {
						pa.Writes += cnt
					}
				}
				pa.Sites = mergeSites(pa.Sites)
				a.Pages = append(a.Pages, pa)
				st.Events += int64(pa.Events)
			}
			st.PageRecs += int64(len(a.Pages))
			w.Agg(a)
		}
		// every 8 intervals thread 0 frees its malloc array and gets it back
		// from another site: the same pages, another owner
		if c.Allocs && iv%8 == 7 && c.ForkOf == 0 {
			seq += 2
			w.Allocs(&trace.Allocs{Serial: 1, TID: c.PID, Time: to, Events: []trace.AllocEvent{
				{Seq: seq - 1, Time: to - 1, Addr: arr(0, 0), Kind: trace.AllocFree, Site: 0x555555553456},
				{Seq: seq, Time: to - 1, Addr: arr(0, 0), Size: uint64(c.Working) * trace.PageSize, Kind: trace.AllocNewArray,
					Site: 0x555555554567 + uint64(iv/8%2)},
			}})
			st.AllocEvent += 2
		}
		if notes < c.Notes && (c.Intervals == 0 || iv%max(1, c.Intervals/c.Notes) == 0) {
			notes++
			w.Note(&trace.Note{Kind: trace.NoteText, TID: c.PID, Time: from + 1, Text: fmt.Sprintf("phase %d", notes)})
		}
		st.Intervals++
		if w.Buffered() > 4<<20 {
			if err := w.Flush(); err != nil {
				return st, err
			}
		}
	}
	end := t0 + uint64(st.Intervals)*intervalNS
	for th := 0; th < c.Threads; th++ {
		tid := c.PID + uint32(th)
		if c.Raw {
			r := &trace.Raw{Serial: uint64(th + 1), TID: tid, Time: end + 50}
			for k := 0; k < 64; k++ {
				r.Events = append(r.Events, trace.Event{Page1: arr(th, 1)>>trace.PageShift + uint64(k%8) + 1,
					Site: site(k % len(sites)), Time: end + uint64(k)})
			}
			st.RawEvents += int64(len(r.Events))
			st.Events += int64(len(r.Events))
			w.Raw(r)
		}
		w.ThreadExit(&trace.ThreadExit{Serial: uint64(th + 1), TID: tid, Time: end + 100, Name: fmt.Sprintf("worker-%d", th)})
	}
	w.End(&trace.End{Time: end + 200, Threads: uint64(c.Threads), Flags: trace.EndClean})
	if err := w.Flush(); err != nil {
		return st, err
	}
	if err := bw.Flush(); err != nil {
		return st, err
	}
	st.Bytes = cw.n
	return st, nil
}

func mergeSites(s []trace.SiteCount) []trace.SiteCount {
	out := s[:0]
	for _, x := range s {
		found := false
		for i := range out {
			if out[i].Site == x.Site {
				out[i].Count += x.Count
				found = true
			}
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Command runtime is the vptrace runtime, built as a C archive:
//
//	go build -buildmode=c-archive -o bin/libvptrace.a ./vptrace/runtime
//
// and as two shared libraries: the C half alone (libvptrace.so) and, with
// -tags vptgohalf, this Go half without the C files (libvptrace-go.so,
// which the C half loads when a process first needs it: rt_gohalf.c).
// build.sh builds all three and installs bin/vptrace.h. Instrumented code calls
// the assembly stubs (stubs.S), which append events to per-thread buffers;
// the C code (rt_*.c) hands full buffers to this Go code through a lock-free
// queue. Application threads never call Go. One goroutine (the consumer)
// aggregates the events per thread and page and streams the aggregates to
// the trace file every VPTRACE_INTERVAL_MS, at thread exit, at
// vptrace_flush and at process exit.
package main

/*
#cgo CFLAGS: -O2 -Wall -fno-strict-aliasing -fno-omit-frame-pointer
#include "rt.h"
*/
import "C"

import (
	"io"
	"runtime"
	"slices"
	"sort"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"hijack/vptrace/abi"
	"hijack/vptrace/trace"
)

func main() {}

// vptGoAnchor is referenced by rt_state.c so that linking the archive's C part
// pulls in the Go part (and with it the Go runtime's initialisation).
//
//export vptGoAnchor
func vptGoAnchor() {}

func init() {
	go consumer()
}

// C layouts (rt.h)
const (
	bufHdr   = C.VPT_BUF_HDR
	evSize   = C.VPT_EV_SIZE
	vbOwned  = C.VB_OWNED
	vbfExit  = C.VBF_EXIT
	closed   = C.VPT_CLAIM_CLOSED
	maxBufs  = C.VPT_MAXBUFS
	maxObjs  = C.VPT_MAXOBJ
	siteSize = abi.SiteSize
)

type cbuf = C.struct_vpt_buf

// event is struct vpt_event (rt.h); the two arrays fail to compile when
// their sizes differ (TestCLayout in vptrace/abi checks every field).
type event = abi.Event

var (
	_ [evSize - abi.EventSize]struct{}
	_ [abi.EventSize - evSize]struct{}
)

func events(b *cbuf) []event {
	return unsafe.Slice((*event)(unsafe.Add(unsafe.Pointer(b), bufHdr)), int(b.cap))
}

func bufAt(i int) *cbuf {
	return (*cbuf)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&C.vpt_bufs[i]))))
}

// ---- the consumer ----

type thread struct {
	serial uint64
	tid    uint32
	tstart uint64
	drops  uint64
	events uint64
	pages  pageTable
	from   uint64
	// unwritten counts the events in pages (aggregated, not yet in an
	// AGG chunk).
	unwritten uint64
	// nextCut is the first cut after from (cuts: see consumerState),
	// valid while cutGen is the consumer's.
	nextCut uint64
	cutGen  uint64
}

type consumerState struct {
	threads map[uint64]*thread
	kinds   kindTable
	w       *trace.Writer
	out     fdWriter
	tmp     []event
	events  uint64 // aggregated, in total

	// held counts the events taken from buffers and not yet in the file
	// (aggregated, or encoded in w's buffer: inWriter of them); it is
	// published in C.vpt_go_held after every change, for the runtime to
	// say what is lost when this goroutine stops answering at exit.
	held, inWriter uint64

	// cuts are times at which a release of memory (rt_alloc.c) asked the
	// aggregates to be cut, ascending: a thread's events on either side
	// of one go to different intervals, so that a page's aggregate does
	// not mix what it held before the release and after.
	cuts    []uint64
	cutGen  uint64
	cutTail C.uint64_t
	cutBuf  [256]C.uint64_t

	aggPages []trace.PageAgg // an interval's aggregates, reused
	aggSites []trace.SiteCount
	order    []uint64 // writeAll's, reused
}

// newWriter returns the consumer's trace writer: aggregates compressed
// (format 1.4: AGGC chunks in DEFLATE chunks, the reads and writes left to
// the site kinds the consumer counted them by), unless VPTRACE_COMPRESS=0.
// Its chunks' CRCs are hash/crc32's (the C part's vrt_crc32c, called
// through cgo, read Go memory that memcheck, confused by the Go runtime's
// stack switches, took for uninitialised: jq's suite under valgrind
// failed; the tables hash/crc32 builds, 0.2 ms, are paid only by a
// process that starts the Go half).
func (s *consumerState) newWriter(out io.Writer) *trace.Writer {
	if v, _ := syscall.Getenv("VPTRACE_COMPRESS"); v != "0" {
		w, err := trace.NewWriterOptions(out, trace.WriterOptions{Compress: true, Kinds: s.kinds.kind})
		if err == nil {
			return w
		}
	}
	return trace.NewWriter(out)
}

// maxCuts bounds the cuts kept (the oldest go first).
const maxCuts = 4096

// takeCuts adds the cuts asked for since the last call.
func (s *consumerState) takeCuts() {
	n := int(C.vpt_cuts_take(&s.cutTail, &s.cutBuf[0], C.uint32_t(len(s.cutBuf))))
	added := false
	for _, c := range s.cutBuf[:n] {
		t := uint64(c)
		if t == 0 || (len(s.cuts) > 0 && t <= s.cuts[len(s.cuts)-1]) {
			continue
		}
		s.cuts = append(s.cuts, t)
		added = true
	}
	if len(s.cuts) > maxCuts {
		s.cuts = append(s.cuts[:0], s.cuts[len(s.cuts)-maxCuts:]...)
	}
	if added {
		s.cutGen++
	}
}

// cutAfter is the first cut after t, or the largest uint64.
func (s *consumerState) cutAfter(t uint64) uint64 {
	i := sort.Search(len(s.cuts), func(i int) bool { return s.cuts[i] > t })
	if i == len(s.cuts) {
		return ^uint64(0)
	}
	return s.cuts[i]
}

// cutAtOrBefore is the last cut at or before t (there is one).
func (s *consumerState) cutAtOrBefore(t uint64) uint64 {
	i := sort.Search(len(s.cuts), func(i int) bool { return s.cuts[i] > t })
	return s.cuts[i-1]
}

// cut ends th's interval at its next cut, because an event at time t
// comes after it: the aggregates so far are written up to the cut, and
// the next interval starts at the last cut before t.
func (s *consumerState) cut(th *thread, t uint64) {
	s.writeThread(th, th.nextCut)
	th.from = s.cutAtOrBefore(t)
	th.nextCut = s.cutAfter(t)
}

type fdWriter struct{ fd int }

// Write writes p whole; a failure is the runtime's write error (said once
// on stderr and marked in the file by the C side, like its own).
func (f *fdWriter) Write(p []byte) (int, error) {
	waitUnfenced()
	n := 0
	for n < len(p) {
		m, err := syscall.Write(f.fd, p[n:])
		if err == syscall.EINTR {
			continue
		}
		if err == nil && m == 0 {
			err = syscall.ENOSPC // (a regular file takes something or fails)
		}
		if err != nil {
			if errno, ok := err.(syscall.Errno); ok {
				C.vpt_write_failed(C.int(errno))
			}
			return n, err
		}
		n += m
	}
	return n, nil
}

func consumer() {
	runtime.LockOSThread()
	if C.vpt_go_started() == 0 {
		return // the process is exiting and writes its events itself
	}
	s := &consumerState{threads: map[uint64]*thread{}, cutGen: 1}
	s.w = s.newWriter(&s.out)
	var lastDone uint64
	next := uint64(0)
	for {
		interval := uint64(C.vpt_interval_ms()) * 1e6
		now := uint64(C.vpt_now())
		wait := 100
		if next > now {
			wait = int((next-now)/1e6) + 1
		}
		C.vpt_consumer_wait(C.int(wait))
		if C.vpt_trace_mode() != 0 {
			continue // not initialised, off, or C only
		}
		s.takeCuts()
		s.out.fd = int(C.vpt_trace_fd())
		if s.out.fd < 0 {
			continue
		}
		s.drainQueue()
		req := uint64(C.vpt_flush_requested())
		final := uint64(C.vpt_final_requested())
		now = uint64(C.vpt_now())
		if now >= next || req != lastDone || final != 0 {
			C.vpt_go_tick()
			s.drainQueue()
			s.stealAll()
			s.writeAll(now)
			if final != 0 {
				var drops uint64
				for _, th := range s.threads {
					drops += th.drops
				}
				end := &trace.End{Time: now, Events: s.events, Drops: drops, Flags: trace.EndClean}
				if errno := uint32(C.vpt_write_errno()); errno != 0 {
					end.Flags |= trace.EndWriteError
					end.Errno = errno
				}
				s.w.End(end)
			}
			s.flush()
			if req != lastDone || final != 0 {
				C.vpt_flush_done(C.uint64_t(req), boolInt(final != 0))
				lastDone = req
			}
			next = now + interval
		}
		if s.w.Buffered() > 0 {
			s.flush()
		}
	}
}

// flush writes w's buffer; the events it held are in the file then.
func (s *consumerState) flush() {
	if s.w.Flush() == nil {
		s.held -= s.inWriter
		s.inWriter = 0
		s.publishHeld()
	}
}

// hold adds n (two's complement: subtracts) to the events held and
// publishes the count.
func (s *consumerState) hold(n uint64) {
	s.held += n
	s.publishHeld()
}

func (s *consumerState) publishHeld() {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&C.vpt_go_held)), s.held)
}

// The runtime fences the consumer when it stopped answering at exit or
// before an exec (rt_exit.c): the END is written, counting the events
// held as lost, and nothing may be taken or written after it. A fenced
// consumer waits: for the process to end, or for a failed exec to lift
// the fence (what it holds then reaches the file after all).
func fenced() bool {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&C.vpt_go_fenced))) != 0
}

func waitUnfenced() {
	for fenced() {
		time.Sleep(10 * time.Millisecond)
	}
}

// claim takes events [from, to) of a buffer by CAS on its claim word
// (c, the value read): held counts them first and the fence is checked
// after, so that the runtime, which sets the fence and then reads held,
// either counts them or finds them unclaimed and writes them itself.
func (s *consumerState) claim(claim *uint64, c, from, to uint64) bool {
	s.hold(to - from)
	if fenced() {
		s.hold(-(to - from))
		waitUnfenced()
		return false
	}
	if atomic.CompareAndSwapUint64(claim, c, c&^0xffffffff|to) {
		return true
	}
	s.hold(-(to - from))
	return false
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func (s *consumerState) drainQueue() {
	for h := uint32(C.vpt_queue_take()); h != 0; {
		b := bufAt(int(h - 1))
		h = uint32(atomic.LoadUint32((*uint32)(unsafe.Pointer(&b.next))))
		s.takeQueued(b)
	}
}

// takeQueued aggregates a handed-over buffer and returns it to the pool.
func (s *consumerState) takeQueued(b *cbuf) {
	n := uint64(b.n)
	if n > uint64(b.cap) {
		n = uint64(b.cap)
	}
	claim := (*uint64)(unsafe.Pointer(&b.claim))
	var from uint64
	for {
		c := atomic.LoadUint64(claim)
		from = c & 0x7fffffff
		if from >= n || s.claim(claim, c, from, n) {
			break
		}
	}
	th := s.thread(b)
	th.drops = max(th.drops, uint64(b.drops))
	if from < n {
		s.aggregate(th, events(b)[from:n])
	}
	if b.flags&vbfExit != 0 {
		now := uint64(b.texit)
		s.writeThread(th, now)
		s.w.ThreadExit(&trace.ThreadExit{
			Serial: th.serial, TID: th.tid, Time: now,
			Events: uint64(b.events), Drops: th.drops,
			Name: C.GoString(&b.name[0]),
		})
		delete(s.threads, th.serial)
	}
	C.vpt_buf_release(b, C.uint64_t(n))
}

// stealAll takes the written events of the buffers threads are filling.
func (s *consumerState) stealAll() {
	nb := min(int(atomic.LoadUint32((*uint32)(unsafe.Pointer(&C.vpt_nbufs)))), maxBufs)
	for i := 0; i < nb; i++ {
		b := bufAt(i)
		if b == nil || atomic.LoadUint32((*uint32)(unsafe.Pointer(&b.state))) != vbOwned {
			continue
		}
		s.steal(b)
	}
}

func (s *consumerState) steal(b *cbuf) {
	evs := events(b)
	claim := (*uint64)(unsafe.Pointer(&b.claim))
	for tries := 0; tries < 100; tries++ {
		c := atomic.LoadUint64(claim)
		if c&closed != 0 {
			return // its owner is writing it out
		}
		from := int(c & 0xffffffff)
		s.tmp = s.tmp[:0]
		k := from
		for k < len(evs) {
			site := atomic.LoadUint64(&evs[k].Site)
			if site == 0 {
				break
			}
			s.tmp = append(s.tmp, event{Page1: evs[k].Page1, Site: site, Time: evs[k].Time})
			k++
		}
		if k == from {
			return
		}
		if s.claim(claim, c, uint64(from), uint64(k)) {
			th := s.thread(b)
			th.drops = max(th.drops, uint64(b.drops))
			s.aggregate(th, s.tmp)
			return
		}
	}
}

func (s *consumerState) thread(b *cbuf) *thread {
	serial := uint64(b.serial)
	th := s.threads[serial]
	if th == nil {
		th = &thread{serial: serial, tid: uint32(b.tid), tstart: uint64(b.tstart)}
		th.from = th.tstart
		s.threads[serial] = th // (its THREAD chunk was written at its first event)
	}
	return th
}

func (s *consumerState) aggregate(th *thread, evs []event) {
	var lastSite, lastPage1 uint64
	var lastKind abi.Kind
	var pa *pageEntry
	n := 0
	if th.cutGen != s.cutGen {
		th.nextCut, th.cutGen = s.cutAfter(th.from), s.cutGen
	}
	th.pages.touch(evs[:min(aggBatch, len(evs))])
	for i := range evs {
		if i%aggBatch == 0 {
			th.pages.touch(evs[min(i+aggBatch, len(evs)):min(i+2*aggBatch, len(evs))])
			th.pages.touchLists(evs[i:min(i+aggBatch, len(evs))])
		}
		e := &evs[i]
		site := atomic.LoadUint64(&e.Site)
		if site == 0 || e.Page1 == 0 {
			continue
		}
		n++
		if e.Time >= th.nextCut {
			s.cut(th, e.Time)
			pa = nil
		}
		if pa == nil || e.Page1 != lastPage1 {
			pa = th.pages.get(e.Page1)
			lastPage1 = e.Page1
			if pa.site0 == 0 { // new in the interval
				pa.first, pa.last = e.Time, e.Time
			}
		}
		if site != lastSite {
			lastSite, lastKind = site, s.kinds.kind(site)
		}
		if lastKind&abi.KindRead != 0 {
			pa.reads++
		}
		if lastKind&abi.KindWrite != 0 {
			pa.writes++
		}
		pa.first = min(pa.first, e.Time)
		pa.last = max(pa.last, e.Time)
		if pa.site0 == site {
			pa.count0++
		} else {
			th.pages.addSite(pa, site)
		}
		if th.pages.full() {
			pa = nil // the next get grows the table
		}
	}
	th.events += uint64(n)
	s.events += uint64(n)
	th.unwritten += uint64(n)
	if n < len(evs) {
		s.hold(-uint64(len(evs) - n)) // (holes: claimed, not events)
	}
}

// writeThread appends th's aggregates since the last write and resets them.
func (s *consumerState) writeThread(th *thread, now uint64) {
	if th.pages.n == 0 {
		return
	}
	if th.cutGen == s.cutGen && now >= th.nextCut {
		th.nextCut = s.cutAfter(now) // (the interval ends after the cut)
	}
	a := &trace.Agg{Serial: th.serial, TID: th.tid, From: th.from, To: now, Drops: th.drops}
	a.Pages, s.aggSites = th.pages.pages(s.aggPages[:0], s.aggSites)
	s.w.Agg(a) // (encodes a: the buffers are free again)
	s.aggPages = a.Pages[:0]
	if cap(s.aggPages) > 1<<20 {
		s.aggPages, s.aggSites = nil, nil // a burst: do not keep its memory
	}
	th.pages.reset()
	th.from = now
	s.inWriter += th.unwritten
	th.unwritten = 0
	if s.w.Buffered() > 8<<20 {
		s.flush()
	}
}

// writeAll writes every thread's aggregates, in the order of the threads'
// serials, not the map's, which differs from run to run: the same events,
// aggregated at the same times, give the same bytes (BenchmarkReplay's
// VPTRACE_REPLAY_OUT compares them).
func (s *consumerState) writeAll(now uint64) {
	s.order = s.order[:0]
	for serial := range s.threads {
		s.order = append(s.order, serial)
	}
	slices.Sort(s.order)
	for _, serial := range s.order {
		s.writeThread(s.threads[serial], now)
	}
}

// ---- site kinds from the registered objects ----

// The kinds come from the runtime's copies (C.vpt_kinds, one per
// registration of an object at an address), never from a descriptor:
// dlclose unmaps a library's descriptor while events of its sites may
// still wait in buffers.

type objRange struct {
	lo, hi uint64
	kinds  []abi.Kind
}

type kindTable struct {
	ranges []objRange // ascending lo
	nkinds uint32     // C.vpt_kinds entries read
	// cache holds sites looked up, direct-mapped by their record's index
	// (site/siteSize): a load and a compare for most events, where a map
	// cost a tenth of the aggregation (zstd's zstreamtest).
	cache *[kindCacheSize]kindCached
}

const kindCacheSize = 4096 // (power of 2)

type kindCached struct {
	site uint64 // 0: empty
	kind abi.Kind
}

func (k *kindTable) refresh() bool {
	n := min(atomic.LoadUint32((*uint32)(unsafe.Pointer(&C.vpt_nkinds))), maxObjs)
	if n == k.nkinds {
		return false
	}
	for i := k.nkinds; i < n; i++ {
		e := (*C.struct_vpt_kinds)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&C.vpt_kinds[i]))))
		ns := int(e.nsites)
		raw := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(e), C.VPT_KINDS_HDR)), ns)
		r := objRange{lo: uint64(e.sites), hi: uint64(e.sites) + uint64(ns)*siteSize, kinds: make([]abi.Kind, ns)}
		for j := range r.kinds {
			r.kinds[j] = abi.Kind(raw[j])
		}
		// A later entry at the same address is an object loaded where
		// an unloaded one was: it replaces the range.
		j := 0
		for j < len(k.ranges) && k.ranges[j].lo < r.lo {
			j++
		}
		if j < len(k.ranges) && k.ranges[j].lo == r.lo {
			old := k.ranges[j]
			k.ranges[j] = r
			if k.cache != nil {
				for i := range k.cache {
					if c := &k.cache[i]; c.site >= old.lo && c.site < old.hi {
						*c = kindCached{}
					}
				}
			}
		} else {
			k.ranges = append(k.ranges, objRange{})
			copy(k.ranges[j+1:], k.ranges[j:])
			k.ranges[j] = r
		}
	}
	k.nkinds = n
	return true
}

func (k *kindTable) lookup(site uint64) (abi.Kind, bool) {
	lo, hi := 0, len(k.ranges)
	for lo < hi {
		m := (lo + hi) / 2
		if k.ranges[m].lo <= site {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0, false
	}
	r := &k.ranges[lo-1]
	if site >= r.hi || (site-r.lo)%siteSize != 0 {
		return 0, false
	}
	return r.kinds[(site-r.lo)/siteSize], true
}

func (k *kindTable) kind(site uint64) abi.Kind {
	if k.cache == nil {
		k.cache = new([kindCacheSize]kindCached)
	}
	c := &k.cache[(site/siteSize)&(kindCacheSize-1)]
	if c.site == site {
		return c.kind
	}
	v, ok := k.lookup(site)
	if !ok && k.refresh() {
		v, ok = k.lookup(site)
	}
	if ok {
		*c = kindCached{site: site, kind: v}
	}
	return v
}

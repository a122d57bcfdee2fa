package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// archiveLimitBase and archiveLimitPerByte set the soft memory limit of an
// archive's rewrite (archiveMemoryLimit): 16 MiB plus four times the
// largest member. With the binary's own ~2-4 MB resident that keeps the
// peak under 4x the largest member + 20 MB, the bound issue 13 sets.
const (
	archiveLimitBase    = 16 << 20
	archiveLimitPerByte = 4
)

// liveMetric is the runtime's count of the heap the last collection
// marked live.
const liveMetric = "/gc/heap/live:bytes"

// archiveMemoryLimit holds the Go heap of an archive's rewrite under a
// soft limit chosen from its largest member, for as long as the live heap
// leaves the collector room under it, and returns the function that gives
// the previous limit back.
//
// Between members the live heap is about nothing and within one it is
// some 100-130x the member (libz's and liblua5.4's members: 5-6 MB at
// most): at GOGC 150 alone the heap grew to 2.5x that and the process
// to 21-24 MB, over the bound; under the limit 17-18 MB for the same CPU
// (paired). A member whose analysis needs more (libsqlite3's fts5.o: 26
// MB live) would make the collector run back to back under the limit
// (726 collections instead of some 40, 2.3x the CPU): after every
// collection a watcher reads the live heap and, once it exceeds half the
// limit, lifts the limit for the rest of the archive (GOGC governs, as
// without it). Nothing changes when the user set GOGC or GOMEMLIMIT.
func archiveMemoryLimit(largest int64) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := int64(math.MaxInt64)
	if largest < (math.MaxInt64-archiveLimitBase)/archiveLimitPerByte {
		limit = archiveLimitBase + archiveLimitPerByte*largest
	}
	old := debug.SetMemoryLimit(limit)
	w := &limitWatch{limit: limit, old: old}
	w.arm()
	return w.stop
}

// limitWatch lifts an archive's memory limit once the live heap needs
// more room than it leaves (archiveMemoryLimit).
type limitWatch struct {
	limit, old int64
	done       atomic.Bool // stopped, or the limit lifted
}

// arm makes the next collection run check: a sentinel unreachable from
// the start, whose cleanup runs once a collection has found it so.
func (w *limitWatch) arm() {
	runtime.AddCleanup(new(gcSentinel), func(w *limitWatch) { w.check() }, w)
}

// check lifts the limit if the last collection left more than half of it
// live, and otherwise arms the watch for the next collection.
func (w *limitWatch) check() {
	if w.done.Load() {
		return
	}
	s := []metrics.Sample{{Name: liveMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 && s[0].Value.Uint64() > uint64(w.limit/2) {
		if w.done.CompareAndSwap(false, true) {
			debug.SetMemoryLimit(w.old)
		}
		return
	}
	w.arm()
}

// stop gives the previous limit back (once) and ends the watch.
func (w *limitWatch) stop() {
	if w.done.CompareAndSwap(false, true) {
		debug.SetMemoryLimit(w.old)
	}
}

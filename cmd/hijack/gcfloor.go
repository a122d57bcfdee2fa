package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
)

// gcFloorBase and gcFloorPerByte set how much Go heap one object's rewrite
// may reach before its first collection (gcFloor): 12 MiB plus four times
// the object. With the binary's own ~6 MB resident that keeps the peak
// under 4x the input + 20 MB, the bound issue 13 sets.
const (
	gcFloorBase    = 12 << 20
	gcFloorPerByte = 4
)

// gcFloor lets the Go heap grow to about floor bytes before the first
// collection, and gives the default back (GOGC 100) from then on. A
// rewrite of one object allocates a few MB, and most of it lives until the
// output is written: at the default the collector ran 3 times during a
// 40 KB object's rewrite, to reclaim little, and its workers' threads and
// write barriers cost 0.89x the CPU over liblua5.4.a's members, one process
// each (paired), for the same peak RSS.
//
// The floor is a GOGC: the runtime's first heap goal is 4 MB x GOGC/100,
// and later goals the live heap x (1 + GOGC/100) until the first
// collection's end restores 100, so a large object's rewrite collects as
// before once past the floor. (A memory limit with GOGC off would count
// the runtime's own ~8 MB of mappings against the floor, and collect back
// to back under a live heap above it.)
//
// Nothing changes when the user set GOGC or GOMEMLIMIT, nor after the
// process's first call: the collector's settings are the process's, and a
// second floor before the first collection would take the first's setting
// for the one to give back.
func gcFloor(floor int64) {
	gcFloorOnce.Do(func() { setGCFloor(floor) })
}

var gcFloorOnce sync.Once

// runtimeHeapMinimum is the Go runtime's first heap goal at GOGC 100.
const runtimeHeapMinimum = 4 << 20

func setGCFloor(floor int64) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" || floor <= runtimeHeapMinimum {
		return
	}
	percent := debug.SetGCPercent(int(min(floor/(runtimeHeapMinimum/100), math.MaxInt32)))
	// The first collection, whatever starts it, finds the sentinel
	// unreachable and runs its cleanup, which restores the collector.
	sentinel := new(gcSentinel)
	runtime.AddCleanup(sentinel, func(percent int) { debug.SetGCPercent(percent) }, percent)
}

// gcSentinel is heap-allocated and large enough for an allocation of its
// own (the tiny allocator batches smaller pointer-free objects, which
// would tie the sentinel's reclamation to its neighbours').
type gcSentinel struct{ _ [64]byte }

// gcFloorFor returns the floor for rewriting an input of size bytes.
func gcFloorFor(size int64) int64 {
	if size > (math.MaxInt64-gcFloorBase)/gcFloorPerByte {
		return math.MaxInt64
	}
	return gcFloorBase + gcFloorPerByte*size
}

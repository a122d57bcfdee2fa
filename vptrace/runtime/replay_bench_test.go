package main

import (
	"bytes"
	"io"
	"os"
	"testing"

	"hijack/vptrace/trace"
)

// countWriter counts what the aggregator writes.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkReplay runs the consumer's aggregation and writing over the
// events of a real trace written with VPTRACE_RAW=1 (every event raw):
// VPTRACE_REPLAY=FILE go test -run - -bench Replay ./vptrace/runtime.
// Intervals end at the raw chunks' write times, as the consumer's clock
// would end them. It reports the events aggregated per second of the
// consumer's CPU and the bytes it wrote (per event, and in all). With
// VPTRACE_REPLAY_OUT=FILE the last run's output goes to FILE too: a change
// to the aggregation that must not change what it writes is checked by
// comparing that file before and after.
func BenchmarkReplay(b *testing.B) {
	path := os.Getenv("VPTRACE_REPLAY")
	if path == "" {
		b.Skip("VPTRACE_REPLAY=FILE (a trace written with VPTRACE_RAW=1) not set")
	}
	r, err := trace.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	type buf struct {
		serial uint64
		tid    uint32
		time   uint64
		evs    []event
	}
	var bufs []buf
	var kinds []objRange
	var nev int
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		switch x, _ := c.Decode(); x := x.(type) {
		case *trace.Object:
			k := objRange{lo: x.SitesAddr, hi: x.SitesAddr + uint64(len(x.Sites))*siteSize}
			for _, s := range x.Sites {
				k.kinds = append(k.kinds, s.Kind)
			}
			kinds = append(kinds, k)
		case *trace.Raw:
			bufs = append(bufs, buf{x.Serial, x.TID, x.Time, x.Events})
			nev += len(x.Events)
		}
	}
	if nev == 0 {
		b.Skipf("%s has no raw events (write it with VPTRACE_RAW=1)", path)
	}
	interval := uint64(r.Header.IntervalMS) * 1e6
	var out countWriter
	var saved bytes.Buffer
	b.ResetTimer()
	for it := range b.N {
		out.n = 0
		s := &consumerState{threads: map[uint64]*thread{}}
		s.kinds.ranges = sortRanges(kinds)
		var w io.Writer = &out
		if os.Getenv("VPTRACE_REPLAY_OUT") != "" && it == b.N-1 {
			w = io.MultiWriter(&out, &saved)
		}
		s.w = s.newWriter(w)
		next := interval
		for i := range bufs {
			bf := &bufs[i]
			if bf.time >= next {
				s.writeAll(bf.time)
				s.w.Flush()
				next = bf.time + interval
			}
			th := s.threads[bf.serial]
			if th == nil {
				th = newReplayThread(bf.serial, bf.tid)
				s.threads[bf.serial] = th
			}
			s.aggregate(th, bf.evs)
		}
		s.writeAll(next)
		s.w.Flush()
	}
	b.StopTimer()
	if p := os.Getenv("VPTRACE_REPLAY_OUT"); p != "" {
		if err := os.WriteFile(p, saved.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*float64(nev)/b.Elapsed().Seconds()/1e6, "Mev/s")
	b.ReportMetric(float64(out.n)/float64(nev), "B/event")
	b.ReportMetric(float64(out.n)/1e6, "MB")
}

func sortRanges(rs []objRange) []objRange {
	out := append([]objRange(nil), rs...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].lo < out[j-1].lo; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// newReplayThread is a consumer's thread as its first buffer makes it,
// in a replay without cuts.
func newReplayThread(serial uint64, tid uint32) *thread {
	return &thread{serial: serial, tid: tid, nextCut: ^uint64(0)}
}

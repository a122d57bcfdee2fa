package main

import (
	"testing"

	"hijack/vptrace/trace"
)

// BenchmarkAggregate measures the consumer's aggregation (events/s): a
// thread cycling over 64 pages (as the stub benchmark does), and a sweep
// over 1M distinct pages.
func BenchmarkAggregate(b *testing.B) {
	for _, c := range []struct {
		name          string
		pages, stride uint64
	}{{"cycle64", 64, 1}, {"sweep1M", 1 << 20, 1}, {"sweep256K", 1 << 18, 1}, {"stride64x64K", 1 << 16, 64}, {"stride512x64K", 1 << 16, 512}} {
		b.Run(c.name, func(b *testing.B) {
			const n = 2725
			evs := make([]event, n)
			site := uint64(0x1000)
			s := &consumerState{threads: map[uint64]*thread{}}
			s.kinds.ranges = []objRange{{lo: site, hi: site + 32, kinds: []trace.Kind{trace.KindRead}}}
			th := newReplayThread(0, 0) // (no cuts)
			var i uint64
			const per = 64 // buffers per iteration (make bench runs -benchtime 3x)
			b.SetBytes(per * n * evSize)
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				for range per {
					b.StopTimer()
					for k := range evs {
						evs[k] = event{Page1: 1 + 0x7f0000000 + (i%c.pages)*c.stride, Site: site, Time: i}
						i++
					}
					b.StartTimer()
					s.aggregate(th, evs)
					if th.pages.n > 1<<18 {
						th.pages.reset() // an interval ends
					}
				}
			}
			b.ReportMetric(float64(b.N*per*n)/b.Elapsed().Seconds()/1e6, "Mev/s")
		})
	}
}

package dataset

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"hijack/internal/tracegen"
)

// BenchmarkExport converts a synthetic trace (BENCH_TRACE, a file, or
// one of 32 MB made here) and reports page rows per second and the peak
// of the Go heap.
func BenchmarkExport(b *testing.B) {
	path := os.Getenv("BENCH_TRACE")
	if path == "" {
		path = filepath.Join(b.TempDir(), "bench.vpt")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tracegen.Generate(f, tracegen.Config{Seed: 1, Threads: 8, Bytes: 32 << 20, Pages: 4096, Working: 65536,
			Allocs: true, Raw: true, Notes: 10}); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	var rows int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(b.TempDir(), "ds")
		e, err := Create(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		st, err := e.AddRun(path, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Commit(); err != nil {
			b.Fatal(err)
		}
		rows += st.PageRows
	}
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(fi.Size())*float64(b.N)/b.Elapsed().Seconds()/1e6, "MB/s")
	b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heap-MiB")
}

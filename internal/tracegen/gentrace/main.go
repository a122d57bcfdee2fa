// Command gentrace writes a synthetic vptrace trace file (package
// tracegen), for benchmarks of the trace readers and exporters:
//
//	go run ./internal/tracegen/gentrace -size 10G -o big.vpt
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"hijack/internal/tracegen"
)

func main() {
	out := flag.String("o", "synthetic.vpt", "output file")
	size := flag.String("size", "100M", "stop once the file is this large (K, M, G suffixes)")
	threads := flag.Int("threads", 8, "threads")
	pages := flag.Int("pages", 4096, "pages per thread and interval")
	working := flag.Int("working", 65536, "pages of each of a thread's two heap arrays")
	seed := flag.Uint64("seed", 1, "random seed")
	compress := flag.Bool("compress", false, "write compressed chunks (AGGC in DEFLATE), as the runtime does")
	flag.Parse()
	n, err := parseSize(*size)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gentrace: -size: %v\n", err)
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gentrace: %v\n", err)
		os.Exit(1)
	}
	t0 := time.Now()
	st, err := tracegen.Generate(f, tracegen.Config{Seed: *seed, Threads: *threads, Bytes: n, Pages: *pages,
		Working: *working, Allocs: true, Raw: true, Notes: 100, Compress: *compress})
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gentrace: %s: %v\n", *out, err)
		os.Exit(1)
	}
	fmt.Printf("%s: %d bytes, %d intervals, %d page records, %d events, %d allocation events, %.1fs\n",
		*out, st.Bytes, st.Intervals, st.PageRecs, st.Events, st.AllocEvent, time.Since(t0).Seconds())
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	return int64(n * float64(mult)), nil
}

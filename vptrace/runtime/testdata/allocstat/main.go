// Command allocstat prints how many allocation events (ALLOCS records)
// the trace files given hold, and how many the runtime lost: for
// scripts/bench-allocs.sh.
package main

import (
	"fmt"
	"os"

	"hijack/vptrace/trace"
)

func main() {
	var events, lost uint64
	for _, path := range os.Args[1:] {
		r, err := trace.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		maxLost := map[uint64]uint64{}
		for c, err := r.Next(); err == nil; c, err = r.Next() {
			if c.Type != trace.ChunkAllocs {
				continue
			}
			v, err := c.Decode()
			if err != nil {
				fmt.Fprintln(os.Stderr, path, err)
				os.Exit(1)
			}
			a := v.(*trace.Allocs)
			events += uint64(len(a.Events))
			key := a.Serial<<32 | uint64(a.TID)
			maxLost[key] = max(maxLost[key], a.Lost)
		}
		r.Close()
		for _, n := range maxLost {
			lost += n
		}
	}
	fmt.Printf("%d %d\n", events, lost)
}

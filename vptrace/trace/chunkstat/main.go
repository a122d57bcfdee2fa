// Command chunkstat prints a trace file's bytes by chunk type: the
// chunks as stored (a DEFLATE chunk counts under the type it holds), their
// payloads uncompressed, and what an uncompressed 1.3 writer would have
// stored for them (AGGC as AGG).
//
//	go run ./vptrace/trace/chunkstat TRACE...
package main

import (
	"fmt"
	"io"
	"os"
	"sort"

	"hijack/vptrace/trace"
)

type row struct {
	n, packed     int
	stored, plain int64
	v13, events   int64
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: chunkstat TRACE...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := stat(path); err != nil {
			fmt.Fprintln(os.Stderr, "chunkstat:", err)
			os.Exit(1)
		}
	}
}

func stat(path string) error {
	r, err := trace.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	rows := map[trace.ChunkType]*row{}
	var buf []byte
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		x := rows[c.Type]
		if x == nil {
			x = &row{}
			rows[c.Type] = x
		}
		x.n++
		if c.Packed {
			x.packed++
		}
		x.stored += int64(c.Stored)
		x.plain += int64(len(c.Payload)) + 16
		v13 := int64(len(c.Payload)) + 16
		switch c.Type {
		case trace.ChunkAggCols:
			v, err := c.Decode()
			if err != nil {
				return err
			}
			a := v.(*trace.Agg)
			buf = a.AppendPayload(buf[:0])
			v13 = int64(len(buf)) + 16
			for _, p := range a.Pages {
				x.events += int64(p.Events)
			}
		case trace.ChunkAgg:
			v, err := c.Decode()
			if err != nil {
				return err
			}
			for _, p := range v.(*trace.Agg).Pages {
				x.events += int64(p.Events)
			}
		case trace.ChunkRaw:
			v, err := c.Decode()
			if err != nil {
				return err
			}
			x.events += int64(len(v.(*trace.Raw).Events))
		}
		x.v13 += v13
	}
	var types []trace.ChunkType
	var tot row
	for t, x := range rows {
		types = append(types, t)
		tot.n += x.n
		tot.packed += x.packed
		tot.stored += x.stored
		tot.plain += x.plain
		tot.v13 += x.v13
		tot.events += x.events
	}
	sort.Slice(types, func(i, j int) bool { return rows[types[i]].stored > rows[types[j]].stored })
	fi, _ := os.Stat(path)
	fmt.Printf("%s: %d bytes\n", path, fi.Size())
	fmt.Printf("%-12s %8s %8s %14s %14s %14s %12s\n", "type", "chunks", "packed", "stored", "uncompressed", "as_1.3", "events")
	for _, t := range types {
		x := rows[t]
		fmt.Printf("%-12s %8d %8d %14d %14d %14d %12d\n", t, x.n, x.packed, x.stored, x.plain, x.v13, x.events)
	}
	fmt.Printf("%-12s %8d %8d %14d %14d %14d %12d\n", "total", tot.n, tot.packed, tot.stored, tot.plain, tot.v13, tot.events)
	if r.Damaged > 0 || r.Truncated {
		fmt.Printf("damaged %d (%d bytes skipped), truncated %v\n", r.Damaged, r.Skipped, r.Truncated)
	}
	return nil
}

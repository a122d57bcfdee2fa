package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"hijack/vptrace/owner"
	"hijack/vptrace/trace"
)

// report --blocks: the block counts of objects of the blockcount preset.

// blockRow is one block's count in one thread ("all": summed over threads).
type blockRow struct {
	thread string // kernel TID, or "all"
	info   trace.BlockInfo
	count  uint64
}

func (r *blockRow) function() string {
	if !r.info.Known() {
		return r.info.Where()
	}
	return owner.Demangle(r.info.Function)
}

func (r *blockRow) offset() string {
	if !r.info.Known() {
		return ""
	}
	return fmt.Sprintf("%#x", r.info.Off)
}

// score is the block's static loop score (the record holds it x 1e6).
func (r *blockRow) score() string {
	return strconv.FormatFloat(float64(r.info.Score)/1e6, 'f', -1, 64)
}

// threadRows lists the (thread, block) counts of the selected threads,
// the hottest first (ties: ascending TID, then block).
func threadRows(tr *trace.Trace, o *reportOpts) []blockRow {
	var rows []blockRow
	for _, th := range o.threads(tr) {
		tid := strconv.FormatUint(uint64(th.TID), 10)
		for _, st := range th.SortedBlocks() {
			rows = append(rows, blockRow{thread: tid, info: tr.Block(st.ID), count: st.Count})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].count > rows[j].count })
	return rows
}

// totalRows lists every block's count summed over the threads.
func totalRows(tr *trace.Trace) []blockRow {
	var rows []blockRow
	for _, st := range tr.BlockTotals() {
		rows = append(rows, blockRow{thread: "all", info: tr.Block(st.ID), count: st.Count})
	}
	return rows
}

// noBlocks is the error for traces without any block count.
func noBlocks(paths []string) error {
	return fmt.Errorf("%s: no block counts (no object of the program was instrumented with the blockcount preset)", strings.Join(paths, ", "))
}

func reportBlocks(w io.Writer, traces []*trace.Trace, o *reportOpts) error {
	switch {
	case o.csv:
		return reportBlocksCSV(w, traces, o)
	case o.json:
		return reportBlocksJSON(w, traces, o)
	}
	for i, tr := range traces {
		if i > 0 {
			fmt.Fprintln(w)
		}
		reportBlocksText(w, tr, o)
	}
	return nil
}

func reportBlocksText(w io.Writer, tr *trace.Trace, o *reportOpts) {
	fmt.Fprintf(w, "trace %s: pid %d", tr.Path, tr.Header.PID)
	if tr.Header.Flags&trace.HeaderForked != 0 {
		fmt.Fprintf(w, " (fork child of %d)", tr.Header.PPID)
	}
	fmt.Fprintf(w, ", %s\n", strings.Join(tr.Header.Cmdline, " "))
	if !tr.HasBlocks() {
		fmt.Fprintln(w, "no block counts (no object instrumented with the blockcount preset)")
		return
	}
	objs, nblocks, counted, execs := blockObjects(tr)
	loads := ""
	if len(tr.BlockObjects) > objs {
		loads = fmt.Sprintf(" (%d loads)", len(tr.BlockObjects))
	}
	fmt.Fprintf(w, "%d blockcount object(s)%s, %d blocks; %d thread(s) counted %d block executions\n",
		objs, loads, nblocks, counted, execs)
	rows := threadRows(tr, o)
	if o.thread < 0 && counted > 1 {
		rows = append(limit(totalRows(tr), o.top), limit(rows, o.top)...)
	} else {
		rows = limit(rows, o.top)
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "no block ran")
		return
	}
	fmt.Fprintf(w, "\n%8s  %-32s %8s %14s %10s %8s\n", "thread", "function", "offset", "count", "loop_depth", "score")
	for _, r := range rows {
		fmt.Fprintf(w, "%8s  %-32s %8s %14d %10d %8s\n", r.thread, r.function(), r.offset(), r.count, r.info.LoopDepth, r.score())
	}
}

// blockObjects counts a trace's blockcount objects (an object loaded more
// than once, the same id, once) and their blocks, the threads with counts
// and their block executions.
func blockObjects(tr *trace.Trace) (objs, blocks, threads int, execs uint64) {
	seen := map[uint64]bool{}
	for _, ob := range tr.BlockObjects {
		if !seen[ob.ID] {
			seen[ob.ID] = true
			objs++
			blocks += len(ob.Blocks)
		}
	}
	for _, th := range tr.Threads {
		if len(th.Blocks) > 0 {
			threads++
			execs += th.BlockExecs
		}
	}
	return objs, blocks, threads, execs
}

var blocksCSVHeader = []string{"thread", "function", "offset", "count", "loop_depth", "score"}

func reportBlocksCSV(w io.Writer, traces []*trace.Trace, o *reportOpts) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(blocksCSVHeader); err != nil {
		return err
	}
	for _, tr := range traces {
		rows := threadRows(tr, o)
		if o.topSet {
			rows = limit(rows, o.top)
		}
		for _, r := range rows {
			rec := []string{r.thread, r.function(), r.offset(), u(r.count), strconv.Itoa(int(r.info.LoopDepth)), r.score()}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

type jsonBlock struct {
	Thread    string  `json:"thread"` // kernel TID, or "all"
	Function  string  `json:"function"`
	Offset    string  `json:"offset"`
	Count     uint64  `json:"count"`
	LoopDepth uint16  `json:"loop_depth"`
	Score     float64 `json:"score"`
	Insns     uint16  `json:"insns"`
	Object    string  `json:"object,omitempty"`
}

func reportBlocksJSON(w io.Writer, traces []*trace.Trace, o *reportOpts) error {
	type jsonBlocksTrace struct {
		Path    string      `json:"path"`
		PID     uint32      `json:"pid"`
		Objects []string    `json:"objects"`
		Blocks  []jsonBlock `json:"blocks"`
		Totals  []jsonBlock `json:"totals"`
	}
	out := struct {
		Traces []jsonBlocksTrace `json:"traces"`
	}{Traces: []jsonBlocksTrace{}}
	conv := func(rows []blockRow) []jsonBlock {
		js := []jsonBlock{}
		for _, r := range rows {
			j := jsonBlock{Thread: r.thread, Function: r.function(), Offset: r.offset(), Count: r.count,
				LoopDepth: r.info.LoopDepth, Score: float64(r.info.Score) / 1e6, Insns: r.info.Insns}
			if r.info.Known() {
				j.Object = r.info.Object.Name()
			}
			js = append(js, j)
		}
		return js
	}
	for _, tr := range traces {
		jt := jsonBlocksTrace{Path: tr.Path, PID: tr.Header.PID, Objects: []string{}}
		for _, ob := range tr.BlockObjects {
			jt.Objects = append(jt.Objects, ob.Name())
		}
		rows := threadRows(tr, o)
		totals := totalRows(tr)
		if o.topSet {
			rows, totals = limit(rows, o.top), limit(totals, o.top)
		}
		jt.Blocks, jt.Totals = conv(rows), conv(totals)
		out.Traces = append(out.Traces, jt)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

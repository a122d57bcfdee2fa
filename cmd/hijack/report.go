package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"hijack/vptrace/owner"
	"hijack/vptrace/trace"
)

const reportUsage = `Usage: hijack report [--csv | --json] [--thread TID] [--top N] TRACE|DIR...
       hijack report --blocks [--csv | --json] [--thread TID] [--top N] TRACE...

Summarises vptrace trace files (what a program linked with the vptrace
runtime writes to VPTRACE_OUT): per thread, the pages it touched, its
working set, reads and writes, the busiest pages with the function and
instruction that touched them and what each page held (its owner), totals
by owner and by function, and the allocation sites (allocator, caller,
objects, bytes, pages, events). Every process image writes its own file (a
fork child, and the program an exec starts, too: see vptrace.h for the
names); give several files, or directories (every trace file below them:
the processes of a job, the runs of a sweep), to see them all: a section
per process, then all processes side by side with their totals. A file
holding more than one process's trace is refused.

Shared pages: the pages more than one thread of a process touched, and
the addresses more than one process touched (the first --top of each),
with the threads (PID/TID) and the owner. An
address in two processes is the same memory only where it is shared (a
MAP_SHARED mapping, shared memory) or was inherited by fork and not yet
written (copy on write gives the writer its own page): elsewhere equal
addresses in two processes hold different data (their layouts agree,
without or despite ASLR).

A trace's run is its name in the report: a file's base name, a file found
under a directory its path relative to that directory, without .vpt
("sweep/t4/run1"; "~2" is added to a name taken twice). Objects of the blockcount preset add to the
same files how often each of their basic blocks ran, per thread: --blocks
reports those.

A page's owner is named by its address, whichever instruction touched it
(the runtime records allocations, mappings and each thread's stack and
TLS; the mapped files' own symbol tables name globals, no -g needed):
  global/static variable   its name (C++ demangled); unnamed read-only
                           data "const", else the section (".got")
  library data             LIB:NAME ("libc.so.6:stdout"), segment lib
  heap block               ALLOCATOR@FUNC+0xOFF: the allocator and the
                           return address of its call ("malloc@grid+0x2c",
                           "new[]@main+0x91"); a call made inside a
                           library on the program's behalf names the
                           library function (strdup, fopen's buffer...)
  mapping the program made a file's path; anonymous: mmap@FUNC+0xOFF
  stack, TLS               stack:TID, tls:TID
  other                    anon (an anonymous mapping no call explains),
                           unknown
A page whose block was freed and reused by another has one row per owner
(--csv), split at the time of the first event under each. Traces of
runtimes before format 1.3 name only globals their instructions named.

  (default)       readable tables
  --csv           one row per (thread, page):
                  thread,page,reads,writes,events,first_ns,last_ns,sites,
                  top_function,top_insn,top_symbol,segment,object,pid,
                  owner,run (thread: kernel TID; page: 0x-prefixed page
                  address; segment: global, heap, stack, tls, mmap, lib
                  or unknown; a page that changed owners has a row per
                  owner)
  --json          everything, including every page with its sites and
                  owner(s), the allocation sites, each trace's run, the
                  totals over all traces (merged) and every shared page
  --thread TID    only this thread (kernel TID)
  --top N         pages, functions and variables per thread in tables
                  (default 10; 0: all)
  --heatmap FILE  pages x time image (.png or .svg), per --thread or all,
                  --kind reads|writes|all (hijack report --heatmap x.png -h)
  --perfetto FILE  a timeline of the traces in FILE (Chrome trace event
                  JSON: ui.perfetto.dev, trace_processor, chrome://tracing
                  open it): a process per trace, per thread counter tracks
                  of each interval's working set (distinct pages), pages
                  touched (events), reads and writes; instant events for
                  notes (vptrace_note), warnings, fork, exec, thread start
                  and exit. Times are microseconds since the earliest
                  trace start (fork children and runs line up). Each file
                  is read once, keeping a few numbers per thread and
                  interval, never the pages
  --parquet DIR   the traces as a Parquet dataset in DIR: tables pages (a
                  row per thread, page and interval), threads, sites,
                  allocations, regions, notes and runs, partitioned by run;
                  TRACE may be a directory of traces; hijack query DIR
                  'SQL' asks it questions (hijack report --parquet DIR -h)
  --blocks        block counts instead (objects of the blockcount preset):
                  how often each basic block ran, per thread, the hottest
                  first, with its function, offset (of its first
                  instruction in the original function), loop depth and
                  static loop score; the table adds each block's total
                  over the threads (thread "all"), --top rows of each
                  (default 10; 0: all). --csv: one row per (thread, block)
                  with a nonzero count, the hottest first (all of them
                  unless --top is given):
                  thread,function,offset,count,loop_depth,score
                  --json: the same rows and the totals. A trace without
                  block counts is an error (exit 1)

Counts are events: in the default mode an event is "this instruction moved
to this page, which the thread had not recorded lately for this kind of
access", in exact mode one access (see vptrace/FORMAT.md). A file
still being written, left by a killed process, or cut short by a write
error (a full disk) is read up to its last complete chunk; whatever the
output, what is missing is said on stderr ("hijack: FILE: warning: ...").

Memory: the tables, --csv and --json hold every (thread, page) of all the
traces given at once, 0.5 to 1 KB each (zstd's zstreamtest, 740,000 of
them: 450 MB); --perfetto and --parquet read each file once, chunk by
chunk, in bounded memory (--perfetto: a few numbers per thread and
interval).

Exit status: 0 reported (warnings or not), 1 a file is unreadable, not a
trace, holds more than one process, or the report cannot be written,
2 bad options.
`

type reportOpts struct {
	csv, json bool
	blocks    bool   // --blocks: block counts
	thread    int64  // -1: all
	perfetto  string // --perfetto FILE
	top       int
	topSet    bool // --top given

	runs   []string                         // the traces' run names (expandTraces), in order
	owners map[*trace.Trace]*owner.Resolver // by trace, made on first use
	names  map[string]string                // demangled names
}

func cmdReport(args []string, stdout, stderr io.Writer) int {
	if status, ok := reportHeatmap(args, stdout, stderr); ok {
		return status
	}
	if status, ok := reportParquet(args, stdout, stderr); ok {
		return status
	}
	fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o reportOpts
	fs.BoolVar(&o.csv, "csv", false, "CSV, one row per (thread, page)")
	fs.BoolVar(&o.json, "json", false, "JSON")
	fs.Int64Var(&o.thread, "thread", -1, "only this kernel TID")
	fs.IntVar(&o.top, "top", 10, "rows per table")
	fs.BoolVar(&o.blocks, "blocks", false, "block counts (blockcount preset)")
	fs.StringVar(&o.perfetto, "perfetto", "", "timeline (Chrome trace event JSON) to FILE")
	help := fs.BoolP("help", "h", false, "help")
	if err := fs.Parse(reportSingleDash(args)); err != nil {
		return usageError(stderr, "report", "%v", err)
	}
	if *help {
		fmt.Fprint(stdout, reportUsage)
		return 0
	}
	if fs.NArg() == 0 {
		return usageError(stderr, "report", "no trace file given")
	}
	if o.csv && o.json {
		return usageError(stderr, "report", "--csv and --json exclude each other")
	}
	if o.perfetto != "" && (o.csv || o.json || o.blocks) {
		return usageError(stderr, "report", "--perfetto excludes --csv, --json and --blocks")
	}
	if o.top < 0 {
		return usageError(stderr, "report", "--top must be >= 0, not %d", o.top)
	}
	o.topSet = fs.Changed("top")
	inputs, err := expandTraces(fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "hijack: %s\n", oneLine(err.Error()))
		return exitFailure
	}
	if o.perfetto != "" {
		if err := reportPerfetto(o.perfetto, inputs, &o, stderr); err != nil {
			fmt.Fprintf(stderr, "hijack: report --perfetto: %s\n", oneLine(err.Error()))
			return exitFailure
		}
		return exitOK
	}
	var traces []*trace.Trace
	for _, in := range inputs {
		tr, err := loadTrace(in.Path, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "hijack: %s\n", oneLine(err.Error()))
			return exitFailure
		}
		traces = append(traces, tr)
		o.runs = append(o.runs, in.Run)
	}
	traces, lerr := withParents(traces)
	if lerr != nil {
		fmt.Fprintf(stderr, "hijack: %s\n", oneLine(lerr.Error()))
		return exitFailure
	}
	if o.thread >= 0 {
		found := false
		for _, tr := range traces {
			found = found || tr.Thread(uint32(o.thread)) != nil
		}
		if !found {
			var tids []string
			for _, tr := range traces {
				for _, th := range tr.Threads {
					tids = append(tids, strconv.FormatUint(uint64(th.TID), 10))
				}
			}
			fmt.Fprintf(stderr, "hijack: %s: no thread %d (threads: %s)\n", strings.Join(fs.Args(), ", "), o.thread, strings.Join(tids, " "))
			return 1
		}
	}
	if o.blocks {
		has := false
		for _, tr := range traces {
			has = has || tr.HasBlocks()
		}
		if !has {
			fmt.Fprintf(stderr, "hijack: %s\n", oneLine(noBlocks(fs.Args()).Error()))
			return exitFailure
		}
	}
	w := bufio.NewWriter(stdout)
	switch {
	case o.blocks:
		err = reportBlocks(w, traces, &o)
	case o.csv:
		err = reportCSV(w, traces, &o)
	case o.json:
		err = reportJSON(w, traces, &o)
	default:
		for i, tr := range traces {
			if i > 0 {
				fmt.Fprintln(w)
			}
			reportText(w, tr, &o)
		}
		if len(traces) > 1 {
			reportMerged(w, traces, &o)
		}
		reportShared(w, traces, &o)
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fmt.Fprintf(stderr, "hijack: report: writing the report: %s\n", oneLine(err.Error()))
		return exitFailure
	}
	for _, tr := range traces {
		if res := o.owners[tr]; res != nil {
			for _, p := range res.Problems() {
				fmt.Fprintf(stderr, "hijack: %s: warning: cannot read the symbols of a mapped file, its addresses are named by the mapping: %s\n", tr.Path, oneLine(p))
			}
		}
	}
	return exitOK
}

// loadTrace reads a trace file and says on stderr, one line each, what is
// wrong with it: every output (tables, CSV, JSON, heatmap) warns the same
// way, and reports the rest. The error names path.
func loadTrace(path string, stderr io.Writer) (*trace.Trace, error) {
	tr, err := trace.Load(path)
	if err != nil {
		return nil, errors.New(reportErr(path, err))
	}
	for _, w := range warnings(tr) {
		fmt.Fprintf(stderr, "hijack: %s: warning: %s\n", path, oneLine(w))
	}
	return tr, nil
}

// reportErr words a loading error for the one-line message.
func reportErr(path string, err error) string {
	msg := err.Error()
	if !strings.Contains(msg, path) {
		msg = path + ": " + msg
	}
	return msg
}

// writeErr describes the runtime's write error.
func writeErr(tr *trace.Trace) string {
	if tr.WriteErrno == 0 {
		return "write error"
	}
	return fmt.Sprintf("write error (%v, errno %d)", syscall.Errno(tr.WriteErrno), tr.WriteErrno)
}

// lostStr describes an END flagged EndLost.
func lostStr(e *trace.End) string {
	when := "at exit"
	if e.Flags&trace.EndExec != 0 {
		when = "before its exec"
	}
	return fmt.Sprintf("the aggregator stopped answering %s (VPTRACE_EXIT_TIMEOUT_MS) holding %d events it had not written: they are missing", when, e.Lost)
}

// warnings lists what makes a trace incomplete or doubtful. A write error
// is said instead of the missing end record it causes: the process was
// not killed.
func warnings(tr *trace.Trace) []string {
	var ws []string
	switch {
	case tr.WriteError:
		ws = append(ws, fmt.Sprintf("incomplete trace: %s: the runtime could not write all of it, events are missing", writeErr(tr)))
	case tr.End != nil && tr.End.Flags&trace.EndLost != 0:
		ws = append(ws, "incomplete trace: "+lostStr(tr.End))
	case tr.End == nil:
		ws = append(ws, "incomplete trace: no end record (the process is still running, was killed, or its runtime could not finish the file): its last events may be missing")
	}
	if tr.Truncated {
		ws = append(ws, fmt.Sprintf("the last %d bytes (an unfinished chunk) ignored", tr.Skipped))
	}
	if _, _, _, _, drops := tr.Totals(); drops > 0 {
		ws = append(ws, fmt.Sprintf("%d events dropped (signal handlers that interrupted the runtime with the buffer full, or threads without a buffer; per thread in the drops column): pages may be missing, counts low", drops))
	}
	if tr.Damaged > 0 {
		ws = append(ws, fmt.Sprintf("%d damaged region(s), %d bytes skipped", tr.Damaged, tr.Skipped))
	}
	if tr.AllocsLost > 0 {
		ws = append(ws, fmt.Sprintf("%d allocation events lost: the owners of some heap pages may be unknown or wrong", tr.AllocsLost))
	}
	for _, n := range tr.Notes {
		if n.Kind == trace.NoteWarning && strings.HasPrefix(n.Text, "allocation tracking") {
			ws = append(ws, n.Text)
		}
	}
	return append(ws, tr.Errors...)
}

// reportSingleDash accepts -csv, -json, -thread, -top like --csv ...
func reportSingleDash(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		for _, long := range []string{"csv", "json", "thread", "top", "blocks", "perfetto", "help"} {
			if a == "-"+long || strings.HasPrefix(a, "-"+long+"=") {
				a = "-" + a
			}
		}
		out[i] = a
	}
	return out
}

func (o *reportOpts) threads(tr *trace.Trace) []*trace.Thread {
	if o.thread < 0 {
		return tr.Threads
	}
	if th := tr.Thread(uint32(o.thread)); th != nil {
		return []*trace.Thread{th}
	}
	return nil
}

// ---- analysis shared by the formats ----

type pageRow struct {
	v       pageView
	top     trace.Site // the site with the most events
	sym     string     // the variable its instructions named with the most events ("" if none)
	nsites  int
	segment string // owner.Seg*
	owner   string // what the page held (owner.Owner.Name)
}

func pageInfo(tr *trace.Trace, res *owner.Resolver, v pageView, o *reportOpts) pageRow {
	r := pageRow{v: v, nsites: len(v.sites)}
	r.top = o.site(tr, v.topSite())
	syms := map[string]uint64{}
	for _, s := range v.sites {
		if site := o.site(tr, s.Site); site.Symbol != "" {
			syms[site.Symbol] += s.Count
		}
	}
	var best uint64
	for name, n := range syms {
		if n > best || (n == best && name < r.sym) {
			r.sym, best = name, n
		}
	}
	r.segment, r.owner = ownerOf(res, v, r.top)
	return r
}

type group struct {
	Name   string `json:"name"`
	Object string `json:"object,omitempty"`
	Events uint64 `json:"events"`
	Reads  uint64 `json:"reads"`
	Writes uint64 `json:"writes"`
	Pages  int    `json:"pages"`
}

// groups totals a thread's events by function and by variable (sites
// naming no variable count under their segment: [unknown], [stack], ...).
func groups(tr *trace.Trace, th *trace.Thread, o *reportOpts) (byFunc, bySym []group) {
	type acc struct {
		g     group
		pages map[uint64]bool
	}
	fm, sm := map[string]*acc{}, map[string]*acc{}
	add := func(m map[string]*acc, key, obj string, k trace.Kind, n, page uint64) {
		a := m[key]
		if a == nil {
			a = &acc{g: group{Name: key, Object: obj}, pages: map[uint64]bool{}}
			m[key] = a
		}
		a.g.Events += n
		if k&trace.KindRead != 0 {
			a.g.Reads += n
		}
		if k&trace.KindWrite != 0 {
			a.g.Writes += n
		}
		a.pages[page] = true
	}
	for _, p := range th.Pages {
		for _, sc := range p.Sites {
			s := o.site(tr, sc.Site)
			fn, obj, sym := "?", "", "?"
			if s.Known() {
				fn, obj = s.Function, s.Object.Name()
				sym = s.Symbol
				if sym == "" {
					sym = "[" + s.Seg.String() + "]"
				}
			}
			add(fm, fn, obj, s.Kind, sc.Count, p.Page)
			add(sm, sym, "", s.Kind, sc.Count, p.Page)
		}
	}
	flat := func(m map[string]*acc) []group {
		out := make([]group, 0, len(m))
		for _, a := range m {
			a.g.Pages = len(a.pages)
			out = append(out, a.g)
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Events != out[j].Events {
				return out[i].Events > out[j].Events
			}
			return out[i].Name < out[j].Name
		})
		return out
	}
	return flat(fm), flat(sm)
}

func topPages(th *trace.Thread) []*trace.Page {
	ps := th.SortedPages()
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Events > ps[j].Events })
	return ps
}

func limit[T any](s []T, n int) []T {
	if n > 0 && len(s) > n {
		return s[:n]
	}
	return s
}

func bytesStr(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func nsStr(ns uint64) string {
	return time.Duration(ns).Round(time.Microsecond).String()
}

// status describes how complete the file is.
func status(tr *trace.Trace) string {
	var parts []string
	switch {
	case tr.WriteError:
		parts = append(parts, fmt.Sprintf("INCOMPLETE: %s: the runtime could not write all of it", writeErr(tr)))
	case tr.End != nil && tr.End.Flags&trace.EndLost != 0:
		parts = append(parts, "INCOMPLETE: "+lostStr(tr.End))
	case tr.End != nil && tr.End.Flags&trace.EndExec != 0:
		parts = append(parts, fmt.Sprintf("complete up to its exec of %s (the new image writes another file)", tr.Exec))
	case tr.End != nil && tr.End.Flags&trace.EndFallback != 0:
		parts = append(parts, "complete (the aggregator timed out at exit; the rest was written raw)")
	case tr.End != nil:
		parts = append(parts, "complete")
	default:
		parts = append(parts, "INCOMPLETE: no end record (the process is still running, was killed, or its runtime could not finish the file)")
	}
	if tr.Truncated {
		parts = append(parts, fmt.Sprintf("last %d bytes (an unfinished chunk) ignored", tr.Skipped))
	}
	if tr.Damaged > 0 {
		parts = append(parts, fmt.Sprintf("%d damaged region(s) skipped", tr.Damaged))
	}
	return strings.Join(parts, "; ")
}

func duration(tr *trace.Trace) uint64 {
	var d uint64
	if tr.End != nil {
		d = tr.End.Time
	}
	for _, th := range tr.Threads {
		d = max(d, th.Last)
	}
	return d
}

// ---- text ----

func reportText(w io.Writer, tr *trace.Trace, o *reportOpts) {
	h := tr.Header
	res := o.resolver(tr)
	start := time.Unix(0, int64(h.StartUnix)).UTC().Format("2006-01-02 15:04:05 UTC")
	cmd := strings.Join(h.Cmdline, " ")
	if cmd == "" {
		cmd = h.Program
	}
	fmt.Fprintf(w, "trace %s: pid %d", tr.Path, h.PID)
	if h.Flags&trace.HeaderForked != 0 {
		fmt.Fprintf(w, " (fork child of %d)", h.PPID)
	}
	fmt.Fprintf(w, ", %s, started %s, %s\n", cmd, start, nsStr(duration(tr)))
	fmt.Fprintf(w, "status: %s\n", status(tr))
	pages, events, reads, writes, drops := tr.Totals()
	nsites := 0
	for _, ob := range tr.Objects {
		nsites += len(ob.Sites)
	}
	fmt.Fprintf(w, "%d object(s), %d sites; %d thread(s); %d (thread, page) pairs, %s; %d events (%d reads, %d writes)",
		len(tr.Objects), nsites, len(tr.Threads), pages, bytesStr(pages*trace.PageSize), events, reads, writes)
	if drops > 0 {
		fmt.Fprintf(w, "; %d events DROPPED", drops)
	}
	fmt.Fprintln(w)
	if tr.AllocEvents > 0 || len(tr.Maps) > 0 {
		fmt.Fprintf(w, "owners: %d allocation events, %d regions (heap blocks, mappings, stacks, TLS), %d mapping snapshots",
			tr.AllocEvents, len(tr.Regions), len(tr.Maps))
		if tr.AllocsLost > 0 {
			fmt.Fprintf(w, "; %d allocation events LOST", tr.AllocsLost)
		}
		fmt.Fprintln(w)
	} else if pages > 0 {
		fmt.Fprintln(w, "owners: no allocation events or mappings in the trace (written before format 1.3): pages named by the instruction that touched them")
	}
	if tr.HasBlocks() {
		objs, _, _, execs := blockObjects(tr)
		fmt.Fprintf(w, "block counts: %d blockcount object(s), %d block executions (hijack report --blocks)\n", objs, execs)
	}
	for _, n := range tr.Notes {
		kind := map[uint32]string{trace.NoteText: "note", trace.NoteStart: "start", trace.NoteStop: "stop",
			trace.NoteWarning: "WARNING", trace.NoteFork: "fork", trace.NoteExec: "exec", trace.NoteExecFailed: "exec-err"}[n.Kind]
		fmt.Fprintf(w, "  %10s  %-7s tid %d: %s\n", nsStr(n.Time), kind, n.TID, n.Text)
	}
	ths := o.threads(tr)
	if len(ths) == 0 {
		fmt.Fprintln(w, "no events")
		return
	}
	fmt.Fprintf(w, "\n%8s  %-15s %8s %11s %10s %10s %10s %6s %10s %10s\n",
		"TID", "name", "pages", "working set", "events", "reads", "writes", "drops", "first", "last")
	for _, th := range ths {
		fmt.Fprintf(w, "%8d  %-15s %8d %11s %10d %10d %10d %6d %10s %10s\n", th.TID, th.Name, len(th.Pages),
			bytesStr(th.WorkingSet()), th.Events, th.Reads, th.Writes, th.Drops, nsStr(th.First), nsStr(th.Last))
	}
	for _, th := range ths {
		if len(th.Pages) == 0 {
			continue
		}
		name := ""
		if th.Name != "" {
			name = " (" + th.Name + ")"
		}
		fmt.Fprintf(w, "\nthread %d%s: %d pages, %s\n", th.TID, name, len(th.Pages), bytesStr(th.WorkingSet()))
		fmt.Fprintf(w, "  %-18s %9s %9s %9s  %-7s %-30s %s\n", "page", "events", "reads", "writes", "segment", "function+insn", "owner")
		for _, p := range limit(topPages(th), o.top) {
			r := pageInfo(tr, res, wholeView(p), o)
			fmt.Fprintf(w, "  %#-18x %9d %9d %9d  %-7s %-30s %s\n", p.Addr(), p.Events, p.Reads, p.Writes,
				r.segment, r.top.Where(), r.owner)
		}
		byFunc, _ := groups(tr, th, o)
		fmt.Fprintf(w, "  %-34s %9s %9s %9s %8s\n", "by owner", "events", "reads", "writes", "pages")
		for _, g := range limit(ownerGroups(tr, res, th, o), o.top) {
			fmt.Fprintf(w, "    %-32s %9d %9d %9d %8d\n", g.Name, g.Events, g.Reads, g.Writes, g.Pages)
		}
		fmt.Fprintf(w, "  %-34s %9s %9s %9s %8s\n", "by function", "events", "reads", "writes", "pages")
		for _, g := range limit(byFunc, o.top) {
			fmt.Fprintf(w, "    %-32s %9d %9d %9d %8d\n", g.Name, g.Events, g.Reads, g.Writes, g.Pages)
		}
	}
	reportAllocSites(w, tr, res, o)
}

// ---- CSV ----

var csvHeader = []string{"thread", "page", "reads", "writes", "events", "first_ns", "last_ns", "sites",
	"top_function", "top_insn", "top_symbol", "segment", "object", "pid", "owner", "run"}

func reportCSV(w io.Writer, traces []*trace.Trace, o *reportOpts) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for ti, tr := range traces {
		res := o.resolver(tr)
		pid := strconv.FormatUint(uint64(tr.Header.PID), 10)
		for _, th := range o.threads(tr) {
			tid := strconv.FormatUint(uint64(th.TID), 10)
			for _, p := range th.SortedPages() {
				for _, v := range views(p) {
					r := pageInfo(tr, res, v, o)
					fn, insn, obj := "", "", ""
					if r.top.Known() {
						fn, insn, obj = r.top.Function, fmt.Sprintf("%#x", r.top.InsnOff), r.top.Object.Name()
					}
					rec := []string{tid, fmt.Sprintf("%#x", p.Addr()), u(v.reads), u(v.writes), u(v.events),
						u(v.first), u(v.last), strconv.Itoa(r.nsites), fn, insn, r.sym, r.segment, obj, pid, r.owner, o.run(ti)}
					if err := cw.Write(rec); err != nil {
						return err
					}
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

// ---- JSON ----

type jsonSite struct {
	Site     string `json:"site"` // function+0xinsn
	Object   string `json:"object,omitempty"`
	Variable string `json:"variable,omitempty"`
	Kind     string `json:"kind"`
	Segment  string `json:"segment"`
	Count    uint64 `json:"count"`
}

type jsonPage struct {
	Page        string `json:"page"`
	Events      uint64 `json:"events"`
	Reads       uint64 `json:"reads"`
	Writes      uint64 `json:"writes"`
	FirstNS     uint64 `json:"first_ns"`
	LastNS      uint64 `json:"last_ns"`
	TopFunction string `json:"top_function"`
	TopSymbol   string `json:"top_symbol"`
	Segment     string `json:"segment"`
	Owner       string `json:"owner"`
	// Owners: the page's owners over time, when a block was freed and
	// its page reused by another
	Owners []jsonPart `json:"owners,omitempty"`
	Sites  []jsonSite `json:"sites"`
}

type jsonPart struct {
	Owner   string `json:"owner"`
	Segment string `json:"segment"`
	Events  uint64 `json:"events"`
	Reads   uint64 `json:"reads"`
	Writes  uint64 `json:"writes"`
	FirstNS uint64 `json:"first_ns"`
	LastNS  uint64 `json:"last_ns"`
}

type jsonThread struct {
	TID        uint32     `json:"tid"`
	Name       string     `json:"name,omitempty"`
	Instances  int        `json:"instances"`
	Exited     bool       `json:"exited"`
	Pages      int        `json:"pages"`
	WorkingSet uint64     `json:"working_set_bytes"`
	Events     uint64     `json:"events"`
	Reads      uint64     `json:"reads"`
	Writes     uint64     `json:"writes"`
	Drops      uint64     `json:"drops"`
	FirstNS    uint64     `json:"first_ns"`
	LastNS     uint64     `json:"last_ns"`
	ByFunction []group    `json:"by_function"`
	BySymbol   []group    `json:"by_symbol"`
	ByOwner    []group    `json:"by_owner"`
	PageList   []jsonPage `json:"page_list"`
}

type jsonTrace struct {
	Path       string         `json:"path"`
	Run        string         `json:"run"` // the file's name among the report's (hijack report -h)
	PID        uint32         `json:"pid"`
	PPID       uint32         `json:"ppid"`
	ForkChild  bool           `json:"fork_child"`
	Program    string         `json:"program"`
	Cmdline    []string       `json:"cmdline"`
	StartUnix  uint64         `json:"start_unix_ns"`
	DurationNS uint64         `json:"duration_ns"`
	Complete   bool           `json:"complete"`
	Truncated  bool           `json:"truncated"`
	Damaged    int            `json:"damaged_regions"`
	WriteError string         `json:"write_error,omitempty"` // the runtime's
	Exec       string         `json:"exec,omitempty"`        // the program the image exec'd
	Status     string         `json:"status"`
	Warnings   []string       `json:"warnings"` // as on stderr
	Objects    []jsonObject   `json:"objects"`
	Notes      []jsonNote     `json:"notes"`
	Threads    []jsonThread   `json:"threads"`
	Chunks     map[string]int `json:"chunks"`
	// AllocSites: the allocation sites (format 1.3), the most events
	// first; AllocEvents, AllocsLost: allocation events read and lost
	AllocSites  []*allocSite `json:"allocation_sites"`
	AllocEvents uint64       `json:"allocation_events"`
	AllocsLost  uint64       `json:"allocation_events_lost"`
}

type jsonObject struct {
	Name  string `json:"name"`
	ID    string `json:"id"`
	Sites int    `json:"sites"`
}

type jsonNote struct {
	TimeNS uint64 `json:"time_ns"`
	Kind   uint32 `json:"kind"`
	TID    uint32 `json:"tid"`
	Value  uint64 `json:"value"`
	Text   string `json:"text"`
}

func reportJSON(w io.Writer, traces []*trace.Trace, o *reportOpts) error {
	out := struct {
		Traces []jsonTrace `json:"traces"`
		// Merged: the totals over all traces; SharedPages: the pages
		// more than one thread touched, in one process or several
		Merged      procTotals   `json:"merged"`
		SharedPages []jsonShared `json:"shared_pages"`
	}{Traces: []jsonTrace{}}
	out.Merged, out.SharedPages = jsonMerged(traces, o)
	for ti, tr := range traces {
		h := tr.Header
		res := o.resolver(tr)
		jt := jsonTrace{Path: tr.Path, Run: o.run(ti), PID: h.PID, PPID: h.PPID, ForkChild: h.Flags&trace.HeaderForked != 0,
			Program: h.Program, Cmdline: h.Cmdline, StartUnix: h.StartUnix, DurationNS: duration(tr),
			Complete: tr.End != nil && !tr.WriteError, Truncated: tr.Truncated, Damaged: tr.Damaged, Exec: tr.Exec,
			Status: status(tr), Warnings: append([]string{}, warnings(tr)...),
			Objects: []jsonObject{}, Notes: []jsonNote{}, Threads: []jsonThread{}, Chunks: map[string]int{},
			AllocSites: allocSites(tr, res, o), AllocEvents: tr.AllocEvents, AllocsLost: tr.AllocsLost}
		if tr.WriteError {
			jt.WriteError = writeErr(tr)
		}
		for typ, n := range tr.Chunks {
			jt.Chunks[typ.String()] = n
		}
		for _, ob := range tr.Objects {
			jt.Objects = append(jt.Objects, jsonObject{Name: ob.Name(), ID: fmt.Sprintf("%#016x", ob.ID), Sites: len(ob.Sites)})
		}
		for _, n := range tr.Notes {
			jt.Notes = append(jt.Notes, jsonNote{n.Time, n.Kind, n.TID, n.Value, n.Text})
		}
		for _, th := range o.threads(tr) {
			exited := len(th.Instances) > 0
			for _, in := range th.Instances {
				exited = exited && in.Exited
			}
			jth := jsonThread{TID: th.TID, Name: th.Name, Instances: len(th.Instances), Exited: exited,
				Pages: len(th.Pages), WorkingSet: th.WorkingSet(), Events: th.Events, Reads: th.Reads,
				Writes: th.Writes, Drops: th.Drops, FirstNS: th.First, LastNS: th.Last, PageList: []jsonPage{}}
			jth.ByFunction, jth.BySymbol = groups(tr, th, o)
			jth.ByOwner = ownerGroups(tr, res, th, o)
			for _, p := range th.SortedPages() {
				r := pageInfo(tr, res, wholeView(p), o)
				jp := jsonPage{Page: fmt.Sprintf("%#x", p.Addr()), Events: p.Events, Reads: p.Reads, Writes: p.Writes,
					FirstNS: p.First, LastNS: p.Last, TopSymbol: r.sym, Segment: r.segment, Owner: r.owner, Sites: []jsonSite{}}
				if r.top.Known() {
					jp.TopFunction = r.top.Function
				}
				if len(p.Parts) > 0 {
					for _, v := range views(p) {
						pr := pageInfo(tr, res, v, o)
						jp.Owners = append(jp.Owners, jsonPart{Owner: pr.owner, Segment: pr.segment, Events: v.events,
							Reads: v.reads, Writes: v.writes, FirstNS: v.first, LastNS: v.last})
					}
				}
				for _, sc := range p.Sites {
					s := o.site(tr, sc.Site)
					js := jsonSite{Site: s.Where(), Variable: s.Variable(), Kind: s.Kind.String(), Count: sc.Count}
					if s.Known() {
						js.Object, js.Segment = s.Object.Name(), s.Seg.String()
					}
					jp.Sites = append(jp.Sites, js)
				}
				jth.PageList = append(jth.PageList, jp)
			}
			jt.Threads = append(jt.Threads, jth)
		}
		out.Traces = append(out.Traces, jt)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

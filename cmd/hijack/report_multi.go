package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"hijack/vptrace/trace"
)

// Many traces in one report: the processes side by side and in total (the
// merged view), and the pages more than one thread touched (shared pages).

// procTotals is one process's totals, or all processes' (merged).
type procTotals struct {
	Run       string `json:"run,omitempty"`
	PID       uint32 `json:"pid,omitempty"`
	PPID      uint32 `json:"ppid,omitempty"`
	Program   string `json:"program,omitempty"`
	Processes int    `json:"processes"`
	Threads   int    `json:"threads"`
	// Pages counts (thread, page) pairs, DistinctPages the pages of
	// distinct addresses in each process, summed over the processes (a
	// page two threads touched counts once)
	Pages         uint64 `json:"pages"`
	DistinctPages uint64 `json:"distinct_pages"`
	Events        uint64 `json:"events"`
	Reads         uint64 `json:"reads"`
	Writes        uint64 `json:"writes"`
	Drops         uint64 `json:"drops"`
	DurationNS    uint64 `json:"duration_ns"`
}

func totals(tr *trace.Trace, run string, o *reportOpts) procTotals {
	t := procTotals{Run: run, PID: tr.Header.PID, PPID: tr.Header.PPID, Program: tr.Header.Program, Processes: 1,
		DurationNS: duration(tr)}
	distinct := map[uint64]bool{}
	for _, th := range o.threads(tr) {
		t.Threads++
		t.Pages += uint64(len(th.Pages))
		t.Events += th.Events
		t.Reads += th.Reads
		t.Writes += th.Writes
		t.Drops += th.Drops
		for pg := range th.Pages {
			distinct[pg] = true
		}
	}
	t.DistinctPages = uint64(len(distinct))
	return t
}

// merged returns each trace's totals and their sum.
func merged(traces []*trace.Trace, o *reportOpts) (per []procTotals, all procTotals) {
	for i, tr := range traces {
		t := totals(tr, o.run(i), o)
		per = append(per, t)
		all.Processes++
		all.Threads += t.Threads
		all.Pages += t.Pages
		all.DistinctPages += t.DistinctPages
		all.Events += t.Events
		all.Reads += t.Reads
		all.Writes += t.Writes
		all.Drops += t.Drops
		all.DurationNS = max(all.DurationNS, t.DurationNS)
	}
	return per, all
}

// sharedUse is what one thread of one process did to a shared page.
type sharedUse struct {
	trace  int // index in the report's traces
	tid    uint32
	events uint64
	reads  uint64
	writes uint64
}

// sharedPage is a page address more than one thread touched, in one
// process or in several.
type sharedPage struct {
	page                  uint64
	procs                 int
	uses                  []sharedUse // in trace order, ascending TID
	events, reads, writes uint64
}

// sharedPages finds the pages more than one thread touched, across the
// traces: the most processes first, then the most threads, then the most
// events. The same address in two processes is the same memory only when
// it is shared (a MAP_SHARED mapping) or was inherited by fork and not
// yet written (copy on write): the help says so.
func sharedPages(traces []*trace.Trace, o *reportOpts) []*sharedPage {
	m := map[uint64]*sharedPage{}
	for i, tr := range traces {
		for _, th := range o.threads(tr) {
			for pg, p := range th.Pages {
				sp := m[pg]
				if sp == nil {
					sp = &sharedPage{page: pg}
					m[pg] = sp
				}
				sp.uses = append(sp.uses, sharedUse{i, th.TID, p.Events, p.Reads, p.Writes})
			}
		}
	}
	var out []*sharedPage
	for _, sp := range m {
		if len(sp.uses) < 2 {
			continue
		}
		last := -1
		for _, u := range sp.uses {
			if u.trace != last {
				sp.procs++
				last = u.trace
			}
			sp.events += u.events
			sp.reads += u.reads
			sp.writes += u.writes
		}
		out = append(out, sp)
	}
	slices.SortFunc(out, func(a, b *sharedPage) int {
		return cmp.Or(cmp.Compare(b.procs, a.procs), cmp.Compare(len(b.uses), len(a.uses)),
			cmp.Compare(b.events, a.events), cmp.Compare(a.page, b.page))
	})
	return out
}

// owner names what the shared page held in the first process that
// touched it (its thread with the most events there).
func (sp *sharedPage) owner(traces []*trace.Trace, o *reportOpts) (segment, name string) {
	best := sp.uses[0]
	for _, u := range sp.uses {
		if u.trace == best.trace && u.events > best.events {
			best = u
		}
	}
	tr := traces[best.trace]
	p := tr.Thread(best.tid).Pages[sp.page]
	r := pageInfo(tr, o.resolver(tr), wholeView(p), o)
	return r.segment, r.owner
}

// who lists the threads, "PID/TID".
func (sp *sharedPage) who(traces []*trace.Trace) string {
	var b strings.Builder
	for i, u := range sp.uses {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d/", traces[u.trace].Header.PID)
		fmt.Fprintf(&b, "%d", u.tid)
	}
	return b.String()
}

// reportMerged writes the processes side by side and their totals (more
// than one trace).
func reportMerged(w io.Writer, traces []*trace.Trace, o *reportOpts) {
	per, all := merged(traces, o)
	fmt.Fprintf(w, "\nall %d processes: %d threads; %d (thread, page) pairs, %d distinct pages per process (%s); %d events (%d reads, %d writes)",
		all.Processes, all.Threads, all.Pages, all.DistinctPages, bytesStr(all.DistinctPages*trace.PageSize), all.Events, all.Reads, all.Writes)
	if all.Drops > 0 {
		fmt.Fprintf(w, "; %d events DROPPED", all.Drops)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  %-24s %8s %8s %8s %9s %11s %10s %10s %10s %10s\n",
		"run", "pid", "ppid", "threads", "pages", "working set", "events", "reads", "writes", "duration")
	row := func(t procTotals, run, pid, ppid string) {
		fmt.Fprintf(w, "  %-24s %8s %8s %8d %9d %11s %10d %10d %10d %10s\n", run, pid, ppid, t.Threads, t.DistinctPages,
			bytesStr(t.DistinctPages*trace.PageSize), t.Events, t.Reads, t.Writes, nsStr(t.DurationNS))
	}
	for _, t := range per {
		row(t, t.Run, fmt.Sprint(t.PID), fmt.Sprint(t.PPID))
	}
	row(all, "all", "", "")
}

// reportShared writes the pages more than one thread of a process
// touched, and the addresses more than one process touched (the first
// --top of each).
func reportShared(w io.Writer, traces []*trace.Trace, o *reportOpts) {
	shared := sharedPages(traces, o)
	var inProc, cross []*sharedPage
	for _, sp := range shared {
		for i := 0; i < len(sp.uses); {
			j := i + 1
			for j < len(sp.uses) && sp.uses[j].trace == sp.uses[i].trace {
				j++
			}
			if j-i > 1 {
				one := &sharedPage{page: sp.page, procs: 1, uses: sp.uses[i:j]}
				for _, u := range one.uses {
					one.events += u.events
					one.reads += u.reads
					one.writes += u.writes
				}
				inProc = append(inProc, one)
			}
			i = j
		}
		if sp.procs > 1 {
			cross = append(cross, sp)
		}
	}
	slices.SortFunc(inProc, func(a, b *sharedPage) int {
		return cmp.Or(cmp.Compare(len(b.uses), len(a.uses)), cmp.Compare(b.events, a.events),
			cmp.Compare(a.uses[0].trace, b.uses[0].trace), cmp.Compare(a.page, b.page))
	})
	head := func() {
		fmt.Fprintf(w, "  %-18s %5s %7s %9s %9s %9s  %-7s %-24s %s\n", "page", "procs", "threads", "events", "reads", "writes", "segment", "owner", "threads (pid/tid)")
	}
	row := func(sp *sharedPage) {
		seg, name := sp.owner(traces, o)
		fmt.Fprintf(w, "  %#-18x %5d %7d %9d %9d %9d  %-7s %-24s %s\n", sp.page<<trace.PageShift, sp.procs, len(sp.uses),
			sp.events, sp.reads, sp.writes, seg, name, sp.who(traces))
	}
	if len(inProc) > 0 {
		fmt.Fprintf(w, "\nshared pages: %d touched by more than one thread of a process\n", len(inProc))
		head()
		for _, sp := range limit(inProc, o.top) {
			row(sp)
		}
	}
	if len(cross) > 0 {
		fmt.Fprintf(w, "\nsame address in several processes: %d pages (the same memory only where shared, or inherited by fork and not yet written)\n", len(cross))
		head()
		for _, sp := range limit(cross, o.top) {
			row(sp)
		}
	}
}

// ---- JSON ----

type jsonShareUse struct {
	Run    string `json:"run"`
	PID    uint32 `json:"pid"`
	TID    uint32 `json:"tid"`
	Events uint64 `json:"events"`
	Reads  uint64 `json:"reads"`
	Writes uint64 `json:"writes"`
}

type jsonShared struct {
	Page      string         `json:"page"`
	Processes int            `json:"processes"`
	Threads   int            `json:"threads"`
	Events    uint64         `json:"events"`
	Reads     uint64         `json:"reads"`
	Writes    uint64         `json:"writes"`
	Segment   string         `json:"segment"`
	Owner     string         `json:"owner"`
	Uses      []jsonShareUse `json:"uses"`
}

// jsonMerged is the merged view and every shared page.
func jsonMerged(traces []*trace.Trace, o *reportOpts) (procTotals, []jsonShared) {
	_, all := merged(traces, o)
	out := []jsonShared{}
	for _, sp := range sharedPages(traces, o) {
		seg, name := sp.owner(traces, o)
		js := jsonShared{Page: fmt.Sprintf("%#x", sp.page<<trace.PageShift), Processes: sp.procs, Threads: len(sp.uses),
			Events: sp.events, Reads: sp.reads, Writes: sp.writes, Segment: seg, Owner: name}
		for _, u := range sp.uses {
			js.Uses = append(js.Uses, jsonShareUse{o.run(u.trace), traces[u.trace].Header.PID, u.tid, u.events, u.reads, u.writes})
		}
		out = append(out, js)
	}
	return all, out
}

// run is the run name of the report's i-th trace.
func (o *reportOpts) run(i int) string {
	if i < len(o.runs) {
		return o.runs[i]
	}
	return ""
}

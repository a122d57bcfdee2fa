package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"hijack/internal/atomicfile"
	"hijack/vptrace/trace"
)

// hijack report --perfetto: the traces as a timeline in the Chrome trace
// event format (JSON), which ui.perfetto.dev, Perfetto's trace_processor
// and chrome://tracing open. One process per trace file, its threads by
// kernel TID; per thread a counter track of each of the interval's
// numbers; instant events for notes, warnings, fork, exec, thread start and
// exit and the end of the trace.
//
// Each file is read once, chunk by chunk: what is kept is a few numbers
// per thread and interval (the samples), never the pages.

// perfSample is what one thread did in one interval.
type perfSample struct {
	ts, end               uint64 // the interval, ns since the trace start
	pages                 uint64 // distinct pages touched (the interval's working set)
	events, reads, writes uint64
}

// perfThread collects one kernel TID's samples and name.
type perfThread struct {
	tid     uint32
	name    string
	samples []perfSample
	// lastTo ends the last AGG interval; raw events go to buckets of the
	// header's interval, the open one in rawBucket, its pages in rawPages
	rawBucket uint64
	rawOpen   bool
	rawSample perfSample
	rawPages  map[uint64]struct{}
}

// perfInstant is an instant event.
type perfInstant struct {
	ts    uint64
	tid   uint32
	scope string // "t" thread, "p" process
	name  string
	args  map[string]any
}

// perfettoCounters are the counter series of each thread, in the order
// written (Perfetto names a track "NAME SERIES").
var perfettoCounters = []string{"working set (pages)", "pages touched", "reads", "writes"}

// reportPerfetto writes the traces' timeline to path.
func reportPerfetto(path string, inputs []traceInput, o *reportOpts, stderr io.Writer) error {
	// the earliest start: times are microseconds since it, so that fork
	// children (their parent's clock) and runs one after the other line up
	var base uint64
	for i, in := range inputs {
		r, err := trace.Open(in.Path)
		if err != nil {
			return fmt.Errorf("%s", reportErr(in.Path, err))
		}
		if s := r.Header.StartMono; i == 0 || s < base {
			base = s
		}
		r.Close()
	}
	return atomicfile.Write(path, ".perfetto-*", func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 1<<20)
		pw := &perfWriter{w: w}
		w.WriteString(`{"displayTimeUnit":"ms","traceEvents":[`)
		for _, in := range inputs {
			if err := pw.trace(in, base, o, stderr); err != nil {
				return err
			}
		}
		w.WriteString("\n]}\n")
		if pw.err != nil {
			return pw.err
		}
		return w.Flush()
	})
}

type perfWriter struct {
	w     *bufio.Writer
	first bool
	err   error
	buf   []byte
}

// event writes one trace event; args (keys in the order given) are
// written as JSON values.
func (pw *perfWriter) event(ph, name string, pid, tid uint32, ts float64, extra string, args ...any) {
	b := pw.buf[:0]
	if pw.first {
		b = append(b, ',')
	}
	pw.first = true
	b = append(b, "\n{\"ph\":\""...)
	b = append(b, ph...)
	b = append(b, "\",\"name\":"...)
	b = strconv.AppendQuote(b, name)
	b = append(b, ",\"pid\":"...)
	b = strconv.AppendUint(b, uint64(pid), 10)
	b = append(b, ",\"tid\":"...)
	b = strconv.AppendUint(b, uint64(tid), 10)
	if ph != "M" {
		b = append(b, ",\"ts\":"...)
		b = strconv.AppendFloat(b, ts, 'f', 3, 64)
	}
	b = append(b, extra...)
	b = append(b, ",\"args\":{"...)
	for i := 0; i+1 < len(args); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, args[i].(string))
		b = append(b, ':')
		v, err := json.Marshal(args[i+1])
		if err != nil && pw.err == nil {
			pw.err = err
		}
		b = append(b, v...)
	}
	b = append(b, "}}"...)
	pw.buf = b
	if _, err := pw.w.Write(b); err != nil && pw.err == nil {
		pw.err = err
	}
}

// trace reads one trace file and writes its events: the process and
// thread names, the counter samples of each thread in time order, the
// instants.
func (pw *perfWriter) trace(in traceInput, base uint64, o *reportOpts, stderr io.Writer) error {
	r, err := trace.Open(in.Path)
	if err != nil {
		return fmt.Errorf("%s", reportErr(in.Path, err))
	}
	defer r.Close()
	h := r.Header
	pid := h.PID
	interval := max(uint64(h.IntervalMS), 1) * 1e6
	threads := map[uint32]*perfThread{}
	thread := func(tid uint32) *perfThread {
		th := threads[tid]
		if th == nil {
			th = &perfThread{tid: tid}
			threads[tid] = th
		}
		return th
	}
	var instants []perfInstant
	kinds := map[uint64]trace.Kind{} // raw events' site kinds, from the objects
	var undecodable int
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s", reportErr(in.Path, err))
		}
		v, err := c.Decode()
		if err != nil {
			undecodable++
			continue
		}
		switch x := v.(type) {
		case *trace.Header:
			return fmt.Errorf("%s: %v (a second header at offset %d)", in.Path, trace.ErrMultiProcess, c.Offset)
		case *trace.Object:
			for i, s := range x.Sites {
				kinds[x.SitesAddr+uint64(i)*trace.SiteRecSize] = s.Kind
			}
		case *trace.ThreadStart:
			th := thread(x.TID)
			if x.Name != "" {
				th.name = x.Name
			}
			instants = append(instants, perfInstant{x.Time, x.TID, "t", "thread start", map[string]any{"serial": x.Serial}})
		case *trace.ThreadExit:
			th := thread(x.TID)
			if x.Name != "" {
				th.name = x.Name
			}
			instants = append(instants, perfInstant{x.Time, x.TID, "t", "thread exit",
				map[string]any{"serial": x.Serial, "events": x.Events, "drops": x.Drops}})
		case *trace.Agg:
			if o.thread >= 0 && int64(x.TID) != o.thread {
				continue
			}
			s := perfSample{ts: x.From, end: max(x.To, x.From+1), pages: uint64(len(x.Pages))}
			for i := range x.Pages {
				s.events += x.Pages[i].Events
				s.reads += x.Pages[i].Reads
				s.writes += x.Pages[i].Writes
			}
			th := thread(x.TID)
			th.samples = append(th.samples, s)
		case *trace.Raw:
			if o.thread >= 0 && int64(x.TID) != o.thread {
				continue
			}
			th := thread(x.TID)
			for _, e := range x.Events {
				if e.Site == 0 || e.Page1 == 0 {
					continue
				}
				if k := e.Time / interval; !th.rawOpen || k != th.rawBucket {
					th.flushRaw(interval)
					th.rawBucket, th.rawOpen = k, true
				}
				th.rawSample.events++
				k := kinds[e.Site]
				if k&trace.KindRead != 0 {
					th.rawSample.reads++
				}
				if k&trace.KindWrite != 0 {
					th.rawSample.writes++
				}
				if th.rawPages == nil {
					th.rawPages = map[uint64]struct{}{}
				}
				th.rawPages[e.Page1] = struct{}{}
			}
		case *trace.Note:
			name, scope := noteName(x)
			instants = append(instants, perfInstant{x.Time, x.TID, scope, name, map[string]any{"kind": x.Kind, "value": x.Value, "text": x.Text}})
		case *trace.End:
			instants = append(instants, perfInstant{x.Time, pid, "p", "end of trace",
				map[string]any{"flags": x.Flags, "events": x.Events, "drops": x.Drops}})
		}
	}
	if undecodable > 0 {
		fmt.Fprintf(stderr, "hijack: %s: warning: %d undecodable chunks skipped\n", in.Path, undecodable)
	}
	if r.Truncated || r.Damaged > 0 {
		fmt.Fprintf(stderr, "hijack: %s: warning: %d damaged region(s), %d bytes skipped (truncated: %v)\n", in.Path, r.Damaged, r.Skipped, r.Truncated)
	}
	us := func(t uint64) float64 { return float64(h.StartMono-base+t) / 1e3 }

	name := h.Program
	if in.Run != "" {
		name = fmt.Sprintf("%s (%s)", h.Program, in.Run)
	}
	pw.event("M", "process_name", pid, pid, 0, "", "name", name)
	pw.event("M", "process_labels", pid, pid, 0, "", "labels", fmt.Sprintf("pid %d, ppid %d, %s", pid, h.PPID, in.Path))
	tids := make([]uint32, 0, len(threads))
	for tid := range threads {
		tids = append(tids, tid)
	}
	slices.Sort(tids)
	for _, tid := range tids {
		th := threads[tid]
		tn := th.name
		if tn == "" {
			tn = "thread"
		}
		pw.event("M", "thread_name", pid, tid, 0, "", "name", fmt.Sprintf("%s %d", tn, tid))
	}
	for _, tid := range tids {
		th := threads[tid]
		th.flushRaw(interval)
		samples := mergeSamples(th.samples)
		track := fmt.Sprintf("T%d", tid)
		if th.name != "" {
			track = fmt.Sprintf("%s %d", th.name, tid)
		}
		for i, s := range samples {
			pw.event("C", track, pid, tid, us(s.ts), "",
				perfettoCounters[0], s.pages, perfettoCounters[1], s.events, perfettoCounters[2], s.reads, perfettoCounters[3], s.writes)
			if i+1 == len(samples) || samples[i+1].ts > s.end {
				// nothing recorded until the next interval
				pw.event("C", track, pid, tid, us(s.end), "",
					perfettoCounters[0], 0, perfettoCounters[1], 0, perfettoCounters[2], 0, perfettoCounters[3], 0)
			}
		}
	}
	slices.SortStableFunc(instants, func(a, b perfInstant) int { return cmp.Compare(a.ts, b.ts) })
	for _, in := range instants {
		var args []any
		keys := make([]string, 0, len(in.args))
		for k := range in.args {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			args = append(args, k, in.args[k])
		}
		pw.event("i", in.name, pid, in.tid, us(in.ts), `,"s":"`+in.scope+`"`, args...)
	}
	return pw.err
}

// flushRaw closes the open bucket of raw events as a sample.
func (th *perfThread) flushRaw(interval uint64) {
	if !th.rawOpen {
		return
	}
	s := th.rawSample
	s.ts = th.rawBucket * interval
	s.end = s.ts + interval
	s.pages = uint64(len(th.rawPages))
	th.samples = append(th.samples, s)
	th.rawSample = perfSample{}
	clear(th.rawPages)
	th.rawOpen = false
}

// mergeSamples sorts a thread's samples by time and makes one of those
// that start at the same time (an interval's aggregates split in chunks,
// aggregated and raw events): their numbers add up.
func mergeSamples(ss []perfSample) []perfSample {
	slices.SortStableFunc(ss, func(a, b perfSample) int { return cmp.Compare(a.ts, b.ts) })
	out := ss[:0]
	for _, s := range ss {
		if n := len(out); n > 0 && out[n-1].ts == s.ts {
			p := &out[n-1]
			p.end = max(p.end, s.end)
			p.pages += s.pages
			p.events += s.events
			p.reads += s.reads
			p.writes += s.writes
			continue
		}
		out = append(out, s)
	}
	return out
}

// noteName names a note's instant event and its scope.
func noteName(n *trace.Note) (name, scope string) {
	switch n.Kind {
	case trace.NoteText:
		return n.Text, "t"
	case trace.NoteStart:
		return "tracing started", "t"
	case trace.NoteStop:
		return "tracing stopped", "t"
	case trace.NoteWarning:
		return "warning: " + n.Text, "p"
	case trace.NoteFork:
		return fmt.Sprintf("fork (child of %d)", n.Value), "p"
	case trace.NoteExec:
		return "exec " + n.Text, "p"
	case trace.NoteExecFailed:
		return fmt.Sprintf("exec failed (errno %d)", n.Value), "p"
	}
	return fmt.Sprintf("note %d: %s", n.Kind, n.Text), "t"
}

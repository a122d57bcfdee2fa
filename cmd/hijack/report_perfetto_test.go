package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hijack/internal/traceevent"
	"hijack/vptrace/trace"
)

// writeTimeline writes a trace with intervals: thread 10 in three
// intervals with a gap, thread 11 in one (split in two chunks), raw
// events of thread 12, notes of every kind the timeline shows.
func writeTimeline(t *testing.T, path string, pid uint32, o trace.WriterOptions) {
	t.Helper()
	var buf bytes.Buffer
	w, err := trace.NewWriterOptions(&buf, o)
	if err != nil {
		t.Fatal(err)
	}
	w.Begin(&trace.Header{PID: pid, PPID: 1, Program: "./tl", StartMono: 5e9, IntervalMS: 100})
	w.Object(&trace.Object{Desc: 0x1000, SitesAddr: 0x1030, StrsAddr: 0x1070, NameOff: 1,
		Sites: []trace.SiteRec{{Func: 4, Sym: trace.NoSym, Kind: trace.KindRead}, {Func: 4, Sym: trace.NoSym, Kind: trace.KindWrite}},
		Strs:  []byte("\x00o\x00f\x00")})
	pages := func(base uint64, n int, site uint64, t0 uint64) []trace.PageAgg {
		var ps []trace.PageAgg
		for i := range n {
			p := trace.PageAgg{Page: base + uint64(i), Events: 2, First: t0, Last: t0 + 1e6, Sites: []trace.SiteCount{{Site: site, Count: 2}}}
			if site == 0x1030 {
				p.Reads = 2
			} else {
				p.Writes = 2
			}
			ps = append(ps, p)
		}
		return ps
	}
	w.ThreadStart(&trace.ThreadStart{Serial: 1, TID: 10, Time: 1e6, Name: "main"})
	w.Agg(&trace.Agg{Serial: 1, TID: 10, From: 0, To: 100e6, Pages: pages(0x100, 5, 0x1030, 1e6)})
	w.Agg(&trace.Agg{Serial: 1, TID: 10, From: 100e6, To: 200e6, Pages: pages(0x100, 3, 0x1050, 150e6)})
	w.Note(&trace.Note{Kind: trace.NoteText, TID: 10, Time: 120e6, Text: "phase 2"})
	w.Note(&trace.Note{Kind: trace.NoteWarning, TID: 10, Time: 130e6, Text: "consumer behind"})
	w.ThreadStart(&trace.ThreadStart{Serial: 2, TID: 11, Time: 50e6, Name: "worker"})
	w.Agg(&trace.Agg{Serial: 2, TID: 11, From: 50e6, To: 150e6, Pages: pages(0x200, 7, 0x1030, 60e6)})
	w.Agg(&trace.Agg{Serial: 2, TID: 11, From: 50e6, To: 150e6, Pages: pages(0x300, 4, 0x1050, 70e6)}) // the same interval's second chunk
	w.ThreadExit(&trace.ThreadExit{Serial: 2, TID: 11, Time: 150e6, Events: 22, Name: "worker"})
	w.Agg(&trace.Agg{Serial: 1, TID: 10, From: 400e6, To: 500e6, Pages: pages(0x100, 1, 0x1030, 450e6)}) // after a gap
	w.ThreadStart(&trace.ThreadStart{Serial: 3, TID: 12, Time: 210e6})
	w.Raw(&trace.Raw{Serial: 3, TID: 12, Time: 320e6, Events: []trace.Event{
		{Page1: 0x401, Site: 0x1030, Time: 210e6}, {Page1: 0x401, Site: 0x1050, Time: 220e6},
		{Page1: 0x402, Site: 0x1030, Time: 310e6}, {Page1: 0x403, Site: 0, Time: 0}}})
	w.Note(&trace.Note{Kind: trace.NoteExec, TID: 10, Time: 500e6, Text: "/bin/true"})
	w.End(&trace.End{Time: 510e6, Flags: trace.EndClean | trace.EndExec})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReportPerfetto: the timeline is valid trace event JSON, its
// counters add up to the trace's numbers per thread, with zeros where a
// thread recorded nothing, for plain and compressed traces alike.
func TestReportPerfetto(t *testing.T) {
	dir := t.TempDir()
	writeTimeline(t, filepath.Join(dir, "runs", "plain.vpt"), 100, trace.WriterOptions{})
	writeTimeline(t, filepath.Join(dir, "runs", "packed.vpt"), 200, trace.WriterOptions{Compress: true})
	out := filepath.Join(dir, "tl.json")
	code, stdout, errs := runReport(t, "--perfetto", out, filepath.Join(dir, "runs"))
	if code != 0 || stdout != "" || errs != "" {
		t.Fatalf("exit %d: %s%s", code, stdout, errs)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s, err := traceevent.Check(data)
	if err != nil {
		t.Fatalf("not valid trace event JSON: %v\n%s", err, data)
	}
	if len(s.ProcessNames) != 2 || s.ProcessNames[100] != "./tl (plain)" || s.ProcessNames[200] != "./tl (packed)" {
		t.Errorf("processes %v", s.ProcessNames)
	}
	for _, pid := range []uint32{100, 200} {
		th := func(tid uint32) traceevent.Thread { return traceevent.Thread{PID: pid, TID: tid} }
		if s.ThreadNames[th(10)] != "main 10" || s.ThreadNames[th(11)] != "worker 11" || s.ThreadNames[th(12)] != "thread 12" {
			t.Errorf("pid %d: thread names %v", pid, s.ThreadNames)
		}
		want := map[uint32][4]float64{ // working set, pages touched, reads, writes: summed over samples
			10: {5 + 3 + 1, 18, 12, 6}, 11: {11, 22, 14, 8}, 12: {1 + 1, 3, 2, 1}}
		for tid, w := range want {
			c := s.Counters[th(tid)]
			got := [4]float64{c["working set (pages)"], c["pages touched"], c["reads"], c["writes"]}
			if got != w {
				t.Errorf("pid %d thread %d: counters %v, want %v", pid, tid, got, w)
			}
		}
		// samples: thread 10 at 0, 100 ms, a zero at 200 ms, 400 ms, a zero at 500 ms
		if n := s.Samples[th(10)]; n != 5 {
			t.Errorf("pid %d thread 10: %d samples, want 5", pid, n)
		}
		if n := s.Samples[th(11)]; n != 2 {
			t.Errorf("pid %d thread 11: %d samples, want 2 (one interval in two chunks, then zero)", pid, n)
		}
	}
	names := map[string]int{}
	for _, in := range s.Instants {
		names[in.Name]++
	}
	for _, n := range []string{"phase 2", "warning: consumer behind", "exec /bin/true", "thread start", "thread exit", "end of trace"} {
		if names[n] == 0 {
			t.Errorf("no instant %q (instants %v)", n, names)
		}
	}
	// times: microseconds since the earliest start, the first interval at 0
	if s.FirstTS != 0 || s.Last != 510e3 {
		t.Errorf("times %v..%v, want 0..510000", s.FirstTS, s.Last)
	}

	// --thread keeps that thread's counters
	code, _, errs = runReport(t, "--perfetto", out, "--thread", "11", filepath.Join(dir, "runs", "plain.vpt"))
	if code != 0 {
		t.Fatalf("--thread: exit %d: %s", code, errs)
	}
	data, _ = os.ReadFile(out)
	if s, err = traceevent.Check(data); err != nil {
		t.Fatal(err)
	}
	if len(s.Samples) != 1 || s.Samples[traceevent.Thread{PID: 100, TID: 11}] != 2 {
		t.Errorf("--thread 11: samples %v", s.Samples)
	}
	if code, _, errs := runReport(t, "--perfetto", out, "--csv", filepath.Join(dir, "runs")); code != 2 || !strings.Contains(errs, "excludes") {
		t.Errorf("--perfetto --csv: exit %d %s", code, errs)
	}
}

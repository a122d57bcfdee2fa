package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"hijack/vptrace/trace"
)

// writeTrace writes a small trace: two threads, an object with three sites.
func writeTrace(t *testing.T, dir string, end bool) string {
	t.Helper()
	var buf bytes.Buffer
	w := trace.NewWriter(&buf)
	w.Begin(&trace.Header{PID: 4242, PPID: 1, StartUnix: 1764111600e9, Program: "./app",
		Cmdline: []string{"./app", "in.txt"}, ClockRes: 1e6})
	strs := []byte("\x00app.o\x00main\x00sum, total\x00table\x00")
	w.Object(&trace.Object{Desc: 0x1000, SitesAddr: 0x1030, StrsAddr: 0x1090, Version: 1, ID: 0xabc, NameOff: 1,
		Sites: []trace.SiteRec{
			{Func: 7, InsnOff: 0x1c, Sym: trace.NoSym, Kind: trace.KindRead, Seg: trace.SegUnknown, Size: 8},
			{Func: 12, InsnOff: 0x40, Sym: 23, SymOff: 8, Kind: trace.KindWrite, Seg: trace.SegGlobal, Size: 4},
			{Func: 12, InsnOff: 0x48, Sym: trace.NoSym, Kind: trace.KindRMW, Seg: trace.SegStack, Size: 4},
		}, Strs: strs})
	w.ThreadStart(&trace.ThreadStart{Serial: 1, TID: 4242, Time: 5, Name: "app"})
	w.Agg(&trace.Agg{Serial: 1, TID: 4242, From: 5, To: 100, Pages: []trace.PageAgg{
		{Page: 0x55550, Events: 10, Reads: 10, First: 10, Last: 90, Sites: []trace.SiteCount{{Site: 0x1030, Count: 10}}},
		{Page: 0x55551, Events: 3, Reads: 1, Writes: 2, First: 20, Last: 30,
			Sites: []trace.SiteCount{{Site: 0x1030, Count: 1}, {Site: 0x1050, Count: 2}}},
	}})
	w.ThreadStart(&trace.ThreadStart{Serial: 2, TID: 4250, Time: 40, Name: "worker"})
	w.Agg(&trace.Agg{Serial: 2, TID: 4250, From: 40, To: 100, Pages: []trace.PageAgg{
		{Page: 0x7ffd0, Events: 4, Reads: 4, Writes: 4, First: 41, Last: 60, Sites: []trace.SiteCount{{Site: 0x1070, Count: 4}}},
	}})
	w.Note(&trace.Note{Kind: trace.NoteText, TID: 4242, Time: 50, Text: "phase 2"})
	if end {
		w.End(&trace.End{Time: 120, Flags: trace.EndClean})
	}
	w.Flush()
	path := filepath.Join(dir, "app.vpt")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runReport(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var so, se bytes.Buffer
	code := run(append([]string{"report"}, args...), &so, &se)
	return code, so.String(), se.String()
}

func TestReportCSV(t *testing.T) {
	path := writeTrace(t, t.TempDir(), true)
	code, out, errs := runReport(t, "--csv", path)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"thread", "page", "reads", "writes", "events", "first_ns", "last_ns", "sites", "top_function", "top_insn", "top_symbol", "segment", "object", "pid", "owner", "run"},
		// a trace without mappings (format before 1.3): owners only from the operands
		{"4242", "0x55550000", "10", "0", "10", "10", "90", "1", "main", "0x1c", "", "unknown", "app.o", "4242", "unknown", "app"},
		{"4242", "0x55551000", "1", "2", "3", "20", "30", "2", "sum, total", "0x40", "table", "global", "app.o", "4242", "table", "app"},
		{"4250", "0x7ffd0000", "4", "4", "4", "41", "60", "1", "sum, total", "0x48", "", "stack", "app.o", "4242", "unknown", "app"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows:\n%s", len(rows), out)
	}
	for i := range want {
		if strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d:\n got %v\nwant %v", i, rows[i], want[i])
		}
	}
	// --thread, single-dash spellings
	code, out, _ = runReport(t, "-csv", "-thread", "4250", path)
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.HasPrefix(strings.Split(out, "\n")[1], "4250,0x7ffd0000,") {
		t.Errorf("--thread 4250: exit %d\n%s", code, out)
	}
}

func TestReportText(t *testing.T) {
	path := writeTrace(t, t.TempDir(), true)
	code, out, errs := runReport(t, path)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"pid 4242", "./app in.txt", "status: complete", "3 (thread, page) pairs",
		"thread 4242 (app): 2 pages, 8.0 KiB", "0x55551000", "sum, total+0x40", "table", "by function", "by owner",
		"unknown", "worker", "phase 2"} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %q:\n%s", s, out)
		}
	}
}

func TestReportJSON(t *testing.T) {
	path := writeTrace(t, t.TempDir(), true)
	code, out, _ := runReport(t, "--json", "--thread", "4242", path)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var v struct {
		Traces []struct {
			PID      uint32 `json:"pid"`
			Complete bool   `json:"complete"`
			Threads  []struct {
				TID        uint32 `json:"tid"`
				Pages      int    `json:"pages"`
				WorkingSet uint64 `json:"working_set_bytes"`
				ByFunction []struct {
					Name   string `json:"name"`
					Events uint64 `json:"events"`
				} `json:"by_function"`
				PageList []struct {
					Page  string `json:"page"`
					Sites []struct {
						Site, Variable, Kind string
					} `json:"sites"`
				} `json:"page_list"`
			} `json:"threads"`
		} `json:"traces"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	tr := v.Traces[0]
	if tr.PID != 4242 || !tr.Complete || len(tr.Threads) != 1 {
		t.Fatalf("%+v", tr)
	}
	th := tr.Threads[0]
	if th.TID != 4242 || th.Pages != 2 || th.WorkingSet != 8192 || th.ByFunction[0].Name != "main" || th.ByFunction[0].Events != 11 {
		t.Errorf("thread %+v", th)
	}
	p := th.PageList[1]
	if p.Page != "0x55551000" || len(p.Sites) != 2 || p.Sites[1].Site != "sum, total+0x40" || p.Sites[1].Variable != "table+8" || p.Sites[1].Kind != "write" {
		t.Errorf("page %+v", p)
	}
}

func TestReportErrors(t *testing.T) {
	dir := t.TempDir()
	path := writeTrace(t, dir, true)
	notTrace := filepath.Join(dir, "x.txt")
	os.WriteFile(notTrace, []byte("just some text, not a trace at all"), 0o644)
	empty := filepath.Join(dir, "empty.vpt")
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{filepath.Join(dir, "missing.vpt")}, 1, "no such file or directory"},
		{[]string{notTrace}, 1, "not a vptrace file"},
		{[]string{empty}, 1, "not a vptrace file"},
		{[]string{"--csv", "--json", path}, 2, "exclude"},
		{[]string{"--thread", "7", path}, 1, "no thread 7 (threads: 4242 4250)"},
		{[]string{"--bogus", path}, 2, "unknown flag"},
		{nil, 2, "no trace file given"},
	} {
		code, _, errs := runReport(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errs, c.code, c.msg)
		}
		if c.code == 1 && strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: more than one line: %q", c.args, errs)
		}
	}
}

// TestReportIncomplete: a trace of a running or killed process, cut inside
// a chunk, and one damaged in the middle.
func TestReportIncomplete(t *testing.T) {
	dir := t.TempDir()
	path := writeTrace(t, dir, false)
	data, _ := os.ReadFile(path)
	half := trace.AppendChunk(nil, trace.ChunkRaw, make([]byte, 480))
	os.WriteFile(path, append(data, half[:100]...), 0o644)
	code, out, errs := runReport(t, path)
	if code != 0 || !strings.Contains(errs, "warning: incomplete trace: no end record") || !strings.Contains(out, "INCOMPLETE") || !strings.Contains(out, "100 bytes (an unfinished chunk) ignored") {
		t.Errorf("exit %d, stderr %q:\n%s", code, errs, out)
	}
	// damage in the middle: a warning, the rest is reported
	data[len(data)/2] ^= 0x55
	os.WriteFile(path, data, 0o644)
	code, out, errs = runReport(t, "--csv", path)
	if code != 0 || !strings.Contains(errs, "warning: 1 damaged region") || !strings.HasPrefix(out, "thread,page,") {
		t.Errorf("damaged: exit %d, stderr %q\n%s", code, errs, out)
	}
}

// TestReportWarnings: every output mode says on stderr, in the same words,
// what is wrong with a trace it reads (and still reports it, exit 0): a
// trace cut inside a chunk and without an end (a killed process), one
// whose runtime could not write it all, one damaged in the middle. A
// complete one (or one that ends in an exec) has no warning.
func TestReportWarnings(t *testing.T) {
	dir := t.TempDir()
	complete := writeTrace(t, dir, true)
	data, _ := os.ReadFile(complete)
	variant := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noEnd, _ := os.ReadFile(writeTrace(t, t.TempDir(), false))
	half := trace.AppendChunk(nil, trace.ChunkRaw, make([]byte, 480))
	killed := variant("killed.vpt", append(bytes.Clone(noEnd), half[:100]...))
	status := (&trace.Status{Flags: trace.StatusWriteError, Errno: uint32(syscall.ENOSPC)}).AppendPayload(nil)
	full := variant("full.vpt", append(trace.AppendChunk(bytes.Clone(noEnd), trace.ChunkStatus, status), half[:50]...))
	damaged := bytes.Clone(data)
	damaged[len(damaged)/2] ^= 0x55
	dam := variant("damaged.vpt", damaged)
	// drops come in an AGG after the END (chunks may follow it)
	dropped := variant("dropped.vpt", trace.AppendChunk(bytes.Clone(data), trace.ChunkAgg,
		(&trace.Agg{Serial: 2, TID: 4250, From: 100, To: 110, Drops: 3}).AppendPayload(nil)))
	lost := variant("lost.vpt", trace.AppendChunk(bytes.Clone(noEnd), trace.ChunkEnd,
		(&trace.End{Flags: trace.EndClean | trace.EndFallback | trace.EndLost, Lost: 42}).AppendPayload(nil)))
	execd := variant("exec.vpt", trace.AppendChunk(trace.AppendChunk(bytes.Clone(noEnd), trace.ChunkNote,
		(&trace.Note{Kind: trace.NoteExec, Text: "/bin/next"}).AppendPayload(nil)), trace.ChunkEnd, (&trace.End{Flags: trace.EndExec}).AppendPayload(nil)))

	modes := [][]string{nil, {"--csv"}, {"--json"}, {"--heatmap", filepath.Join(dir, "h.png")}}
	for _, c := range []struct {
		path      string
		want, not []string // in the warnings
		status    string   // in the table's status line
	}{
		{complete, nil, nil, "status: complete"},
		{execd, nil, nil, "status: complete up to its exec of /bin/next"},
		{killed, []string{"killed.vpt: warning: incomplete trace: no end record", "was killed", "last 100 bytes"}, []string{"write error"}, "INCOMPLETE"},
		{full, []string{"full.vpt: warning: incomplete trace: write error (no space left on device, errno 28)"}, []string{"killed"}, "INCOMPLETE: write error"},
		{dam, []string{"damaged.vpt: warning: 1 damaged region(s)"}, nil, "status: complete; 1 damaged region(s) skipped"},
		{lost, []string{"lost.vpt: warning: incomplete trace: the aggregator stopped answering at exit (VPTRACE_EXIT_TIMEOUT_MS) holding 42 events it had not written: they are missing"},
			nil, "status: INCOMPLETE: the aggregator stopped answering at exit"},
		{dropped, []string{"dropped.vpt: warning: 3 events dropped (signal handlers"}, []string{"incomplete"}, "3 events DROPPED"},
	} {
		var first string
		for i, m := range modes {
			code, out, errs := runReport(t, append(append([]string{}, m...), c.path)...)
			if code != 0 || (m == nil && !strings.Contains(out, c.status)) {
				t.Errorf("%s %v: exit %d, stderr %q\n%s", filepath.Base(c.path), m, code, errs, out)
			}
			for _, l := range strings.Split(strings.TrimSpace(errs), "\n") {
				if l != "" && !strings.HasPrefix(l, "hijack: "+c.path+": warning: ") {
					t.Errorf("%s %v: stderr line %q", filepath.Base(c.path), m, l)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("%s %v: stderr lacks %q: %q", filepath.Base(c.path), m, w, errs)
				}
			}
			for _, w := range c.not {
				if strings.Contains(errs, w) {
					t.Errorf("%s %v: stderr says %q: %q", filepath.Base(c.path), m, w, errs)
				}
			}
			if c.want == nil && errs != "" {
				t.Errorf("%s %v: warnings for a complete trace: %q", filepath.Base(c.path), m, errs)
			}
			if i == 0 {
				first = errs
			} else if errs != first {
				t.Errorf("%s %v: warnings differ from the table's:\n%q\n%q", filepath.Base(c.path), m, errs, first)
			}
		}
	}
}

// TestReportExitCodes: 0 ok, 1 bad input, 2 usage; every error one line
// starting "hijack: ", naming the file when there is one.
func TestReportExitCodes(t *testing.T) {
	dir := t.TempDir()
	path := writeTrace(t, dir, true)
	data, _ := os.ReadFile(path)
	two := filepath.Join(dir, "two.vpt")
	os.WriteFile(two, append(bytes.Clone(data), data...), 0o644)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{two}, 1, two + ": the file holds the trace of more than one process (a second header at offset"},
		{[]string{"--csv", two}, 1, two + ": the file holds"},
		{[]string{"--heatmap", filepath.Join(dir, "h.png"), two}, 1, two + ": the file holds"},
		{[]string{"--top", "-1", path}, 2, "hijack: report: --top"},
		{[]string{"--csv", "--json", path}, 2, "hijack: report: --csv and --json exclude each other"},
		{[]string{"--bogus", path}, 2, "hijack: report: unknown flag: --bogus"},
		{nil, 2, "hijack: report: no trace file"},
		{[]string{"--heatmap", filepath.Join(dir, "h.png"), "--bogus", path}, 2, "hijack: report: unknown flag: --bogus"},
	} {
		code, out, errs := runReport(t, c.args...)
		if code != c.code || !strings.HasPrefix(errs, "hijack: ") || !strings.Contains(errs, c.msg) || strings.Count(errs, "\n") != 1 || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and one line with %q", c.args, code, out, errs, c.code, c.msg)
		}
	}
	// the report cannot be written (stdout full): exit 1, one line
	var se bytes.Buffer
	if code := run([]string{"report", "--csv", path}, failWriter{}, &se); code != 1 || !strings.HasPrefix(se.String(), "hijack: report: writing the report: ") || strings.Count(se.String(), "\n") != 1 {
		t.Errorf("stdout failing: exit %d, %q", code, se.String())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// writeBlocksTrace writes a trace with block counts only: two objects (one
// registered twice: loaded, unloaded, loaded again), three threads.
func writeBlocksTrace(t *testing.T, dir string) string {
	t.Helper()
	var buf bytes.Buffer
	w := trace.NewWriter(&buf)
	w.Begin(&trace.Header{PID: 900, PPID: 1, Program: "./bc", Cmdline: []string{"./bc", "-n", "3"}})
	strs := []byte("\x00hot.o\x00inner\x00main\x00")
	w.BlockObject(&trace.BlockObject{Reg: 1, Version: 1, ID: 0xaa, NameOff: 1, Strs: strs, Blocks: []trace.BlockRec{
		{Func: 13, Off: 0x0, Score: 0, LoopDepth: 0, Insns: 4},
		{Func: 7, Off: 0x1c, Score: 2500000, LoopDepth: 2, Insns: 3},
		{Func: 7, Off: 0x40, Score: 1000000, LoopDepth: 1, Insns: 5},
	}})
	w.BlockObject(&trace.BlockObject{Reg: 2, Version: 1, ID: 0xbb, NameOff: 1, Strs: []byte("\x00lib.o\x00f\x00"),
		Blocks: []trace.BlockRec{{Func: 7, Off: 0x8, Score: 500000, LoopDepth: 1}}})
	w.ThreadStart(&trace.ThreadStart{Serial: 1, TID: 900, Name: "bc"})
	w.BlockCounts(&trace.BlockCounts{Serial: 1, TID: 900, Reg: 1, Counts: counts(0, 1, 1, 5000, 2, 70)})
	w.BlockCounts(&trace.BlockCounts{Serial: 2, TID: 901, Reg: 1, Flags: trace.CountsFinal, Counts: counts(0, 1, 1, 800, 2, 40)})
	w.BlockCounts(&trace.BlockCounts{Serial: 3, TID: 902, Reg: 2, Counts: counts(0, 99)})
	w.BlockObject(&trace.BlockObject{Reg: 3, Version: 1, ID: 0xbb, NameOff: 1, Same: 2})
	w.BlockCounts(&trace.BlockCounts{Serial: 3, TID: 902, Reg: 3, Counts: counts(0, 1)})
	// a later, larger snapshot of thread 900
	w.BlockCounts(&trace.BlockCounts{Serial: 1, TID: 900, Reg: 1, Flags: trace.CountsFinal, Counts: counts(0, 1, 1, 6000, 2, 70)})
	w.End(&trace.End{Time: 50, Flags: trace.EndClean})
	w.Flush()
	path := filepath.Join(dir, "bc.vpt")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// counts builds block counts from (block, count) pairs.
func counts(pairs ...uint64) []trace.BlockCount {
	var c []trace.BlockCount
	for i := 0; i+1 < len(pairs); i += 2 {
		c = append(c, trace.BlockCount{Block: uint32(pairs[i]), Count: pairs[i+1]})
	}
	return c
}

func TestReportBlocksCSV(t *testing.T) {
	path := writeBlocksTrace(t, t.TempDir())
	code, out, errs := runReport(t, "--blocks", "--csv", path)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := "thread,function,offset,count,loop_depth,score\n" +
		"900,inner,0x1c,6000,2,2.5\n" +
		"901,inner,0x1c,800,2,2.5\n" +
		"902,f,0x8,100,1,0.5\n" +
		"900,inner,0x40,70,1,1\n" +
		"901,inner,0x40,40,1,1\n" +
		"900,main,0x0,1,0,0\n" +
		"901,main,0x0,1,0,0\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	// --top, --thread, single-dash spellings
	code, out, _ = runReport(t, "-blocks", "-csv", "-top", "2", path)
	if code != 0 || out != strings.Join(strings.SplitAfter(want, "\n")[:3], "") {
		t.Errorf("--top 2: exit %d\n%s", code, out)
	}
	code, out, _ = runReport(t, "--blocks", "--csv", "--thread", "901", path)
	if code != 0 || out != "thread,function,offset,count,loop_depth,score\n901,inner,0x1c,800,2,2.5\n901,inner,0x40,40,1,1\n901,main,0x0,1,0,0\n" {
		t.Errorf("--thread 901: exit %d\n%s", code, out)
	}
}

func TestReportBlocksText(t *testing.T) {
	path := writeBlocksTrace(t, t.TempDir())
	code, out, errs := runReport(t, "--blocks", "--top", "3", path)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows [][]string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 6 && f[0] != "thread" {
			rows = append(rows, f)
		}
	}
	want := [][]string{ // the 3 hottest blocks over all threads, then of a thread
		{"all", "inner", "0x1c", "6800", "2", "2.5"},
		{"all", "inner", "0x40", "110", "1", "1"},
		{"all", "f", "0x8", "100", "1", "0.5"},
		{"900", "inner", "0x1c", "6000", "2", "2.5"},
		{"901", "inner", "0x1c", "800", "2", "2.5"},
		{"902", "f", "0x8", "100", "1", "0.5"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows:\n%s", len(rows), out)
	}
	for i := range want {
		if strings.Join(rows[i], " ") != strings.Join(want[i], " ") {
			t.Errorf("row %d: %v, want %v", i, rows[i], want[i])
		}
	}
	for _, s := range []string{"pid 900", "./bc -n 3", "2 blockcount object(s) (3 loads), 4 blocks; 3 thread(s) counted 7012 block executions", "loop_depth"} {
		if !strings.Contains(out, s) {
			t.Errorf("lacks %q:\n%s", s, out)
		}
	}
	// one thread: no totals
	_, out, _ = runReport(t, "--blocks", "--thread", "902", path)
	if strings.Contains(out, " all ") || !strings.Contains(out, "902  f") {
		t.Errorf("--thread 902:\n%s", out)
	}
	// the default report mentions the counts
	_, out, _ = runReport(t, path)
	if !strings.Contains(out, "block counts: 2 blockcount object(s), 7012 block executions (hijack report --blocks)") {
		t.Errorf("default report:\n%s", out)
	}
}

func TestReportBlocksJSON(t *testing.T) {
	path := writeBlocksTrace(t, t.TempDir())
	code, out, _ := runReport(t, "--blocks", "--json", path)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var v struct {
		Traces []struct {
			PID     uint32   `json:"pid"`
			Objects []string `json:"objects"`
			Blocks  []struct {
				Thread, Function, Offset, Object string
				Count                            uint64
				LoopDepth                        int     `json:"loop_depth"`
				Score                            float64 `json:"score"`
				Insns                            int     `json:"insns"`
			} `json:"blocks"`
			Totals []struct {
				Thread string
				Count  uint64
			} `json:"totals"`
		} `json:"traces"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	tr := v.Traces[0]
	b := tr.Blocks[0]
	if tr.PID != 900 || len(tr.Objects) != 3 || len(tr.Blocks) != 7 || len(tr.Totals) != 4 ||
		b.Thread != "900" || b.Function != "inner" || b.Offset != "0x1c" || b.Count != 6000 || b.LoopDepth != 2 ||
		b.Score != 2.5 || b.Insns != 3 || b.Object != "hot.o" || tr.Totals[0].Thread != "all" || tr.Totals[0].Count != 6800 {
		t.Errorf("%+v", tr)
	}
}

// TestReportBlocksNone: a trace without block counts is an error for
// --blocks (one line, exit 1), in every format; with several traces, one
// with counts is enough, the others say they have none.
func TestReportBlocksNone(t *testing.T) {
	dir := t.TempDir()
	pages := writeTrace(t, dir, true)
	for _, mode := range [][]string{nil, {"--csv"}, {"--json"}} {
		code, out, errs := runReport(t, append(append([]string{"--blocks"}, mode...), pages)...)
		if code != 1 || out != "" || errs != "hijack: "+pages+": no block counts (no object of the program was instrumented with the blockcount preset)\n" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", mode, code, out, errs)
		}
	}
	blocks := writeBlocksTrace(t, dir)
	code, out, errs := runReport(t, "--blocks", pages, blocks)
	if code != 0 || errs != "" || !strings.Contains(out, "app.vpt: pid 4242") || !strings.Contains(out, "no block counts (no object instrumented with the blockcount preset)") || !strings.Contains(out, "6800") {
		t.Errorf("two traces: exit %d, stderr %q\n%s", code, errs, out)
	}
	// help names the option and the CSV columns
	var so bytes.Buffer
	if run([]string{"help", "report"}, &so, io.Discard) != 0 || !strings.Contains(so.String(), "--blocks") || !strings.Contains(so.String(), "thread,function,offset,count,loop_depth,score") {
		t.Errorf("hijack help report:\n%s", so.String())
	}
}

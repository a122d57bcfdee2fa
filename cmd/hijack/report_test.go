package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
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
	w.Agg(&trace.Agg{Serial: 2, TID: 4250, From: 40, To: 100, Drops: 1, Pages: []trace.PageAgg{
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
		{"thread", "page", "reads", "writes", "events", "first_ns", "last_ns", "sites", "top_function", "top_insn", "top_symbol", "segment", "object", "pid"},
		{"4242", "0x55550000", "10", "0", "10", "10", "90", "1", "main", "0x1c", "", "unknown", "app.o", "4242"},
		{"4242", "0x55551000", "1", "2", "3", "20", "30", "2", "sum, total", "0x40", "table", "global", "app.o", "4242"},
		{"4250", "0x7ffd0000", "4", "4", "4", "41", "60", "1", "sum, total", "0x48", "", "stack", "app.o", "4242"},
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
		"thread 4242 (app): 2 pages, 8.0 KiB", "0x55551000", "sum, total+0x40", "table", "by function", "by variable",
		"[unknown]", "worker", "phase 2", "1 events DROPPED"} {
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

package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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
		{nil, 2, "Usage"},
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
	if code != 0 || errs != "" || !strings.Contains(out, "INCOMPLETE") || !strings.Contains(out, "100 bytes (an unfinished chunk) ignored") {
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

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

// writeProc writes a trace of process pid: each thread touches the pages
// given, one event each (reads), at the one site of its object.
func writeProc(t *testing.T, path string, pid, ppid uint32, threads map[uint32][]uint64) {
	t.Helper()
	var buf bytes.Buffer
	w := trace.NewWriter(&buf)
	h := &trace.Header{PID: pid, PPID: ppid, Program: "./job", StartMono: 1e9}
	if ppid != 1 {
		h.Flags = trace.HeaderForked
	}
	w.Begin(h)
	w.Object(&trace.Object{Desc: 0x1000, SitesAddr: 0x1030, StrsAddr: 0x1050, NameOff: 1,
		Sites: []trace.SiteRec{{Func: 7, InsnOff: 0x10, Sym: trace.NoSym, Kind: trace.KindRead}}, Strs: []byte("\x00job.o\x00work\x00")})
	serial := uint64(1)
	for tid, pages := range threads {
		w.ThreadStart(&trace.ThreadStart{Serial: serial, TID: tid, Time: 1})
		a := &trace.Agg{Serial: serial, TID: tid, From: 1, To: 100}
		for _, pg := range pages {
			a.Pages = append(a.Pages, trace.PageAgg{Page: pg, Events: 1, Reads: 1, First: 10, Last: 10,
				Sites: []trace.SiteCount{{Site: 0x1030, Count: 1}}})
		}
		w.Agg(a)
		serial++
	}
	w.End(&trace.End{Time: 100, Flags: trace.EndClean})
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

// TestReportMany: a directory of a job's traces (a parent, a fork child
// in a subdirectory, another process given as a file): runs named by
// path, the merged totals, and the pages shared by threads and processes.
func TestReportMany(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job")
	writeProc(t, filepath.Join(job, "parent.vpt"), 100, 1, map[uint32][]uint64{
		100: {0x500, 0x501}, 101: {0x501, 0x502}}) // 0x501: two threads
	writeProc(t, filepath.Join(job, "kids", "child.vpt"), 200, 100, map[uint32][]uint64{
		200: {0x500, 0x501, 0x600}}) // 0x500, 0x501: inherited by fork
	other := filepath.Join(dir, "other.vpt")
	writeProc(t, other, 300, 1, map[uint32][]uint64{300: {0x700}})
	if err := os.WriteFile(filepath.Join(job, "notes.txt"), []byte("not a trace"), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errs := runReport(t, "--csv", job, other)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := rows[0][len(rows[0])-2:]; got[0] != "owner" || got[1] != "run" {
		t.Errorf("last columns %q, want owner, run", got)
	}
	runs := map[string]int{}
	for _, r := range rows[1:] {
		runs[r[len(r)-1]]++
	}
	if want := map[string]int{"kids/child": 3, "parent": 4, "other": 1}; !equalMaps(runs, want) {
		t.Errorf("rows per run %v, want %v", runs, want)
	}

	code, out, errs = runReport(t, "--json", job, other)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var js struct {
		Traces []struct {
			Run string `json:"run"`
			PID uint32 `json:"pid"`
		} `json:"traces"`
		Merged      procTotals   `json:"merged"`
		SharedPages []jsonShared `json:"shared_pages"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Traces) != 3 || js.Traces[0].Run != "kids/child" || js.Traces[1].Run != "parent" || js.Traces[2].Run != "other" {
		t.Errorf("traces %+v", js.Traces)
	}
	m := js.Merged
	if m.Processes != 3 || m.Threads != 4 || m.Pages != 8 || m.DistinctPages != 7 || m.Events != 8 {
		t.Errorf("merged %+v", m)
	}
	shared := map[string][2]int{}
	for _, sp := range js.SharedPages {
		shared[sp.Page] = [2]int{sp.Processes, sp.Threads}
	}
	want := map[string][2]int{"0x500000": {2, 2}, "0x501000": {2, 3}}
	if len(shared) != len(want) || shared["0x500000"] != want["0x500000"] || shared["0x501000"] != want["0x501000"] {
		t.Errorf("shared pages %v, want %v", shared, want)
	}
	if len(js.SharedPages) > 0 && js.SharedPages[0].Page != "0x501000" {
		t.Errorf("first shared page %s, want the one of 2 processes and 3 threads", js.SharedPages[0].Page)
	}

	code, out, errs = runReport(t, job, other)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"all 3 processes: 4 threads; 8 (thread, page) pairs, 7 distinct pages",
		"shared pages: 1 touched by more than one thread of a process",
		"same address in several processes: 2 pages", "200/200 100/100 100/101", "kids/child"} {
		if !strings.Contains(out, s) {
			t.Errorf("the report lacks %q:\n%s", s, out)
		}
	}

	// one process: pages shared by its threads, no merged view
	_, out, _ = runReport(t, filepath.Join(job, "parent.vpt"))
	if strings.Contains(out, "processes:") || !strings.Contains(out, "shared pages: 1 touched by more than one thread of a process\n") ||
		strings.Contains(out, "several processes") {
		t.Errorf("one trace:\n%s", out)
	}

	// a directory without traces
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if code, _, errs := runReport(t, empty); code != 1 || !strings.Contains(errs, "no trace files") {
		t.Errorf("empty directory: exit %d, %s", code, errs)
	}
}

func equalMaps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

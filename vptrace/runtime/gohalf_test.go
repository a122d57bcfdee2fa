package main

// Tests of libvptrace.so's lazily loaded Go half (rt_gohalf.c): vt-so is
// vt linked with the shared runtime. Whether the aggregator was loaded is
// read from the trace (libvptrace-go.so among the mappings at exit, AGG
// chunks); the events are compared exactly either way.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hijack/vptrace/trace"
)

// goHalfMapped says whether libvptrace-go.so is among the trace's last
// MAPS snapshot's mappings (the one at exit).
func goHalfMapped(tr *trace.Trace) bool {
	if len(tr.Maps) == 0 {
		return false
	}
	for _, m := range tr.Maps[len(tr.Maps)-1].Maps {
		if strings.HasSuffix(m.Path, "/libvptrace-go.so") {
			return true
		}
	}
	return false
}

func TestGoHalfLazy(t *testing.T) {
	needVT(t)
	// (an interval of a minute: only the case that asks for one ends one)
	long := "VPTRACE_INTERVAL_MS=60000"
	for _, c := range []struct {
		name   string
		env    []string
		args   []string
		loaded bool
	}{
		// 27000 events in buffers of 174000: nothing handed over but
		// four exiting threads' few
		{"short", []string{long, "VPTRACE_BUFKB=4096"}, []string{"basic", "4"}, false},
		// 24000 events of one thread in buffers of 2700: handed over
		{"handoffs", []string{long}, []string{"basic", "4"}, true},
		// a few events, an interval's end (the scenario sleeps 300 ms)
		{"interval", []string{"VPTRACE_INTERVAL_MS=20"}, []string{"epochs"}, true},
		// no clock thread to load it when needed: loaded at once
		{"noclock", []string{long, "VPTRACE_BUFKB=4096", "VPTRACE_CLOCK_US=0"}, []string{"basic", "4"}, true},
		// C only: never
		{"raw", []string{"VPTRACE_RAW=1"}, []string{"basic", "4"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runVTBin(t, vtSOBin, c.env, c.args...)
			mustOK(t, r)
			tr := load(t, r.trace)
			compare(t, tr, expectations(t, r.stdout))
			checkClean(t, tr)
			if got := goHalfMapped(tr); got != c.loaded {
				t.Errorf("libvptrace-go.so mapped at exit: %v, want %v", got, c.loaded)
			}
			if aggs := tr.Chunks[trace.ChunkAgg] + tr.Chunks[trace.ChunkAggCols]; (aggs > 0) != c.loaded {
				t.Errorf("%d AGG chunks with the aggregator loaded %v", aggs, c.loaded)
			}
			if r.stderr != "" {
				t.Errorf("stderr: %s", r.stderr)
			}
		})
	}
}

// TestGoHalfMissing: without libvptrace-go.so beside libvptrace.so the
// process goes on in C only: the trace is complete and exact, stderr and
// a warning note say why.
func TestGoHalfMissing(t *testing.T) {
	needVT(t)
	lib := t.TempDir()
	so, err := os.ReadFile(filepath.Join(libDir, "libvptrace.so"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, "libvptrace.so"), so, 0o755); err != nil {
		t.Fatal(err)
	}
	// (LD_LIBRARY_PATH comes before vt-so's RUNPATH)
	r := runVTBin(t, vtSOBin, []string{"LD_LIBRARY_PATH=" + lib}, "basic", "4")
	mustOK(t, r)
	tr := load(t, r.trace)
	compare(t, tr, expectations(t, r.stdout))
	checkClean(t, tr)
	if !strings.Contains(r.stderr, "vptrace: cannot load the aggregator (") || !strings.Contains(r.stderr, "libvptrace-go.so") {
		t.Errorf("stderr does not say the aggregator could not be loaded:\n%s", r.stderr)
	}
	if n := strings.Count(r.stderr, "\n"); n != 1 {
		t.Errorf("%d lines on stderr, want 1:\n%s", n, r.stderr)
	}
	if aggs := tr.Chunks[trace.ChunkAgg] + tr.Chunks[trace.ChunkAggCols]; aggs != 0 || tr.Chunks[trace.ChunkRaw] == 0 {
		t.Errorf("%d AGG, %d RAW chunks: want all raw", aggs, tr.Chunks[trace.ChunkRaw])
	}
	warned := false
	for _, n := range tr.Notes {
		warned = warned || n.Kind == trace.NoteWarning && strings.Contains(n.Text, "libvptrace-go.so")
	}
	if !warned {
		t.Errorf("no warning note names libvptrace-go.so")
	}
}

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"hijack/internal/traceevent"
)

// TestVptracePerfetto: the timeline of a real program's traces (the mt
// workload: 8 threads in two waves), one run written compressed
// (the runtime's default) and one not (VPTRACE_COMPRESS=0), both with a
// short interval (5 ms; each thread works for several: 20 rounds, where
// 2 let threads of a faster build end within two intervals): hijack report --perfetto DIR writes valid trace event
// JSON (internal/traceevent: required fields, a name per process and
// thread, counter tracks that never go back in time), one process per
// file, and each thread's "pages touched" counters add up to its events as
// hijack report --json counts them.
func TestVptracePerfetto(t *testing.T) {
	needHijack(t)
	if cfg.fake {
		t.Skip("the copy-through stand-in rewriter does not trace")
	}
	lib := vptLib(t)
	ws, err := loadVptWorkloads()
	if err != nil {
		t.Fatal(err)
	}
	var w *vptWorkload
	for i := range ws {
		if ws[i].name == "mt" {
			w = &ws[i]
		}
	}
	if w == nil {
		t.Fatal("no workload mt")
	}
	dir := workDir(t)
	kobj := compile(t, "gcc", append([]string{"-O2"}, vptKernelFlags...), w.kern)
	dobj := compile(t, "gcc", vptDriverFlags, w.drv)
	rules := filepath.Join(dir, "rules.yaml")
	writeFile(t, rules, []byte(vptT0.rules()))
	inst := filepath.Join(dir, "kern.inst.o")
	if err := rewrite(rules, kobj, inst); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "app")
	link(t, "gcc", prog, []string{dobj, inst, lib}, "-lpthread")
	runs := filepath.Join(dir, "runs")
	for _, r := range []struct{ name, compress string }{{"packed", "1"}, {"plain", "0"}} {
		okRun(t, spec{Dir: dir, Timeout: 2 * time.Minute, Env: []string{"VPTRACE_OUT=" + filepath.Join(runs, r.name+".vpt"),
			"VPTRACE_INTERVAL_MS=5", "VPTRACE_COMPRESS=" + r.compress}}, prog, "2", "20")
	}
	for _, n := range []string{"packed", "plain"} {
		fi, err := os.Stat(filepath.Join(runs, n+".vpt"))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s.vpt: %d bytes", n, fi.Size())
	}
	out := filepath.Join(dir, "timeline.json")
	okRun(t, spec{Dir: dir, Timeout: 2 * time.Minute}, cfg.hijack, "report", "--perfetto", out, runs)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s, err := traceevent.Check(data)
	if err != nil {
		t.Fatalf("%s is not valid trace event JSON: %v", out, err)
	}
	js := okRun(t, spec{Dir: dir, Timeout: 2 * time.Minute}, cfg.hijack, "report", "--json", runs)
	var rep struct {
		Traces []struct {
			Run     string `json:"run"`
			PID     uint32 `json:"pid"`
			Threads []struct {
				TID    uint32 `json:"tid"`
				Events uint64 `json:"events"`
				Pages  int    `json:"pages"`
				Reads  uint64 `json:"reads"`
				Writes uint64 `json:"writes"`
			} `json:"threads"`
		} `json:"traces"`
	}
	if err := json.Unmarshal(js.Stdout, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Traces) != 2 || len(s.ProcessNames) != 2 {
		t.Fatalf("%d traces, %d processes in the timeline", len(rep.Traces), len(s.ProcessNames))
	}
	busy := 0
	for _, tr := range rep.Traces {
		if _, ok := s.ProcessNames[tr.PID]; !ok {
			t.Errorf("run %s (pid %d) is no process of the timeline", tr.Run, tr.PID)
		}
		for _, th := range tr.Threads {
			k := traceevent.Thread{PID: tr.PID, TID: th.TID}
			c := s.Counters[k]
			if c["pages touched"] != float64(th.Events) || c["reads"] != float64(th.Reads) || c["writes"] != float64(th.Writes) {
				t.Errorf("run %s thread %d: counters %v, the report counts %d events (%d reads, %d writes)",
					tr.Run, th.TID, c, th.Events, th.Reads, th.Writes)
			}
			if m := s.MaxCounter[k]["working set (pages)"]; m > float64(th.Pages) || (th.Pages > 0 && m == 0) {
				t.Errorf("run %s thread %d: largest interval working set %v, %d pages in all", tr.Run, th.TID, m, th.Pages)
			}
			if th.Events > 0 && s.Samples[k] > 2 {
				busy++
			}
		}
	}
	if busy < 4 {
		t.Errorf("only %d threads with more than two counter samples: %v", busy, s.Samples)
	}
	t.Logf("%d events, %d counter tracks, %d instants; %d threads with more than two counter samples", s.Events, len(s.Samples), len(s.Instants), busy)
}

package e2e

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestParquet: the traces of a real program (the demo's: threads filling
// malloc'ed arrays and reading a global table), run with 2 and 4 threads
// into a directory, exported with hijack report --parquet DIR and queried
// with hijack query: the pages rows summed per (thread, page, owner) are
// hijack report --csv's, row for row; the runs are told apart.
func TestParquet(t *testing.T) {
	needHijack(t)
	if cfg.fake {
		t.Skip("the copy-through stand-in rewriter does not trace")
	}
	rt := vptRuntimeDir(t)
	needFile(t, filepath.Join(filepath.Dir(cfg.hijack), "hijack-query"), "hijack query's DuckDB half: make build")
	dir := workDir(t)
	var insts []string
	for _, name := range []string{"main", "work"} {
		obj := compile(t, "gcc", []string{"-O2", "-g"}, filepath.Join(cfg.root, "examples", "makefile", "src", name+".c"))
		inst := filepath.Join(dir, name+".inst.o")
		okRun(t, spec{Dir: dir}, cfg.hijack, "--preset", "vptrace", obj, inst)
		insts = append(insts, inst)
	}
	prog := filepath.Join(dir, "app")
	link(t, "gcc", prog, insts, "-pthread", "-L"+rt, "-lvptrace", "-Wl,-rpath,"+rt)
	traces := filepath.Join(dir, "traces")
	for _, n := range []string{"2", "4"} {
		okRun(t, spec{Dir: dir, Timeout: 2 * time.Minute, Env: []string{"VPTRACE_OUT=" + filepath.Join(traces, "t"+n, "%p.vpt")}}, prog, n)
	}
	files, _ := filepath.Glob(filepath.Join(traces, "*", "*.vpt"))
	if len(files) != 2 {
		t.Fatalf("traces: %v", files)
	}
	ds := filepath.Join(dir, "ds")
	r := okRun(t, spec{Dir: dir, Timeout: 2 * time.Minute}, cfg.hijack, "report", "--parquet", ds, traces)
	if !strings.Contains(string(r.Stdout), "2 run(s)") || len(r.Stderr) > 0 {
		t.Errorf("report --parquet: %s %s", r.Stdout, r.Stderr)
	}
	rep := okRun(t, spec{Dir: dir, Timeout: 2 * time.Minute}, cfg.hijack, append([]string{"report", "--csv"}, files...)...)
	q := okRun(t, spec{Dir: dir, Timeout: 2 * time.Minute}, cfg.hijack, "query", "--csv", ds, `
		SELECT pid, thread, printf('%#x', page) AS page, sum(reads) AS reads, sum(writes) AS writes, sum(events) AS events,
		       min(first_ns) AS first_ns, max(last_ns) AS last_ns, segment, owner
		FROM pages GROUP BY pid, thread, page, segment, owner`)
	cols := []string{"pid", "thread", "page", "reads", "writes", "events", "first_ns", "last_ns", "segment", "owner"}
	want, owners := project(t, rep.Stdout, cols)
	// --csv writes a row per part of a page: a heap page whose blocks came
	// and went while a thread used it has a row per block, and blocks of
	// one allocation site share an owner name (a thread's freed array and
	// the next thread's at its address); the query groups by the name.
	want = groupPages(t, want)
	got, _ := project(t, q.Stdout, cols)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the dataset's %d rows differ from --csv's %d", len(got), len(want))
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Errorf("first difference:\n got %s\nwant %s", got[i], want[i])
				break
			}
		}
	}
	t.Logf("%d rows of --csv compared, %d owners", len(want), len(owners))
	if !owners["table"] || len(want) < 1000 {
		t.Errorf("%d rows, owners %v: want the global table's pages among them", len(want), owners)
	}
	heap := false
	for o := range owners {
		heap = heap || strings.HasPrefix(o, "malloc@thread+")
	}
	if !heap {
		t.Errorf("no page of the threads' malloc'ed arrays: %v", owners)
	}
	q = okRun(t, spec{Dir: dir}, cfg.hijack, "query", "--csv", ds,
		`SELECT split_part(run, '/', 1) AS t, count(DISTINCT thread) AS threads FROM pages GROUP BY ALL ORDER BY ALL`)
	if string(q.Stdout) != "t,threads\nt2,3\nt4,5\n" {
		t.Errorf("threads per run:\n%s", q.Stdout)
	}
}

// groupPages sums rows of project's pages columns that share pid, thread,
// page, segment and owner as the test's query does: reads, writes and
// events added, the first first_ns and the last last_ns kept.
func groupPages(t *testing.T, rows []string) []string {
	t.Helper()
	type sums struct{ reads, writes, events, first, last uint64 }
	by := map[string]*sums{}
	var keys []string
	for _, row := range rows {
		f := strings.Split(row, ",")
		if len(f) < 10 {
			t.Fatalf("row %q: want 10 fields", row)
		}
		f[9] = strings.Join(f[9:], ",") // an owner may hold commas (a C++ caller)
		var n [5]uint64
		for i := range n {
			v, err := strconv.ParseUint(f[3+i], 10, 64)
			if err != nil {
				t.Fatalf("row %q: %v", row, err)
			}
			n[i] = v
		}
		key := strings.Join([]string{f[0], f[1], f[2], f[8], f[9]}, ",")
		s := by[key]
		if s == nil {
			by[key] = &sums{n[0], n[1], n[2], n[3], n[4]}
			keys = append(keys, key)
			continue
		}
		s.reads += n[0]
		s.writes += n[1]
		s.events += n[2]
		s.first = min(s.first, n[3])
		s.last = max(s.last, n[4])
	}
	out := make([]string, 0, len(keys))
	for _, key := range keys {
		k, s := strings.SplitN(key, ",", 5), by[key]
		out = append(out, fmt.Sprintf("%s,%s,%s,%d,%d,%d,%d,%d,%s,%s", k[0], k[1], k[2],
			s.reads, s.writes, s.events, s.first, s.last, k[3], k[4]))
	}
	sort.Strings(out)
	return out
}

// project returns the CSV's rows as the given columns, sorted, and the
// owners seen.
func project(t *testing.T, data []byte, cols []string) ([]string, map[string]bool) {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("csv: %v\n%s", err, data)
	}
	idx := map[string]int{}
	for i, h := range recs[0] {
		idx[h] = i
	}
	owners := map[string]bool{}
	var out []string
	for _, rec := range recs[1:] {
		var f []string
		for _, c := range cols {
			i, ok := idx[c]
			if !ok {
				t.Fatalf("no column %s in %v", c, recs[0])
			}
			f = append(f, rec[i])
		}
		owners[rec[idx["owner"]]] = true
		out = append(out, strings.Join(f, ","))
	}
	sort.Strings(out)
	return out, owners
}

package e2e

import (
	"bytes"
	"encoding/csv"
	"path/filepath"
	"reflect"
	"sort"
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

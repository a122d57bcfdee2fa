//go:build duckdb

package query

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"hijack/internal/tracegen"
	"hijack/vptrace/dataset"
	"hijack/vptrace/trace"
)

// export writes traces made by gen as runs of a dataset in dir/ds.
func export(t *testing.T, dir string, runs map[string]func(w *bytes.Buffer)) string {
	t.Helper()
	out := filepath.Join(dir, "ds")
	e, err := dataset.Create(out, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var inputs []dataset.Input
	for run, gen := range runs {
		var buf bytes.Buffer
		gen(&buf)
		p := filepath.Join(dir, strings.ReplaceAll(run, "/", "_")+".vpt")
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, dataset.Input{Path: p, Run: run})
	}
	if err := e.Add(inputs, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(); err != nil {
		t.Fatal(err)
	}
	return out
}

func synthetic(c tracegen.Config) func(w *bytes.Buffer) {
	return func(w *bytes.Buffer) {
		if _, err := tracegen.Generate(w, c); err != nil {
			panic(err)
		}
	}
}

func mustQuery(t *testing.T, db *DB, sql string) *Result {
	t.Helper()
	r, err := db.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return r
}

func csvOf(t *testing.T, r *Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.CSV(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRuns: a directory of three runs is one dataset, the run column
// tells them apart, and every table has each run.
func TestRuns(t *testing.T) {
	dir := t.TempDir()
	out := export(t, dir, map[string]func(*bytes.Buffer){
		"sweep/T0":   synthetic(tracegen.Config{Seed: 1, PID: 100, Threads: 2, Intervals: 3, Pages: 10, Working: 16, Allocs: true}),
		"sweep/T0.5": synthetic(tracegen.Config{Seed: 2, PID: 200, Threads: 3, Intervals: 4, Pages: 10, Working: 16, Allocs: true, Notes: 2}),
		"1234":       synthetic(tracegen.Config{Seed: 3, PID: 1234, Threads: 1, Intervals: 5, Pages: 10, Working: 16}),
	})
	db, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !reflect.DeepEqual(db.Tables, dataset.Tables) {
		t.Errorf("views %v, want %v", db.Tables, dataset.Tables)
	}
	got := csvOf(t, mustQuery(t, db, `SELECT run, min(pid) AS pid, count(DISTINCT thread) AS threads, count(DISTINCT interval_start_ns) AS intervals
		FROM pages GROUP BY run ORDER BY run`))
	want := "run,pid,threads,intervals\n1234,1234,1,5\nsweep/T0,100,2,3\nsweep/T0.5,200,3,4\n"
	if got != want {
		t.Errorf("pages by run:\n%s\nwant\n%s", got, want)
	}
	got = csvOf(t, mustQuery(t, db, `SELECT r.run, r.page_rows = (SELECT count(*) FROM pages p WHERE p.run = r.run) AS rows_ok,
		(SELECT count(*) FROM threads h WHERE h.run = r.run) AS threads, (SELECT count(*) FROM notes n WHERE n.run = r.run) AS notes
		FROM runs r ORDER BY run`))
	want = "run,rows_ok,threads,notes\n1234,true,1,0\nsweep/T0,true,2,0\nsweep/T0.5,true,3,2\n"
	if got != want {
		t.Errorf("runs:\n%s\nwant\n%s", got, want)
	}
	if r := mustQuery(t, db, "SELECT typeof(run), typeof(page), typeof(first_ns) FROM pages LIMIT 1"); !reflect.DeepEqual(r.Rows[0], []any{"VARCHAR", "UBIGINT", "BIGINT"}) {
		t.Errorf("types %v", r.Rows[0])
	}
}

// TestOwners: a trace with allocation events, mappings, and threads'
// stack and TLS ranges (format 1.3) names every page's owner in the
// pages table: heap blocks by allocator and site (a block freed and its
// pages reused by another: the owner changes at that time), a file
// mapping by its path, an anonymous one by its site, stack:TID, tls:TID;
// pages in no region and no mapping are unknown.
func TestOwners(t *testing.T) {
	const pg = trace.PageSize
	gen := func(b *bytes.Buffer) {
		w := trace.NewWriter(b)
		w.Begin(&trace.Header{PID: 50, IntervalMS: 100})
		w.Maps(&trace.Maps{Time: 0, Why: trace.MapsStart, Maps: []trace.Mapping{
			{Start: 0x10000000, End: 0x20000000, Prot: trace.ProtRead | trace.ProtWrite, Path: "[heap]"},
			{Start: 0x7000000000, End: 0x7000100000, Prot: trace.ProtRead | trace.ProtWrite},
		}})
		w.ThreadStart(&trace.ThreadStart{Serial: 1, TID: 50, Time: 1, Name: "main",
			Stack: trace.Range{Lo: 0x7ff000000000, Hi: 0x7ff000100000}, TLS: []trace.Range{{Lo: 0x7f0000000000, Hi: 0x7f0000000000 + 2*pg}}})
		w.ThreadStart(&trace.ThreadStart{Serial: 2, TID: 51, Time: 2, Name: "worker",
			Stack: trace.Range{Lo: 0x7ff100000000, Hi: 0x7ff100100000}})
		w.Allocs(&trace.Allocs{Serial: 1, TID: 50, Events: []trace.AllocEvent{
			{Seq: 1, Time: 5, Kind: trace.AllocMalloc, Addr: 0x10000000, Size: 2 * pg, Site: 0x401111},
			{Seq: 2, Time: 6, Kind: trace.AllocMmap, Addr: 0x7e0000000000, Size: 3 * pg, Site: 0x402222, Flags: trace.AllocFile, Path: "/data/input.bin"},
			{Seq: 3, Time: 7, Kind: trace.AllocMmap, Addr: 0x7e1000000000, Size: pg, Site: 0x403333},
			{Seq: 4, Time: 150, Kind: trace.AllocFree, Addr: 0x10000000},
			{Seq: 5, Time: 160, Kind: trace.AllocNewArray, Addr: 0x10000000, Size: pg, Site: 0x404444},
		}})
		agg := func(serial uint64, tid uint32, from uint64, pages ...uint64) {
			a := &trace.Agg{Serial: serial, TID: tid, From: from, To: from + 100}
			for _, p := range pages {
				a.Pages = append(a.Pages, trace.PageAgg{Page: p >> trace.PageShift, Events: 1, Reads: 1, First: from + 10, Last: from + 10})
			}
			w.Agg(a)
		}
		agg(1, 50, 0, 0x10000000, 0x10001000, 0x7e0000002000, 0x7e1000000000, 0x7ff0000ff000, 0x7f0000001000, 0x30000000, 0x7000000000)
		agg(2, 51, 0, 0x7ff1000fe000, 0x10001000)
		agg(1, 50, 200, 0x10000000, 0x10001000) // after the free: the new[] block, and heap no block covers
		w.End(&trace.End{Time: 400, Flags: trace.EndClean})
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	out := export(t, t.TempDir(), map[string]func(*bytes.Buffer){"owners": gen})
	db, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := csvOf(t, mustQuery(t, db, `SELECT thread, printf('%#x', page) AS page, interval_start_ns AS t, segment, owner FROM pages ORDER BY t, thread, page`))
	want := `thread,page,t,segment,owner
50,0x10000000,0,heap,malloc@0x401111
50,0x10001000,0,heap,malloc@0x401111
50,0x30000000,0,unknown,unknown
50,0x7000000000,0,mmap,anon
50,0x7e0000002000,0,mmap,/data/input.bin
50,0x7e1000000000,0,mmap,mmap@0x403333
50,0x7f0000001000,0,tls,tls:50
50,0x7ff0000ff000,0,stack,stack:50
51,0x10001000,0,heap,malloc@0x401111
51,0x7ff1000fe000,0,stack,stack:51
50,0x10000000,200,heap,new[]@0x404444
50,0x10001000,200,heap,unknown
`
	if got != want {
		t.Errorf("owners:\n%s\nwant\n%s", got, want)
	}
	got = csvOf(t, mustQuery(t, db, `SELECT owner, allocator, count, bytes, pages, events FROM allocations ORDER BY owner`))
	want = `owner,allocator,count,bytes,pages,events
malloc@0x401111,malloc,1,8192,2,3
mmap@0x402222,mmap,1,12288,1,1
mmap@0x403333,mmap,1,4096,1,1
new[]@0x404444,new[],1,4096,1,1
`
	if got != want {
		t.Errorf("allocations:\n%s\nwant\n%s", got, want)
	}
}

// TestFormats: the text, CSV and JSON outputs of values of many types.
func TestFormats(t *testing.T) {
	out := export(t, t.TempDir(), map[string]func(*bytes.Buffer){
		"x": synthetic(tracegen.Config{Seed: 1, Threads: 1, Intervals: 1, Pages: 2, Working: 4}),
	})
	db, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := mustQuery(t, db, `SELECT 18446744073709551615::UBIGINT AS big, -5 AS neg, 'a,b' AS s, NULL AS n, 1.5::DOUBLE AS f,
		[1, 2] AS l, {'k': 'v'} AS st, sum(18446744073709551615::UBIGINT) OVER () AS huge, 'line
two' AS nl`)
	var b bytes.Buffer
	r.Text(&b)
	wantText := `                 big  neg  s       n    f  l      st                         huge  nl
--------------------  ---  ---  ----  ---  -----  ---------  --------------------  ---------
18446744073709551615   -5  a,b  NULL  1.5  [1,2]  {"k":"v"}  18446744073709551615  line\ntwo
(1 row)
`
	if b.String() != wantText {
		t.Errorf("text:\n%s\nwant\n%s", b.String(), wantText)
	}
	wantCSV := "big,neg,s,n,f,l,st,huge,nl\n18446744073709551615,-5,\"a,b\",,1.5,\"[1,2]\",\"{\"\"k\"\":\"\"v\"\"}\",18446744073709551615,\"line\ntwo\"\n"
	if got := csvOf(t, r); got != wantCSV {
		t.Errorf("csv:\n%q\nwant\n%q", got, wantCSV)
	}
	b.Reset()
	r.JSON(&b)
	wantJSON := `[
  {"big": 18446744073709551615, "neg": -5, "s": "a,b", "n": null, "f": 1.5, "l": [1,2], "st": {"k":"v"}, "huge": 18446744073709551615, "nl": "line\ntwo"}
]
`
	if b.String() != wantJSON {
		t.Errorf("json:\n%s\nwant\n%s", b.String(), wantJSON)
	}
	// a MAP with BLOB keys database/sql cannot scan: the columns as text
	r = mustQuery(t, db, `SELECT key_value_metadata AS kv, 1 AS one FROM parquet_metadata('`+filepath.Join(out, "runs", "run=x", "part-0.parquet")+`') LIMIT 1`)
	if len(r.Rows) != 1 || r.Types[1] != "VARCHAR" || r.Rows[0][1] != "1" {
		t.Errorf("fallback: %v %v", r.Types, r.Rows)
	}
	if _, err := db.Query(context.Background(), "SELECT nosuch FROM pages"); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("bad column: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("a missing directory opened")
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "no Parquet dataset here") {
		t.Errorf("an empty directory: %v", err)
	}
}

// TestSchemas: a dataset whose runs were written by different versions
// (a column missing in one run's files) is read with the union of the
// columns, the missing ones NULL; views are made for the tables a query
// names.
func TestSchemas(t *testing.T) {
	for _, oldRun := range []string{"aaa-old", "zzz-old"} { // the old files first, last
		t.Run(oldRun, func(t *testing.T) { testSchemas(t, oldRun) })
	}
}

func testSchemas(t *testing.T, oldRun string) {
	dir := t.TempDir()
	out := export(t, dir, map[string]func(*bytes.Buffer){
		"new": synthetic(tracegen.Config{Seed: 1, PID: 7, Threads: 1, Intervals: 2, Pages: 3, Working: 4}),
	})
	// an "old" run, sorted first, whose pages lack thread_name
	type oldRow struct {
		PID    int32  `parquet:"pid"`
		Thread int32  `parquet:"thread"`
		Page   uint64 `parquet:"page"`
		Events int64  `parquet:"events"`
	}
	old := filepath.Join(out, dataset.PartitionDir("pages", oldRun))
	os.MkdirAll(old, 0o755)
	if err := parquet.WriteFile(filepath.Join(old, "part-0.parquet"), []oldRow{{1, 1, 0x1000, 5}}); err != nil {
		t.Fatal(err)
	}
	db, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := csvOf(t, mustQuery(t, db, `SELECT run = 'new' AS new, count(*) AS n, count(thread_name) AS named, sum(events) > 0 AS ev FROM pages GROUP BY ALL ORDER BY ALL`))
	if want := "new,n,named,ev\nfalse,1,0,true\ntrue,6,6,true\n"; got != want {
		t.Errorf("union of schemas:\n%s\nwant\n%s", got, want)
	}
	if !db.made["pages"] || len(db.made) != 1 {
		t.Errorf("views made: %v, want pages (with union_by_name) only", db.made)
	}
	for _, c := range []struct {
		sql, name string
		want      bool
	}{
		{"SELECT * FROM pages", "pages", true},
		{"select * from Pages p", "pages", true},
		{"SELECT * FROM my_pages", "pages", false},
		{"SELECT pages_x FROM t", "pages", false},
		{"SELECT 1 FROM threads,pages", "pages", true},
		{"SELECT 1 FROM threads,pages", "threads", true},
	} {
		if mentions(c.sql, c.name) != c.want {
			t.Errorf("mentions(%q, %q) != %v", c.sql, c.name, c.want)
		}
	}
}

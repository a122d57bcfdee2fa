package dataset

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"hijack/internal/tracegen"
	"hijack/vptrace/owner"
	"hijack/vptrace/trace"
)

func writeTrace(t testing.TB, dir, name string, c tracegen.Config) string {
	t.Helper()
	var buf bytes.Buffer
	if _, err := tracegen.Generate(&buf, c); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readTable[T any](t *testing.T, dir, table, run string) []T {
	t.Helper()
	rows, err := parquet.ReadFile[T](filepath.Join(dir, PartitionDir(table, run), "part-0.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestExportPages: the pages table, summed per (thread, page, owner),
// is what trace.Load gives each page (Page.Parts when its owner changed)
// with the owner hijack report names; small row groups split it. In a
// trace without allocation records (format 1.2) the owner comes from the
// site with the most events, which is a row's (an interval's) in the
// table and the whole page's in the report: there the sums per (thread,
// page) compare.
func TestExportPages(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  tracegen.Config
	}{
		{"allocs", tracegen.Config{Seed: 3, Threads: 3, Intervals: 20, Pages: 64, Working: 96, Allocs: true, Raw: true, Notes: 3}},
		{"no allocs (format 1.2)", tracegen.Config{Seed: 4, Threads: 2, Intervals: 5, Pages: 32, Working: 40}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeTrace(t, dir, "x.vpt", c.cfg)
			out := filepath.Join(dir, "ds")
			e, err := Create(out, Options{RowGroupRows: 100})
			if err != nil {
				t.Fatal(err)
			}
			st, err := e.AddRun(path, "x")
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Commit(); err != nil {
				t.Fatal(err)
			}
			type key struct {
				tid            uint32
				page           uint64
				segment, owner string
			}
			type sums struct{ events, reads, writes, first, last uint64 }
			got := map[key]sums{}
			rows := readTable[PageRow](t, out, "pages", "x")
			if int64(len(rows)) != st.PageRows {
				t.Errorf("%d rows, stats say %d", len(rows), st.PageRows)
			}
			for _, r := range rows {
				k := key{uint32(r.Thread), r.Page >> trace.PageShift, r.Segment, r.Owner}
				if !c.cfg.Allocs {
					k.segment, k.owner = "", ""
				}
				s, ok := got[k]
				if !ok {
					s.first = ^uint64(0)
				}
				got[k] = sums{s.events + uint64(r.Events), s.reads + uint64(r.Reads), s.writes + uint64(r.Writes),
					min(s.first, uint64(r.First)), max(s.last, uint64(r.Last))}
			}
			full, err := trace.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			res := owner.New(full)
			want := map[key]sums{}
			for _, th := range full.Threads {
				for _, p := range th.Pages {
					parts := p.Parts
					if parts == nil {
						parts = []*trace.PagePart{{Region: p.Region, Events: p.Events, Reads: p.Reads, Writes: p.Writes, First: p.First, Last: p.Last}}
					}
					for _, pp := range parts {
						var ow owner.Owner
						if c.cfg.Allocs {
							ow = res.Of(p.Page, pp.Region)
						}
						want[key{th.TID, p.Page, ow.Segment, ow.Name}] = sums{pp.Events, pp.Reads, pp.Writes, pp.First, pp.Last}
					}
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d (thread, page, owner) keys, want %d", len(got), len(want))
			}
			for k, w := range want {
				if got[k] != w {
					t.Errorf("%+v: %+v, want %+v", k, got[k], w)
				}
			}
			md, err := os.Open(filepath.Join(out, PartitionDir("pages", "x"), "part-0.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			defer md.Close()
			fi, _ := md.Stat()
			pf, err := parquet.OpenFile(md, fi.Size())
			if err != nil {
				t.Fatal(err)
			}
			if n := len(pf.RowGroups()); n != (len(rows)+99)/100 {
				t.Errorf("%d row groups of 100 rows for %d rows", n, len(rows))
			}
			for _, col := range pf.Metadata().RowGroups[0].Columns {
				if col.MetaData.Codec.String() != "ZSTD" {
					t.Errorf("column %v: codec %v", col.MetaData.PathInSchema, col.MetaData.Codec)
				}
			}
			if col, ok := pf.Schema().Lookup("page"); !ok || col.Node.Type().String() != "INT(64,false)" {
				t.Errorf("page column: %v, want INT(64,false)", col.Node.Type())
			}
		})
	}
}

// TestExportTables: the small tables hold the trace's threads, sites,
// allocation sites, regions, notes and run.
func TestExportTables(t *testing.T) {
	dir := t.TempDir()
	path := writeTrace(t, dir, "x.vpt", tracegen.Config{Seed: 5, Threads: 2, Intervals: 17, Pages: 16, Working: 32, Allocs: true, Notes: 4})
	out := filepath.Join(dir, "ds")
	e, err := Create(out, Options{Describe: func(m *trace.Trace) (string, []string) { return "fine", []string{"w1"} }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.AddRun(path, "a/b c"); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "pages", "run=a%2Fb%20c", "part-0.parquet")); err != nil {
		t.Errorf("partition name: %v", err)
	}
	run := "a/b c"
	threads := readTable[ThreadRow](t, out, "threads", run)
	if len(threads) != 2 || threads[0].Name != "worker-0" || threads[0].Exit == nil || threads[1].Thread != 4243 || threads[0].Rows == 0 {
		t.Errorf("threads %+v", threads)
	}
	sites := readTable[SiteRow](t, out, "sites", run)
	if len(sites) != 10 || sites[3].Function != "sum" || sites[3].Symbol != "table" || sites[3].Segment != "global" {
		t.Errorf("sites %+v", sites)
	}
	allocs := readTable[AllocRow](t, out, "allocations", run)
	var names []string
	for _, a := range allocs {
		names = append(names, a.Owner)
	}
	sort.Strings(names)
	if want := []string{"calloc@0x555555552345", "malloc@0x555555551234", "new[]@0x555555554567", "new[]@0x555555554568"}; !reflect.DeepEqual(names, want) {
		t.Errorf("allocation sites %v, want %v", names, want)
	}
	for _, a := range allocs {
		if a.Owner == "malloc@0x555555551234" && (a.Count != 2 || a.Bytes != 2*32*trace.PageSize || a.Pages == 0 || a.Events == 0) {
			t.Errorf("malloc site %+v", a)
		}
	}
	regions := readTable[RegionRow](t, out, "regions", run)
	kinds := map[string]int{}
	for _, r := range regions {
		kinds[r.Kind]++
	}
	// 2 stacks, 2 TLS blocks, 2+2 arrays, thread 0's array freed and
	// allocated again twice (intervals 7 and 15)
	if want := map[string]int{"stack": 2, "tls": 2, "heap": 6}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("regions %v, want %v", kinds, want)
	}
	notes := readTable[NoteRow](t, out, "notes", run)
	if len(notes) != 4 || notes[0].Kind != "note" || !strings.HasPrefix(notes[0].Text, "phase ") {
		t.Errorf("notes %+v", notes)
	}
	runs := readTable[RunRow](t, out, "runs", run)
	if len(runs) != 1 || runs[0].Path != path || runs[0].Status != "fine" || !reflect.DeepEqual(runs[0].Warnings, []string{"w1"}) ||
		runs[0].Format != fmt.Sprintf("%d.%d", trace.Major, trace.Minor) || !runs[0].Complete || runs[0].Threads != 2 || runs[0].Start.UnixNano() != 1_700_000_000_000_000_000 {
		t.Errorf("runs %+v", runs)
	}
}

// TestExportCommit: nothing is visible before Commit, Abort leaves the
// directory as it was, a run exported again is replaced.
func TestExportCommit(t *testing.T) {
	dir := t.TempDir()
	path := writeTrace(t, dir, "x.vpt", tracegen.Config{Seed: 1, Threads: 1, Intervals: 2, Pages: 4, Working: 8})
	bad := filepath.Join(dir, "bad.vpt")
	os.WriteFile(bad, []byte("not a trace"), 0o644)
	out := filepath.Join(dir, "ds")
	files := func() []string {
		var fs []string
		filepath.Walk(out, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				rel, _ := filepath.Rel(out, p)
				fs = append(fs, rel)
			}
			return nil
		})
		return fs
	}

	e, _ := Create(out, Options{})
	if _, err := e.AddRun(path, "one"); err != nil {
		t.Fatal(err)
	}
	for _, f := range files() {
		if !strings.HasPrefix(filepath.Base(f), ".") {
			t.Errorf("before Commit: %s", f)
		}
	}
	if _, err := e.AddRun(bad, "two"); err == nil || !trace.IsNotTrace(err) {
		t.Errorf("bad trace: %v", err)
	}
	if _, err := e.AddRun(path, "one"); err == nil {
		t.Errorf("a run exported twice")
	}
	e.Abort()
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("after Abort: %v %v", err, files())
	}

	for i := range 2 {
		e, _ := Create(out, Options{})
		if _, err := e.AddRun(path, "one"); err != nil {
			t.Fatal(err)
		}
		if err := e.Commit(); err != nil {
			t.Fatal(err)
		}
		got := files()
		if len(got) != len(Tables) {
			t.Errorf("export %d: %v", i, got)
		}
	}
	e, _ = Create(out, Options{})
	e.AddRun(path, "other")
	e.Abort()
	if got := files(); len(got) != len(Tables) {
		t.Errorf("after an aborted export: %v", got)
	}
}

// TestExportCompressed: a trace written compressed as the runtime writes
// it (AGGC chunks in DEFLATE chunks, format 1.4) gives the same pages rows
// as the same trace written plain.
func TestExportCompressed(t *testing.T) {
	dir := t.TempDir()
	cfg := tracegen.Config{Seed: 9, Threads: 3, Intervals: 12, Pages: 80, Working: 100, Allocs: true, Raw: true, Notes: 2}
	plain := writeTrace(t, dir, "plain.vpt", cfg)
	cfg.Compress = true
	packed := writeTrace(t, dir, "packed.vpt", cfg)
	pfi, _ := os.Stat(plain)
	cfi, _ := os.Stat(packed)
	if cfi.Size() >= pfi.Size() {
		t.Errorf("compressed %d bytes, plain %d", cfi.Size(), pfi.Size())
	}
	out := filepath.Join(dir, "ds")
	e, err := Create(out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Add([]Input{{plain, "plain"}, {packed, "packed"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.Commit(); err != nil {
		t.Fatal(err)
	}
	a := readTable[PageRow](t, out, "pages", "plain")
	b := readTable[PageRow](t, out, "pages", "packed")
	if len(a) < 1000 || !reflect.DeepEqual(a, b) {
		t.Errorf("%d rows plain, %d compressed; equal: %v", len(a), len(b), reflect.DeepEqual(a, b))
	}
}

//go:build duckdb

package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"hijack/internal/tracegen"
)

// hijack builds the hijack command (the full build: report --parquet) into
// a temporary directory.
func hijack(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "hijack")
	cmd := exec.Command("go", "build", "-o", exe, "hijack/cmd/hijack")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build hijack: %v\n%s", err, out)
	}
	return exe
}

func runHijack(t *testing.T, exe string, args ...string) string {
	t.Helper()
	var so, se bytes.Buffer
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("hijack %v: %v\n%s", args, err, se.String())
	}
	return so.String()
}

func runQuery(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var so, se bytes.Buffer
	code = run(args, strings.NewReader(stdin), &so, &se)
	return code, so.String(), se.String()
}

func parseCSV(t *testing.T, s string) [][]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	return recs
}

// TestRoundTrip: traces -> hijack report --parquet -> SQL summing each
// (thread, page, owner)'s rows is hijack report --csv, row for row, in
// the columns they share: pid, thread, page, reads, writes, events,
// first_ns, last_ns, segment, owner. The traces: a process with heap
// blocks freed and reused (pages with two owners), raw events, stacks and
// TLS; its fork child using the parent's blocks; another process.
func TestRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hijack")
	}
	exe := hijack(t)
	dir := t.TempDir()
	var traces []string
	for _, c := range []tracegen.Config{
		{Seed: 1, PID: 300, Threads: 3, Intervals: 20, Pages: 40, Working: 64, Allocs: true, Raw: true, Notes: 2},
		{Seed: 2, PID: 301, Threads: 2, Intervals: 6, Pages: 30, Working: 64, Allocs: true, ForkOf: 300, ForkAt: 250_000_000},
		{Seed: 3, PID: 400, Threads: 2, Intervals: 9, Pages: 50, Working: 100, Allocs: true},
	} {
		var buf bytes.Buffer
		if _, err := tracegen.Generate(&buf, c); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("t%d.vpt", len(traces)))
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		traces = append(traces, p)
	}
	ds := filepath.Join(dir, "ds")
	runHijack(t, exe, append([]string{"report", "--parquet", ds}, traces...)...)
	report := parseCSV(t, runHijack(t, exe, append([]string{"report", "--csv"}, traces...)...))
	col := map[string]int{}
	for i, name := range report[0] {
		col[name] = i
	}
	cols := []string{"pid", "thread", "page", "reads", "writes", "events", "first_ns", "last_ns", "segment", "owner"}
	var want []string
	owners := map[string]bool{}
	for _, rec := range report[1:] {
		var f []string
		for _, c := range cols {
			f = append(f, rec[col[c]])
		}
		want = append(want, strings.Join(f, ","))
		owners[rec[col["owner"]]] = true
	}
	code, out, errOut := runQuery(t, "", "query", "--csv", ds, `
		SELECT pid, thread, printf('%#x', page) AS page, sum(reads) AS reads, sum(writes) AS writes, sum(events) AS events,
		       min(first_ns) AS first_ns, max(last_ns) AS last_ns, segment, owner
		FROM pages GROUP BY pid, thread, page, segment, owner`)
	if code != 0 {
		t.Fatalf("query: %d %s", code, errOut)
	}
	var got []string
	for _, rec := range parseCSV(t, out)[1:] {
		got = append(got, strings.Join(rec, ","))
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%d rows from the dataset, %d from --csv", len(got), len(want))
		for i := 0; i < len(got) || i < len(want); i++ {
			var g, w string
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("first difference at row %d:\n got %s\nwant %s", i, g, w)
				break
			}
		}
	}
	// what the comparison covered
	for _, o := range []string{"malloc@0x555555551234", "calloc@0x555555552345", "new[]@0x555555554567", "stack:300", "tls:301"} {
		if !owners[o] {
			t.Errorf("no page of %s in the report: %v", o, owners)
		}
	}
	code, out, _ = runQuery(t, "", ds, "SELECT count(DISTINCT owner) AS n FROM pages WHERE pid = 301 AND owner LIKE 'malloc@%'")
	if code != 0 || !strings.Contains(out, "\n1\n") {
		t.Errorf("the fork child's pages of its parent's malloc blocks: %d\n%s", code, out)
	}
}

// TestCLI: options, errors and exit statuses.
func TestCLI(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	if _, err := tracegen.Generate(&buf, tracegen.Config{Seed: 1, Threads: 1, Intervals: 2, Pages: 4, Working: 8}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a.vpt"), buf.Bytes(), 0o644)
	ds := filepath.Join(dir, "ds")
	if testing.Short() {
		t.Skip("builds hijack")
	}
	runHijack(t, hijack(t), "report", "--parquet", ds, filepath.Join(dir, "a.vpt"))
	for _, c := range []struct {
		args   []string
		stdin  string
		code   int
		stdout string // a substring
		stderr string
	}{
		{args: []string{ds, "SELECT count(*) AS n FROM runs"}, code: 0, stdout: "n\n-\n1\n(1 row)\n"},
		{args: []string{"-csv", ds, "SELECT run, pid FROM runs"}, code: 0, stdout: "run,pid\na,4242\n"},
		{args: []string{"--json", ds, "SELECT run FROM runs"}, code: 0, stdout: "[\n  {\"run\": \"a\"}\n]\n"},
		{args: []string{ds, "-"}, stdin: "SELECT 40 + 2 AS x;", code: 0, stdout: "42"},
		{args: []string{ds}, code: 0, stdout: "pages        page                    UBIGINT\n"},
		{args: []string{"query", ds, "CREATE TABLE t AS SELECT 1 AS a; SELECT a + 1 AS b FROM t"}, code: 0, stdout: "b\n-\n2\n"},
		{args: []string{ds, "SELECT nosuch FROM pages"}, code: 1, stderr: "hijack: query: Binder Error"},
		{args: []string{filepath.Join(dir, "missing"), "SELECT 1"}, code: 1, stderr: "hijack: query: stat"},
		{args: []string{dir, "SELECT 1"}, code: 1, stderr: "no Parquet dataset here"},
		{args: []string{"--csv", "--json", ds, "SELECT 1"}, code: 2, stderr: "exclude each other"},
		{args: []string{}, code: 2, stderr: "want DIR"},
		{args: []string{ds, "SELECT 1", "extra"}, code: 2, stderr: "want DIR"},
		{args: []string{ds, "  "}, code: 2, stderr: "the SQL is empty"},
		{args: []string{"--bogus", ds}, code: 2, stderr: "unknown flag"},
		{args: []string{"-h"}, code: 0, stdout: "Usage: hijack query"},
	} {
		code, so, se := runQuery(t, c.stdin, c.args...)
		if code != c.code || !strings.Contains(so, c.stdout) || !strings.Contains(se, c.stderr) {
			t.Errorf("%q: exit %d, stdout\n%s\nstderr %s\nwant exit %d, %q, %q", c.args, code, so, se, c.code, c.stdout, c.stderr)
		}
	}
}

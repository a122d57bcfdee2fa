package main

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"hijack/vptrace/dataset"
)

// TestReportParquet: hijack report --parquet writes a run per trace (a
// directory stands for its traces), says what is wrong with a trace on
// stderr as the report does, and leaves the dataset as it was on error.
func TestReportParquet(t *testing.T) {
	dir := t.TempDir()
	tr := writeTrace(t, dir, false) // no end record: a warning
	sub := filepath.Join(dir, "sweep", "T1")
	os.MkdirAll(sub, 0o755)
	data, _ := os.ReadFile(tr)
	os.WriteFile(filepath.Join(sub, "7.vpt"), data, 0o644)
	ds := filepath.Join(dir, "ds")
	var so, se bytes.Buffer
	if code := run([]string{"report", "--parquet", ds, tr, filepath.Join(dir, "sweep")}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	if want := ds + ": 2 run(s), 6 page rows (hijack query " + ds + " 'SQL')\n"; so.String() != want {
		t.Errorf("stdout %q, want %q", so.String(), want)
	}
	if n := strings.Count(se.String(), "warning: incomplete trace: no end record"); n != 2 {
		t.Errorf("stderr: %q", se.String())
	}
	for _, run := range []string{"app", "T1/7"} {
		rows, err := parquet.ReadFile[dataset.PageRow](filepath.Join(ds, dataset.PartitionDir("pages", run), "part-0.parquet"))
		if err != nil || len(rows) != 3 {
			t.Errorf("run %s: %d rows, %v", run, len(rows), err)
		}
		runs, err := parquet.ReadFile[dataset.RunRow](filepath.Join(ds, dataset.PartitionDir("runs", run), "part-0.parquet"))
		if err != nil || len(runs) != 1 || runs[0].Complete || !strings.HasPrefix(runs[0].Status, "INCOMPLETE") || len(runs[0].Warnings) != 1 {
			t.Errorf("run %s: %+v %v", run, runs, err)
		}
	}

	before := listFiles(t, ds)
	bad := filepath.Join(dir, "bad.vpt")
	os.WriteFile(bad, []byte("VPTRACE\nnot quite"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"report", "--parquet", ds, tr, bad}, exitFailure, "hijack: " + bad + ": not a vptrace file"},
		{[]string{"report", "--parquet", ds, filepath.Join(dir, "none.vpt")}, exitFailure, "no such file"},
		{[]string{"report", "--parquet", ds, filepath.Join(dir, "sweep", "T1", "nothing")}, exitFailure, "no such file"},
		{[]string{"report", "--parquet", ds, "--csv", tr}, exitUsage, "--csv does not go with it"},
		{[]string{"report", "--parquet", ds, "--thread", "1", tr}, exitUsage, "--thread does not go with it"},
		{[]string{"report", "--parquet", ds}, exitUsage, "no trace file given"},
		{[]string{"report", "--parquet", ds, "--row-group-rows", "0", tr}, exitUsage, "--row-group-rows must be >= 1"},
		{[]string{"report", "--parquet", tr, tr}, exitFailure, "not a directory"},
	} {
		so.Reset()
		se.Reset()
		code := run(c.args, &so, &se)
		if code != c.code || !strings.Contains(se.String(), c.msg) || strings.Count(se.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", c.args[3:], code, se.String(), c.code, c.msg)
		}
	}
	if after := listFiles(t, ds); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("the dataset changed on errors:\n%v\n%v", before, after)
	}
	so.Reset()
	if code := run([]string{"report", "--parquet", ds, "-h"}, &so, &se); code != 0 || !strings.Contains(so.String(), "DIR/pages/run=NAME/part-0.parquet") {
		t.Errorf("help: %d %q", code, so.String())
	}
}

func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestParquetLean: the build without plotting (make build's bin/hijack)
// links neither parquet-go nor DuckDB and hands report --parquet to
// hijack-plot, hijack query to hijack-query; the full build does not link
// DuckDB either.
func TestParquetLean(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hijack twice")
	}
	dir := t.TempDir()
	lean, full := filepath.Join(dir, "hijack"), filepath.Join(dir, "hijack-plot")
	for _, b := range []struct {
		out  string
		env  []string
		args []string
	}{{lean, []string{"CGO_ENABLED=0"}, []string{"-tags", "noplot"}}, {full, nil, nil}} {
		cmd := exec.Command("go", append(append([]string{"build"}, b.args...), "-o", b.out, ".")...)
		cmd.Env = append(os.Environ(), b.env...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", b.args, err, msg)
		}
	}
	for exe, banned := range map[string][]string{lean: {"github.com/parquet-go/", "github.com/duckdb/"}, full: {"github.com/duckdb/"}} {
		f, err := elf.Open(exe)
		if err != nil {
			t.Fatal(err)
		}
		syms, _ := f.Symbols()
		f.Close()
		for _, s := range syms {
			for _, b := range banned {
				if strings.HasPrefix(s.Name, b) {
					t.Fatalf("%s links %s", filepath.Base(exe), s.Name)
				}
			}
		}
	}
	tr := writeTrace(t, dir, true)
	ds := filepath.Join(dir, "ds")
	cmd := exec.Command(lean, "report", "--parquet", ds, tr)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "1 run(s), 3 page rows") {
		t.Errorf("lean report --parquet: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(ds, "pages", "run=app", "part-0.parquet")); err != nil {
		t.Error(err)
	}
	var se bytes.Buffer
	cmd = exec.Command(lean, "query", ds, "SELECT 1")
	cmd.Env = append(os.Environ(), "PATH=/nonexistent")
	cmd.Stderr = &se
	if err := cmd.Run(); cmd.ProcessState.ExitCode() != exitFailure || !strings.Contains(se.String(), "hijack: query: runs in hijack-query") {
		t.Errorf("query without hijack-query: %v %q", err, se.String())
	}
}

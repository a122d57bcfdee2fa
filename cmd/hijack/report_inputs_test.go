package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestExpandTraces: directories stand for the trace files below them, in
// lexical order, named by their relative paths; runs are unique.
func TestExpandTraces(t *testing.T) {
	dir := t.TempDir()
	magic := "VPTRACE\n" + strings.Repeat("x", 40)
	for name, data := range map[string]string{
		"traces/200.vpt":        magic,
		"traces/100.vpt":        magic,
		"traces/sub/T0.5/7.vpt": magic,
		"traces/notes.txt":      "not a trace",
		"traces/short":          "VPT",
		"traces/.tmp/9.vpt":     magic, // hidden directory
		"traces/.9.vpt":         magic, // hidden file
		"traces/raw.trace":      magic, // any name, by content
		"other/100.vpt":         magic,
		"empty/none.txt":        "",
		"single/app.vpt":        magic,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "single/app.vpt"), filepath.Join(dir, "traces/link.vpt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "traces/sub"), filepath.Join(dir, "traces/dirlink")); err != nil {
		t.Fatal(err)
	}
	d := func(p string) string { return filepath.Join(dir, p) }
	for _, c := range []struct {
		args []string
		want []traceInput
		err  string
	}{
		{args: []string{d("single/app.vpt")}, want: []traceInput{{d("single/app.vpt"), "app"}}},
		{args: []string{d("traces")}, want: []traceInput{
			{d("traces/100.vpt"), "100"}, {d("traces/200.vpt"), "200"}, {d("traces/link.vpt"), "link"},
			{d("traces/raw.trace"), "raw.trace"}, {d("traces/sub/T0.5/7.vpt"), "sub/T0.5/7"}}},
		{args: []string{d("traces/100.vpt"), d("other"), d("other/100.vpt"), d("other/100.vpt")}, want: []traceInput{
			{d("traces/100.vpt"), "100"}, {d("other/100.vpt"), "100~2"}, {d("other/100.vpt"), "100~3"}, {d("other/100.vpt"), "100~4"}}},
		{args: []string{d("missing.vpt")}, want: []traceInput{{d("missing.vpt"), "missing"}}},
		{args: []string{d("empty")}, err: "empty: no trace files in the directory"},
	} {
		got, err := expandTraces(c.args)
		if c.err != "" {
			if err == nil || !strings.HasSuffix(err.Error(), c.err) {
				t.Errorf("%v: error %v, want ...%q", c.args, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v:\n got %v\nwant %v", c.args, got, c.want)
		}
	}
}

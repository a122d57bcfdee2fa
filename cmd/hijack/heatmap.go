//go:build !noplot

package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"hijack/vptrace/owner"
	vplot "hijack/vptrace/plot"
	"hijack/vptrace/trace"
)

// reportHeatmap handles `hijack report --heatmap FILE ...`; ok is false
// when the arguments do not ask for a heatmap (the report goes on).
func reportHeatmap(args []string, stdout, stderr io.Writer) (status int, ok bool) {
	if !wantsHeatmap(args) {
		return 0, false
	}
	fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("heatmap", "", "image file")
	tid := fs.Int64("thread", -1, "kernel TID")
	kind := fs.String("kind", "all", "reads, writes or all")
	size := fs.String("size", "1200x800", "WxH pixels")
	bins := fs.Int("bins", 0, "time columns")
	csvF := fs.Bool("csv", false, "")
	jsonF := fs.Bool("json", false, "")
	fs.Int("top", 10, "")
	help := fs.BoolP("help", "h", false, "help")
	var fixed []string
	for _, a := range args {
		for _, long := range []string{"heatmap", "thread", "kind", "size", "bins", "csv", "json", "top", "help"} {
			if a == "-"+long || strings.HasPrefix(a, "-"+long+"=") {
				a = "-" + a
			}
		}
		fixed = append(fixed, a)
	}
	if err := fs.Parse(fixed); err != nil {
		return usageError(stderr, "report", "%v", err), true
	}
	if *help {
		fmt.Fprint(stdout, heatmapUsage)
		return 0, true
	}
	fail := func(code int, format string, a ...any) (int, bool) {
		fmt.Fprintf(stderr, "hijack: %s\n", oneLine(fmt.Sprintf(format, a...)))
		return code, true
	}
	usage := func(format string, a ...any) (int, bool) {
		return usageError(stderr, "report", format, a...), true
	}
	switch {
	case *csvF || *jsonF:
		return usage("--heatmap draws an image: it excludes --csv and --json")
	case fs.NArg() != 1:
		return usage("--heatmap draws one trace file, got %d", fs.NArg())
	case *bins < 0 || *bins > 10000:
		return usage("--bins %d: want 1 to 10000", *bins)
	}
	k := strings.ToLower(*kind)
	if k != "reads" && k != "writes" && k != "all" {
		return usage("--kind %q: want reads, writes or all", *kind)
	}
	w, h, err := parseWxH(*size)
	if err != nil {
		return usage("--size %q: %v", *size, err)
	}
	if _, err := vplot.Format(*out); err != nil {
		return usage("%v", err)
	}
	path := fs.Arg(0)
	tr, err := loadTrace(path, stderr)
	if err != nil {
		return fail(1, "%v", err)
	}
	if *tid >= 0 && tr.Thread(uint32(*tid)) == nil {
		var tids []string
		for _, th := range tr.Threads {
			tids = append(tids, strconv.FormatUint(uint64(th.TID), 10))
		}
		return fail(1, "%s: no thread %d (threads: %s)", path, *tid, strings.Join(tids, " "))
	}
	res := owner.New(tr)
	ownerName := func(p *trace.Page) string {
		_, name := ownerOf(res, wholeView(p), tr.Site(p.TopSite()))
		return name
	}
	hm, err := vplot.NewHeatmap(path, tr, vplot.HeatmapOptions{TID: *tid, Kind: k, Bins: *bins, Owner: ownerName})
	if errors.Is(err, vplot.ErrNoEvents) {
		what := "the trace has"
		if *tid >= 0 {
			what = fmt.Sprintf("thread %d has", *tid)
		}
		return fail(1, "%s: nothing to draw: %s no %s events", path, what, map[string]string{"all": "", "reads": "read", "writes": "write"}[k])
	}
	if err != nil {
		return fail(1, "%s: %v", path, err)
	}
	who := "all threads"
	if *tid >= 0 {
		who = fmt.Sprintf("thread %d", *tid)
		if th := tr.Thread(uint32(*tid)); th.Name != "" {
			who += " (" + th.Name + ")"
		}
	}
	kindWord := map[string]string{"all": "events", "reads": "read events", "writes": "write events"}[k]
	prog := tr.Header.Program
	if i := strings.LastIndexByte(prog, '/'); i >= 0 {
		prog = prog[i+1:]
	}
	hm.Title = fmt.Sprintf("%s, pid %d: %s by page and time, %s (%d regions, %.0f events)", prog, tr.Header.PID, kindWord, who, len(hm.Regions), hm.Total)
	if err := hm.Save(*out, w, h); err != nil {
		return fail(1, "%s: %v", *out, err)
	}
	return 0, true
}

func parseWxH(s string) (w, h int, err error) {
	a, b, ok := strings.Cut(strings.ToLower(s), "x")
	if ok {
		w, err = strconv.Atoi(a)
		if err == nil {
			h, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || w < 200 || h < 150 || w > 10000 || h > 10000 {
		return 0, 0, errors.New("want WIDTHxHEIGHT in pixels, from 200x150 to 10000x10000")
	}
	return w, h, nil
}

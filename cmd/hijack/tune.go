//go:build !noplot

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"hijack/preset/all"
	"hijack/rules"
	"hijack/vptrace/tune"
)

func cmdTune(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o tune.Options
	fs.StringVar(&o.Link, "link", "", "link command")
	fs.StringVar(&o.Run, "run", "", "run command")
	ts := fs.String("threshold", "0,0.25,0.5,0.75,1", "thresholds")
	hs := fs.String("pagesize", "1K,2K,4K", "page-size estimates")
	fs.IntVar(&o.Reps, "reps", 5, "repetitions")
	fs.StringVar(&o.Out, "out", "tune-out", "output directory")
	fs.StringVar(&o.Rules, "rules", "", "rules file")
	fs.StringArrayVar(&o.Params, "param", nil, "vptrace parameter K=V")
	fs.StringVar(&o.Runtime, "runtime", "", "libvptrace.a")
	fs.BoolVar(&o.ASLR, "aslr", false, "keep ASLR")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "per run")
	fs.StringVar(&o.Title, "title", "", "workload name")
	fs.BoolVar(&o.Keep, "keep", false, "keep the work directory")
	fs.BoolVar(&o.NoBlockCounts, "no-blockcount", false, "no blockcount run")
	quiet := fs.BoolP("quiet", "q", false, "no progress")
	help := fs.BoolP("help", "h", false, "help")
	if err := fs.Parse(tuneSingleDash(args)); err != nil {
		return usageError(stderr, "tune", "%v", err)
	}
	if *help {
		fmt.Fprint(stdout, tuneUsage)
		return exitOK
	}
	if fs.NArg() == 0 && o.Link == "" && o.Run == "" {
		fmt.Fprint(stderr, tuneUsage)
		return exitUsage
	}
	usageErr := func(format string, a ...any) int { return usageError(stderr, "tune", format, a...) }
	if fs.NArg() == 0 {
		return usageErr("no objects to instrument")
	}
	o.Objects = fs.Args()
	var err error
	if o.Thresholds, err = tune.ParseFloats(*ts); err != nil {
		return usageErr("--threshold: %v", err)
	}
	if o.PageSizes, err = tune.ParseSizes(*hs); err != nil {
		return usageErr("--pagesize: %v", err)
	}
	if o.Runtime == "" {
		o.Runtime = defaultRuntime()
	}
	if !*quiet {
		o.Progress = stderr
	}
	o.Presets = all.Presets()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := tune.Run(ctx, o)
	var ue *tune.UsageError
	switch {
	case errors.As(err, &ue):
		return usageErr("%s", ue.Msg)
	case err != nil && ctx.Err() != nil:
		fmt.Fprintln(stderr, "hijack: tune: interrupted; no results written")
		return exitFailure
	case err != nil:
		// errors name the user's file (object, runtime, rules file, output
		// directory) or the configuration and command that failed
		fmt.Fprintf(stderr, "hijack: %s\n", oneLine(err.Error()))
		return exitFailure
	}
	printTune(stdout, rep)
	if *quiet {
		for _, msg := range rep.Warnings {
			fmt.Fprintf(stderr, "hijack: tune: warning: %s\n", msg)
		}
	} else {
		fmt.Fprintf(stderr, "hijack tune: done in %s; wrote %s\n", rep.Elapsed.Round(time.Second), strings.Join(rep.Files, ", "))
	}
	return exitOK
}

// defaultRuntime is libvptrace.a next to the hijack executable (make build
// puts both in bin/), else bin/libvptrace.a.
func defaultRuntime() string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "libvptrace.a")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "bin/libvptrace.a"
}

func printTune(w io.Writer, rep *tune.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "T\tH\tsites\tblocks\tplain s\tinst s\tslowdown\trecall\tprecision\tcount err\texec covered\t")
	f := func(x float64, prec int) string {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "-"
		}
		return fmt.Sprintf("%.*f", prec, x)
	}
	var none, some bool
	for _, r := range rep.Results {
		t, h := f(r.Config.Threshold, 2), rules.FormatSize(r.Config.PageSize)
		if r.Config.Exact {
			t, h = "exact", "-"
		}
		// accuracy over the runs whose comparison counts: n/c when
		// none does, a * when some do not
		acc := func(xs []float64, prec int) string {
			switch {
			case r.Unstable() > 0 && r.Compared() == 0:
				none = true
				return "n/c"
			case r.Unstable() > 0:
				some = true
				return f(tune.Median(r.Comparable(xs)), prec) + "*"
			}
			return f(tune.Median(xs), prec)
		}
		cov := rep.Blocks.CoveredBy(r.Config) // NaN without block counts
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", t, h, r.Sites, r.Blocks,
			f(tune.Median(r.Plain), 4), f(tune.Median(r.Inst), 4), f(r.Slowdown(), 2),
			acc(r.Recall, 4), acc(r.Precision, 4), acc(r.CountError, 3), f(cov, 3))
	}
	tw.Flush()
	if bc := rep.Blocks; bc != nil {
		fmt.Fprintf(w, "block counts (blockcount preset): %d blocks, %d executions; Spearman rank correlation of static score and count: %s; exec covered: share of executions in blocks of score >= T\n",
			len(bc.Blocks), bc.Execs, f(bc.Rho, 3))
	}
	switch {
	case none && (rep.FloorRecall < tune.StableBar || rep.FloorPrecision < tune.StableBar):
		fmt.Fprintf(w, "n/c: not comparable: runs of the same exact build differ (recall %s, precision %s against each other; want %g): "+
			"the program's memory layout or its threads' work changes from run to run; no recall or precision\n",
			f(rep.FloorRecall, 4), f(rep.FloorPrecision, 4), tune.StableBar)
	case none:
		fmt.Fprintln(w, "n/c: not comparable: the runs' pages differ by more than what the builds trace (see the warning; runs.csv, layout_stable 0); no recall or precision")
	}
	if some {
		fmt.Fprintln(w, "*: over the runs that compare; the others had pages the reference never touched (see the warning; runs.csv, layout_stable 0)")
	}
}

// tuneSingleDash accepts -link, -run, ... like --link.
func tuneSingleDash(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		for _, long := range []string{"link", "run", "threshold", "pagesize", "reps", "out", "rules", "param", "runtime",
			"aslr", "timeout", "title", "keep", "no-blockcount", "quiet", "help"} {
			if a == "-"+long || strings.HasPrefix(a, "-"+long+"=") {
				a = "-" + a
			}
		}
		out[i] = a
	}
	return out
}

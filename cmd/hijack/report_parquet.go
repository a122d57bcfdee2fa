//go:build !noplot

package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"hijack/vptrace/dataset"
	"hijack/vptrace/trace"
)

// reportParquet runs `hijack report --parquet DIR TRACE...`; ok is false
// when the arguments do not ask for it (the report goes on).
func reportParquet(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if !wantsParquet(args) {
		return 0, false
	}
	fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("parquet", "", "dataset directory")
	rows := fs.Int64("row-group-rows", dataset.DefaultRowGroupRows, "rows per row group")
	help := fs.BoolP("help", "h", false, "help")
	// the report's other options, refused with a reason
	for _, name := range []string{"csv", "json", "blocks"} {
		fs.Bool(name, false, "")
	}
	fs.String("thread", "", "")
	fs.String("top", "", "")
	fs.String("heatmap", "", "")
	if err := fs.Parse(reportSingleDash(parquetSingleDash(args))); err != nil {
		return usageError(stderr, "report", "%v", err), true
	}
	if *help {
		fmt.Fprint(stdout, parquetUsage)
		return exitOK, true
	}
	for _, name := range []string{"csv", "json", "blocks", "thread", "top", "heatmap"} {
		if fs.Changed(name) {
			return usageError(stderr, "report", "--parquet writes every thread and page of the traces, --%s does not go with it", name), true
		}
	}
	if *dir == "" {
		return usageError(stderr, "report", "--parquet wants a directory"), true
	}
	if *rows < 1 {
		return usageError(stderr, "report", "--row-group-rows must be >= 1, not %d", *rows), true
	}
	if fs.NArg() == 0 {
		return usageError(stderr, "report", "no trace file given"), true
	}
	inputs, err := expandTraces(fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "hijack: %s\n", oneLine(err.Error()))
		return exitFailure, true
	}
	exp, err := dataset.Create(*dir, dataset.Options{RowGroupRows: *rows,
		Describe: func(m *trace.Trace) (string, []string) { return status(m), warnings(m) }})
	if err != nil {
		fmt.Fprintf(stderr, "hijack: %s\n", oneLine(err.Error()))
		return exitFailure, true
	}
	stop := onSignal(exp.Abort)
	defer stop()
	var pageRows int64
	runs := make([]dataset.Input, len(inputs))
	for i, in := range inputs {
		runs[i] = dataset.Input{Path: in.Path, Run: in.Run}
	}
	err = exp.Add(runs, func(in dataset.Input, st *dataset.RunStats) {
		for _, w := range st.Warnings {
			fmt.Fprintf(stderr, "hijack: %s: warning: %s\n", in.Path, oneLine(w))
		}
		pageRows += st.PageRows
	})
	if err != nil {
		exp.Abort()
		fmt.Fprintf(stderr, "hijack: %s\n", oneLine(err.Error()))
		return exitFailure, true
	}
	if err := exp.Commit(); err != nil {
		fmt.Fprintf(stderr, "hijack: %s\n", oneLine(err.Error()))
		return exitFailure, true
	}
	fmt.Fprintf(stdout, "%s: %d run(s), %d page rows (hijack query %s 'SQL')\n", *dir, len(inputs), pageRows, *dir)
	return exitOK, true
}

// parquetSingleDash accepts -parquet like --parquet.
func parquetSingleDash(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		for _, long := range []string{"parquet", "row-group-rows", "heatmap"} {
			if a == "-"+long || len(a) > len(long)+1 && a[:len(long)+2] == "-"+long+"=" {
				a = "-" + a
			}
		}
		out[i] = a
	}
	return out
}

// onSignal runs cleanup when SIGINT, SIGTERM or SIGHUP ends the command,
// then ends it by the same signal. The returned function undoes it.
func onSignal(cleanup func()) (stop func()) {
	sigs := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case s := <-sigs:
			cleanup()
			signal.Reset(s)
			syscall.Kill(os.Getpid(), s.(syscall.Signal))
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

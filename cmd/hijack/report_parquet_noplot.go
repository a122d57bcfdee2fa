//go:build noplot

package main

import "io"

// reportParquet runs `hijack report --parquet ...` in hijack-plot, the
// full build (see parquet.go); ok is false when the arguments do not ask
// for it.
func reportParquet(args []string, stdout, stderr io.Writer) (status int, ok bool) {
	if !wantsParquet(args) {
		return 0, false
	}
	return runPlot("report", args, stdout, stderr), true
}

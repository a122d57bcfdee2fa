//go:build noplot

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// plotProgram is the full build of hijack that runs the plotting commands
// for a build without them (see plot.go).
const plotProgram = "hijack-plot"

// reportHeatmap runs `hijack report --heatmap ...` in hijack-plot; ok is
// false when the arguments do not ask for a heatmap (the report goes on).
func reportHeatmap(args []string, stdout, stderr io.Writer) (status int, ok bool) {
	if !wantsHeatmap(args) {
		return 0, false
	}
	return runPlot("report", args, stdout, stderr), true
}

// cmdTune runs `hijack tune ...` in hijack-plot.
func cmdTune(args []string, stdout, stderr io.Writer) int {
	return runPlot("tune", args, stdout, stderr)
}

// runPlot runs hijack-plot SUB ARGS... (runSibling: its exit status, with
// signals passed on).
func runPlot(sub string, args []string, stdout, stderr io.Writer) int {
	exe, err := findPlot()
	if err != nil {
		fmt.Fprintf(stderr, "hijack: %s: this hijack is built without plotting and runs it in %s: %s\n", sub, plotProgram, oneLine(err.Error()))
		return exitFailure
	}
	return runSibling(exe, sub, args, stdout, stderr)
}

// findPlot finds hijack-plot (findSibling). A hijack-plot built without
// plotting (this file) says so instead of starting itself again.
func findPlot() (string, error) {
	if exe, err := os.Executable(); err == nil && filepath.Base(exe) == plotProgram {
		return "", fmt.Errorf("%s is itself built without plotting (-tags noplot): build it with go build -o %s ./cmd/hijack", exe, plotProgram)
	}
	exe, err := findSibling(plotProgram)
	if err != nil {
		return "", fmt.Errorf("not found next to hijack or on $PATH: make build puts it in bin/ (or: go build -o %s ./cmd/hijack)", plotProgram)
	}
	return exe, nil
}

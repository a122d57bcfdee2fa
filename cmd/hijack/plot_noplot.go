//go:build noplot

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
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

// runPlot runs hijack-plot SUB ARGS... with hijack's standard streams and
// returns its exit status (128+N when signal N ended it, as hijack cc does
// for the compiler). Signals that would end hijack are passed on to it, so
// that it cleans up as it would have run alone; the terminal's SIGINT
// reaches both anyway.
func runPlot(sub string, args []string, stdout, stderr io.Writer) int {
	exe, err := findPlot()
	if err != nil {
		fmt.Fprintf(stderr, "hijack: %s: this hijack is built without plotting and runs it in %s: %s\n", sub, plotProgram, oneLine(err.Error()))
		return exitFailure
	}
	cmd := exec.Command(exe, append([]string{sub}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "hijack: %s: %s: %s\n", sub, exe, oneLine(err.Error()))
		return exitFailure
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case s := <-sigs:
				cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	fmt.Fprintf(stderr, "hijack: %s: %s: %s\n", sub, exe, oneLine(err.Error()))
	return exitFailure
}

// findPlot finds hijack-plot next to the hijack executable (make build
// puts both in bin/), else on $PATH. A hijack-plot built without plotting
// (this file) says so instead of starting itself again.
func findPlot() (string, error) {
	var where string
	if exe, err := os.Executable(); err == nil {
		if filepath.Base(exe) == plotProgram {
			return "", fmt.Errorf("%s is itself built without plotting (-tags noplot): build it with go build -o %s ./cmd/hijack", exe, plotProgram)
		}
		dir := filepath.Dir(exe)
		p := filepath.Join(dir, plotProgram)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
		where = dir + " or "
	}
	if p, err := exec.LookPath(plotProgram); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("not found in %s$PATH: make build puts it next to hijack (or: go build -o hijack-plot ./cmd/hijack)", where)
}

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

// queryProgram runs hijack query: DuckDB is C++ linked through cgo, tens
// of megabytes the rewriter should not carry (see parquet.go).
const queryProgram = "hijack-query"

// cmdQuery runs `hijack query ...` in hijack-query.
func cmdQuery(args []string, stdout, stderr io.Writer) int {
	exe, err := findSibling(queryProgram)
	if err != nil {
		fmt.Fprintf(stderr, "hijack: query: runs in %s (DuckDB): %s\n", queryProgram, oneLine(err.Error()))
		return exitFailure
	}
	return runSibling(exe, "query", args, stdout, stderr)
}

// findSibling finds the program next to the hijack executable (make build
// puts them all in bin/), else on $PATH.
func findSibling(program string) (string, error) {
	var where string
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		p := filepath.Join(dir, program)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
		where = dir + " or "
	}
	if p, err := exec.LookPath(program); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("not found in %s$PATH: make build puts it next to hijack (or: go build -o %s ./cmd/%s)", where, program, program)
}

// runSibling runs exe SUB ARGS... with hijack's standard streams and
// returns its exit status (128+N when signal N ended it). Signals that
// would end hijack are passed on to it, so that it cleans up as it would
// have run alone.
func runSibling(exe, sub string, args []string, stdout, stderr io.Writer) int {
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
	err := cmd.Wait()
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

package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"hijack/vptrace/trace"
)

// traceInput is one trace file of a report, and the name of its run: what
// tells it from the other files of the same report (the run column of the
// CSV and Parquet outputs).
type traceInput struct {
	Path string // as given, or found under a directory given
	Run  string // see expandTraces
}

// expandTraces turns the arguments of hijack report into trace files. A
// file is taken as it is (reading it says whether it is a trace); a
// directory stands for every trace file below it, in lexical order:
// regular files starting with the trace magic and symbolic links to them,
// not links to directories, nothing whose name starts with "." (temporary
// files, .git). So VPTRACE_OUT=traces/%p.vpt runs of a test suite or a
// sweep are one argument. A directory holding no trace is an error.
//
// A file's run is its base name, a found file's its path relative to the
// directory, slash-separated; either without the .vpt extension. Runs
// are unique: a name already taken (two files of the same name in
// different places, one file given twice) gets "~2", "~3", ... appended.
func expandTraces(args []string) ([]traceInput, error) {
	var out []traceInput
	for _, arg := range args {
		fi, err := os.Stat(arg)
		if err != nil || !fi.IsDir() {
			// a missing or unreadable file: reading it says what is wrong
			out = append(out, traceInput{Path: arg, Run: runName(filepath.Base(arg))})
			continue
		}
		n := len(out)
		err = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p != arg && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || !isTraceFile(p, d) {
				return nil
			}
			rel, err := filepath.Rel(arg, p)
			if err != nil {
				return err
			}
			out = append(out, traceInput{Path: p, Run: runName(filepath.ToSlash(rel))})
			return nil
		})
		if err != nil {
			return nil, err // a *fs.PathError: it names the file
		}
		if len(out) == n {
			return nil, fmt.Errorf("%s: no trace files in the directory", arg)
		}
	}
	seen := map[string]bool{}
	for i := range out {
		name := out[i].Run
		for k := 2; seen[name]; k++ {
			name = out[i].Run + "~" + strconv.Itoa(k)
		}
		seen[name] = true
		out[i].Run = name
	}
	return out, nil
}

// runName is a trace file's name without the .vpt extension.
func runName(name string) string {
	if s := strings.TrimSuffix(name, ".vpt"); s != "" && !strings.HasSuffix(s, "/") {
		return s
	}
	return name
}

// isTraceFile reports whether the directory entry is a regular file (or a
// link to one) that starts with the trace file magic.
func isTraceFile(p string, d fs.DirEntry) bool {
	if !d.Type().IsRegular() {
		if d.Type()&fs.ModeSymlink == 0 {
			return false
		}
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [len(trace.FileMagic)]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		return false
	}
	return bytes.Equal(magic[:], []byte(trace.FileMagic))
}

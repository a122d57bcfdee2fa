package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/spf13/pflag"

	"hijack/archive"
	"hijack/elfobj"
	"hijack/internal/atomicfile"
	"hijack/preset/all"
	"hijack/rewrite"
	"hijack/rules"
)

func cmdRewrite(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("hijack", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rulesPath := fs.StringP("rules", "r", "", "rules file")
	presetName := fs.StringP("preset", "p", "", "preset")
	params := fs.StringArray("param", nil, "preset parameter K=V")
	quiet := fs.BoolP("quiet", "q", false, "no warnings")
	jobs := fs.IntP("jobs", "j", runtime.NumCPU(), "archive members rewritten in parallel")
	verbose := fs.BoolP("verbose", "v", false, "verbose")
	if err := fs.Parse(fixSingleDash(args)); err != nil {
		return usageError(stderr, "", "%v", err)
	}
	if fs.NArg() != 2 {
		if fs.NArg() == 0 && *rulesPath == "" && *presetName == "" {
			fmt.Fprint(stderr, usage)
			return exitUsage
		}
		return usageError(stderr, "", "want IN and OUT, got %d argument(s)", fs.NArg())
	}
	if *jobs < 1 {
		return usageError(stderr, "", "--jobs %d: want a number of parallel jobs >= 1", *jobs)
	}
	in, out := fs.Arg(0), fs.Arg(1)
	rf, status := loadRules(stderr, "", *rulesPath, *presetName, *params)
	if rf == nil {
		return status
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "hijack: %s: %s\n", in, oneLine(err.Error()))
		return exitFailure
	}
	// Refuse an impossible output before the work: a directory, a block
	// device (the write would refuse it too, after the rewrite).
	if err := checkOutput(out); err != nil {
		return outputFailed(stderr, err)
	}
	// A signal that ends the rewrite must first remove the temporary
	// file of an output being replaced; a new output is written unnamed
	// until complete (atomicfile) and needs no watching, which costs
	// os/signal's threads: a tenth of a small rewrite.
	var sigs lazySignals
	defer sigs.stop()
	data, err := readInput(in)
	if err != nil {
		return fail(err)
	}
	var mu sync.Mutex
	warnFor := func(name string) func(string) {
		return func(msg string) {
			if !*quiet {
				mu.Lock()
				fmt.Fprintf(stderr, "hijack: %s: warning: %s\n", name, oneLine(msg))
				mu.Unlock()
			}
		}
	}
	var res output
	var st rewrite.Stats
	switch {
	case archive.IsArchive(data):
		res, st, err = rewriteArchive(in, data, rf, *jobs, warnFor)
	default:
		var obj []byte
		obj, st, err = rewrite.Rewrite(filepath.Base(in), data, rf, all.Presets(), warnFor(in))
		res = bytes.NewReader(obj)
	}
	if err != nil {
		return fail(err)
	}
	if err := writeOutputFrom(out, res, sigs.arm); err != nil {
		return outputFailed(stderr, err)
	}
	if *verbose {
		fmt.Fprintf(stderr, "hijack: %s -> %s: %d functions, %d instrumented, %d left alone, %d insertion points, %d -> %d bytes\n",
			in, out, st.Funcs, st.Instrumented, st.Skipped, st.Insertions, len(data), res.Size())
	}
	return exitOK
}

// output is a rewritten object or archive, ready to be written.
type output interface {
	io.WriterTo
	Size() int64
}

// rewriteArchive rewrites every ELF member of an archive, jobs at a time,
// and returns the new archive with a fresh symbol index, laid out to be
// written member by member (no second copy of it in memory).
func rewriteArchive(name string, data []byte, rf *rules.File, jobs int, warnFor func(string) func(string)) (*archive.Layout, rewrite.Stats, error) {
	var total rewrite.Stats
	var ms []archive.Member
	var err error
	if archive.IsThin(data) {
		// The members are files the archive names; the result is a
		// regular archive that holds the rewritten members.
		ms, err = archive.ReadFile(name)
	} else {
		ms, err = archive.Read(data)
	}
	if err != nil {
		return nil, total, err
	}
	type result struct {
		data []byte
		st   rewrite.Stats
		err  error
	}
	results := make([]result, len(ms))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps := all.Presets()
			for i := range work {
				member := fmt.Sprintf("%s(%s)", filepath.Base(name), ms[i].Name)
				d, st, err := rewrite.Rewrite(member, ms[i].Data, rf, ps, warnFor(member))
				if err != nil && !bytes.HasPrefix(ms[i].Data, []byte("\x7fELF")) && !errors.Is(err, elfobj.ErrLTO) {
					// A member that is no object at all (a data
					// file some build put there) is kept as it is;
					// LTO IR (LLVM bitcode) is not: linked, it
					// would be code without instrumentation.
					warnFor(member)(fmt.Sprintf("not an ELF object (%v): kept unchanged", err))
					results[i] = result{data: ms[i].Data}
					continue
				}
				results[i] = result{d, st, err}
			}
		}()
	}
	for i := range ms {
		work <- i
	}
	close(work)
	wg.Wait()
	for i, r := range results {
		if r.err != nil {
			return nil, total, fmt.Errorf("member %s: %w", ms[i].Name, r.err)
		}
		ms[i].Data = r.data
		total.Funcs += r.st.Funcs
		total.Instrumented += r.st.Instrumented
		total.Skipped += r.st.Skipped
		total.Insertions += r.st.Insertions
	}
	out, err := archive.Prepare(ms)
	return out, total, err
}

// loadRules returns the rules of --rules FILE (with --param settings on
// top) or of --preset NAME with its --param settings. On error it prints
// the message for subcommand sub and returns nil and the exit status.
func loadRules(stderr io.Writer, sub, rulesPath, presetName string, params []string) (*rules.File, int) {
	reg := all.Presets().Registry()
	switch {
	case rulesPath != "" && presetName != "":
		return nil, usageError(stderr, sub, "give either --rules or --preset, not both")
	case rulesPath != "":
		rf, err := rules.Load(rulesPath, reg)
		if err != nil {
			var re *rules.Error
			if !errors.As(err, &re) {
				err = fmt.Errorf("%s: %w", rulesPath, errors.Unwrap(err))
			}
			fmt.Fprintf(stderr, "hijack: %s\n", oneLine(err.Error()))
			return nil, exitFailure
		}
		if err := rf.Override(reg, params...); err != nil {
			return nil, usageError(stderr, sub, "%v", err)
		}
		return rf, exitOK
	case presetName != "":
		rf, err := rules.Default(reg, presetName, params...)
		if err != nil {
			return nil, usageError(stderr, sub, "%v", err)
		}
		return rf, exitOK
	}
	return nil, usageError(stderr, sub, "no rules: give --rules FILE or --preset NAME")
}

// checkOutput refuses, before any work, an output path that could never
// be written (see atomicfile for the rules).
func checkOutput(path string) error {
	target, err := atomicfile.Resolve(path)
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	fi, err := os.Stat(target)
	switch {
	case err != nil:
		return nil // created later; errors are the write's to report
	case fi.IsDir():
		return &fs.PathError{Op: "write", Path: path, Err: atomicfile.ErrIsDir}
	case fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0:
		return &fs.PathError{Op: "write", Path: path, Err: atomicfile.ErrBlockDevice}
	}
	return nil
}

// writeOutput writes a rewritten object or archive (see atomicfile: a
// regular file is replaced atomically, a device or fifo written into).
// named, if not nil, is called before a temporary file with a name is
// created (atomicfile.WriteWith).
func writeOutput(path string, data []byte, named func()) error {
	return writeOutputFrom(path, bytes.NewReader(data), named)
}

// writeOutputFrom is writeOutput of what src writes.
func writeOutputFrom(path string, src io.WriterTo, named func()) error {
	return atomicfile.WriteWith(path, ".hijack-*.tmp", named, func(w io.Writer) error {
		_, err := src.WriteTo(w)
		return err
	})
}

// outputFailed reports an error writing an output, naming the user's path
// (never a temporary file), and returns exitFailure.
func outputFailed(stderr io.Writer, err error) int {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		what := "cannot write"
		if pe.Op == "create" {
			what = "cannot create"
		}
		fmt.Fprintf(stderr, "hijack: %s: %s: %s\n", pe.Path, what, oneLine(pe.Err.Error()))
	} else {
		fmt.Fprintf(stderr, "hijack: %s\n", oneLine(err.Error()))
	}
	return exitFailure
}

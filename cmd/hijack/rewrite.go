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
	"runtime/debug"
	"sync"

	"github.com/spf13/pflag"

	"hijack/archive"
	"hijack/elfobj"
	"hijack/internal/atomicfile"
	"hijack/preset"
	"hijack/preset/all"
	"hijack/rewrite"
	"hijack/rules"
)

// archiveGOGC is the collector's target while an archive's members are
// rewritten (rewriteArchive).
const archiveGOGC = 150

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
	data, ar, inSize, err := openInput(in)
	if err != nil {
		return fail(err)
	}
	if ar != nil {
		defer ar.Close()
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
	case ar != nil:
		// The rewritten members wait for the archive's layout in a
		// file, not in memory, one with no name (atomicfile.TempFile):
		// nothing to remove on any path. Without one the command fails
		// naming the directory, as cc does without its temporary
		// directory, rather than fall back to memory: that would bring
		// back, unsaid, a peak that grows with the archive.
		spill, terr := atomicfile.TempFile(os.TempDir(), ".hijack-spill-*", sigs.arm)
		if terr != nil {
			var pe *os.PathError
			if errors.As(terr, &pe) {
				terr = pe.Err
			}
			return fail(fmt.Errorf("cannot create a temporary file in %s (TMPDIR) for the rewritten members: %w", os.TempDir(), terr))
		}
		defer spill.Close()
		res, st, err = rewriteArchive(in, ar, spill, rf, *jobs, warnFor)
	default:
		gcFloor(gcFloorFor(inSize))
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
			in, out, st.Funcs, st.Instrumented, st.Skipped, st.Insertions, inSize, res.Size())
	}
	return exitOK
}

// output is a rewritten object or archive, ready to be written.
type output interface {
	io.WriterTo
	Size() int64
}

// openInput opens the input of a rewrite. An archive in a regular file is
// left there, to be read member by member (ar, which the caller closes);
// anything else is read whole (data, as readInput does), and an archive
// read so (from a pipe) is read member by member from memory. size is the
// input's size.
func openInput(p string) (data []byte, ar *archive.File, size int64, err error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, 0, errors.Unwrap(err)
	}
	fi, serr := f.Stat()
	if serr == nil && fi.Mode().IsRegular() && fi.Size() <= maxInput {
		var magic [len(archive.Magic)]byte
		n, _ := f.ReadAt(magic[:], 0)
		if archive.IsArchive(magic[:n]) {
			if ar, err = archive.FromFile(f, fi.Size()); err != nil {
				return nil, nil, 0, err
			}
			return nil, ar, fi.Size(), nil
		}
	}
	// (not an archive in a regular file: read whole, from where
	// ReadAt left the offset, the start)
	data, err = readOpened(f, fi, serr)
	f.Close()
	if err != nil {
		return nil, nil, 0, err
	}
	if archive.IsArchive(data) {
		if ar, err = archive.NewFile(bytes.NewReader(data), int64(len(data)), filepath.Dir(p)); err != nil {
			return nil, nil, 0, err
		}
	}
	return data, ar, int64(len(data)), nil
}

// rewriteArchive rewrites every ELF member of an archive, jobs at a time,
// and returns the new archive with a fresh symbol index, laid out to be
// written member by member. What is in memory at any time is the members
// being rewritten: each is read from the archive when its turn comes and
// its result goes to the file spill, from which the archive is written
// (spill must stay open until then). The members of a thin archive are
// read from the files it names; the result is a regular archive that
// holds them rewritten. On errors the first failing member's, in the
// archive's order, is returned; members after it may be left undone.
func rewriteArchive(name string, ar *archive.File, spill *os.File, rf *rules.File, jobs int, warnFor func(string) func(string)) (*archive.Layout, rewrite.Stats, error) {
	var total rewrite.Stats
	n := len(ar.Members)
	// With the members streamed, the live heap between members is about
	// nothing, and at Go's default GOGC the collector ran 6x as often as
	// when the whole archive was held (libcrypto: 87 collections instead
	// of 14, 1.2x the CPU). 150 gives the CPU back (sqlite 0.93x,
	// libcrypto 1.04x, paired against holding everything) with the peak
	// still under 4x the largest member + 20 MB (19.4 and 18.6 MiB, where
	// holding everything took 22.9 and 52 MiB). A GOGC the user set wins.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(archiveGOGC))
	}
	var largest int64
	for _, m := range ar.Members {
		largest = max(largest, m.Size)
	}
	defer archiveMemoryLimit(largest)()
	out := archive.NewSpill(spill, n)
	errs := make([]error, n)
	// firstFailed is the lowest member that failed so far (n: none).
	// Every member before it is done, so the one reported is the same
	// whatever the jobs and their timing.
	var mu sync.Mutex
	firstFailed := n
	before := func(i int) bool {
		mu.Lock()
		defer mu.Unlock()
		return i < firstFailed
	}
	one := func(i int, ps preset.Set) error {
		m := ar.Members[i]
		data, err := ar.ReadMember(i)
		if err != nil {
			return err // names the member
		}
		member := fmt.Sprintf("%s(%s)", filepath.Base(name), m.Name)
		d, st, err := rewrite.Rewrite(member, data, rf, ps, warnFor(member))
		if err != nil && !bytes.HasPrefix(data, []byte("\x7fELF")) && !errors.Is(err, elfobj.ErrLTO) {
			// A member that is no object at all (a data file some
			// build put there) is kept as it is; LTO IR (LLVM
			// bitcode) is not: linked, it would be code without
			// instrumentation.
			warnFor(member)(fmt.Sprintf("not an ELF object (%v): kept unchanged", err))
			d, st, err = data, rewrite.Stats{}, nil
		}
		if err != nil {
			return fmt.Errorf("member %s: %w", m.Name, err)
		}
		if err := out.Set(i, m.Name, d); err != nil {
			return err
		}
		mu.Lock()
		total.Funcs += st.Funcs
		total.Instrumented += st.Instrumented
		total.Skipped += st.Skipped
		total.Insertions += st.Insertions
		mu.Unlock()
		return nil
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps := all.Presets()
			for i := range work {
				if !before(i) {
					continue
				}
				if err := one(i, ps); err != nil {
					mu.Lock()
					errs[i] = err
					firstFailed = min(firstFailed, i)
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n && before(i); i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	if firstFailed < n {
		return nil, total, errs[firstFailed]
	}
	l, err := out.Layout()
	return l, total, err
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

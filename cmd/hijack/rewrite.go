package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/spf13/pflag"

	"hijack/archive"
	"hijack/internal/atomicfile"
	"hijack/preset/clobber"
	"hijack/preset/pad"
	"hijack/rewrite"
	"hijack/rules"
	"hijack/vptrace"
)

// presets returns the preset implementations of this build.
func presets() rewrite.Presets {
	return rewrite.Presets{"pad": pad.Preset{}, "clobber": clobber.Preset{}, "vptrace": vptrace.New()}
}

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
		fmt.Fprintf(stderr, "hijack: %v (see hijack --help)\n", err)
		return 2
	}
	if fs.NArg() != 2 {
		if fs.NArg() == 0 && *rulesPath == "" && *presetName == "" {
			fmt.Fprint(stderr, usage)
			return 2
		}
		fmt.Fprintf(stderr, "hijack: want IN.o and OUT.o, got %d argument(s) (see hijack --help)\n", fs.NArg())
		return 2
	}
	in, out := fs.Arg(0), fs.Arg(1)
	rf, err := loadRules(*rulesPath, *presetName, *params, "no rules: give --rules FILE or --preset NAME (see hijack --help)")
	if err != nil {
		fmt.Fprintf(stderr, "hijack: %v\n", oneLine(err.Error()))
		return 2
	}
	if abs(in) == abs(out) {
		fmt.Fprintf(stderr, "hijack: %s: output would overwrite the input\n", in)
		return 2
	}
	fail := func(err error) int {
		os.Remove(out)
		fmt.Fprintf(stderr, "hijack: %s: %s\n", in, oneLine(err.Error()))
		return 1
	}
	data, err := os.ReadFile(in)
	if err != nil {
		return fail(errors.Unwrap(err))
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
	var res []byte
	var st rewrite.Stats
	if archive.IsArchive(data) {
		res, st, err = rewriteArchive(in, data, rf, max(*jobs, 1), warnFor)
	} else {
		res, st, err = rewrite.Rewrite(filepath.Base(in), data, rf, presets(), warnFor(in))
	}
	if err != nil {
		return fail(err)
	}
	if err := writeAtomic(out, res); err != nil {
		return fail(err)
	}
	if *verbose {
		fmt.Fprintf(stderr, "hijack: %s -> %s: %d functions, %d instrumented, %d left alone, %d insertion points, %d -> %d bytes\n",
			in, out, st.Funcs, st.Instrumented, st.Skipped, st.Insertions, len(data), len(res))
	}
	return 0
}

// rewriteArchive rewrites every ELF member of an archive, jobs at a time,
// and returns the new archive with a fresh symbol index.
func rewriteArchive(name string, data []byte, rf *rules.File, jobs int, warnFor func(string) func(string)) ([]byte, rewrite.Stats, error) {
	var total rewrite.Stats
	ms, err := archive.Read(data)
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
			ps := presets()
			for i := range work {
				if !bytes.HasPrefix(ms[i].Data, []byte("\x7fELF")) {
					results[i] = result{data: ms[i].Data}
					continue
				}
				member := fmt.Sprintf("%s(%s)", filepath.Base(name), ms[i].Name)
				d, st, err := rewrite.Rewrite(member, ms[i].Data, rf, ps, warnFor(member))
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
	out, err := archive.Write(ms)
	return out, total, err
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// loadRules returns the rules of --rules FILE or of --preset NAME with its
// --param settings; with neither, the error says missing.
func loadRules(rulesPath, presetName string, params []string, missing string) (*rules.File, error) {
	reg := rules.DefaultRegistry()
	switch {
	case rulesPath != "" && presetName != "":
		return nil, errors.New("give either --rules or --preset, not both")
	case rulesPath != "":
		return rules.Load(rulesPath, reg)
	case presetName != "":
		return rules.Default(reg, presetName, params...)
	}
	return nil, errors.New(missing)
}

// writeAtomic writes the file through a temporary file in the same
// directory, so that OUT is either complete or absent.
func writeAtomic(path string, data []byte) error {
	return atomicfile.Write(path, ".hijack-*.o", func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Package tune runs tuning experiments of the vptrace preset: it
// instruments the same objects with a grid of thresholds T and page-size
// estimates H, links and runs every build several times, alternating with
// the uninstrumented build, and measures per configuration the slowdown,
// the instrumented sites and blocks, and the accuracy of the trace against
// a reference trace from the exact mode (T=0, every access). It writes the
// results as CSV and draws the plots of the vptracer thesis's chapter 5
// (overhead against T per H, accuracy against T per H). docs/tuning.md
// describes the experiment; `hijack tune` is the command line.
package tune

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"hijack/preset"
	"hijack/preset/all"
	"hijack/rewrite"
)

// Options describe an experiment.
type Options struct {
	Objects []string // the objects to instrument
	// Link is the link command, run by sh in Dir: {objs} becomes the
	// objects (instrumented or not), {rt} the vptrace runtime (nothing for
	// the uninstrumented build), {out} the executable to write.
	Link string
	// Run is the command that runs the program, by sh in Dir: {out} is
	// the executable.
	Run        string
	Thresholds []float64
	PageSizes  []int64
	Reps       int    // runs per configuration (and as many of the uninstrumented build)
	Out        string // output directory: results.csv, runs.csv, plots, work/
	Runtime    string // libvptrace.a
	Rules      string // optional rules file: its vptrace rules get each configuration's T and H
	Params     []string
	// ASLR keeps address-space randomisation on (default: runs start
	// with personality ADDR_NO_RANDOMIZE, like setarch -R, so that pages
	// compare between runs).
	ASLR    bool
	Timeout time.Duration // per run (0: none)
	Keep    bool          // keep the work directory (builds, the reference trace)
	Dir     string        // where link and run commands run (default: the current directory)
	// Presets are the preset implementations rules may use (default:
	// all of hijack's).
	Presets preset.Set
	// Progress gets one line per run, and a few more.
	Progress io.Writer
	// Title names the workload in plots (default: the run command).
	Title string
	// NoBlockCounts skips the blockcount run, which measures how often
	// each block runs and how well its static score predicts that
	// (results.csv's exec_covered and score_count_rho, blocks.csv).
	NoBlockCounts bool
}

// Result is what one configuration measured.
type Result struct {
	Config        Config
	Sites, Blocks int
	// Per repetition: wall-clock and CPU seconds of the uninstrumented run
	// and of the instrumented run that followed it.
	Plain, Inst, PlainCPU, InstCPU []float64
	// Per repetition, against the reference (NaN when undefined; for the
	// reference itself, each further run against the first).
	Recall, Precision, CountError, PageRecall []float64
	Pairs, RefPairs                           []int
	Events, Drops                             []uint64
	TraceBytes                                []int64
	Shifted                                   []float64 // fraction of pages Align moved
	OutputDiffers                             int       // runs whose output differed from the uninstrumented build's
	// SelfRecall, SelfPrecision: per repetition, the run against the
	// first run of the same build (NaN for the first); for the exact
	// build, the same as Recall and Precision.
	SelfRecall, SelfPrecision []float64
	// Stable tells per repetition whether its comparison with the
	// reference counts (see judge): false when the runs' address spaces,
	// or what their threads did, differed beyond what Align lines up.
	// Runs not compared (the reference run itself) are stable.
	Stable []bool
}

// Comparable returns xs (a figure per repetition) with the figures of
// runs whose comparison does not count replaced by NaN: medians and
// minimums over it are over the comparable runs.
func (r *Result) Comparable(xs []float64) []float64 {
	out := slices.Clone(xs)
	for i := range out {
		if i < len(r.Stable) && !r.Stable[i] {
			out[i] = math.NaN()
		}
	}
	return out
}

// Unstable is the number of repetitions whose comparison does not count.
func (r *Result) Unstable() int {
	n := 0
	for _, ok := range r.Stable {
		if !ok {
			n++
		}
	}
	return n
}

// Compared is the number of repetitions whose comparison counts.
func (r *Result) Compared() int {
	n := 0
	for i, x := range r.Recall {
		if !math.IsNaN(x) && (i >= len(r.Stable) || r.Stable[i]) {
			n++
		}
	}
	return n
}

// Slowdown is median(instrumented) / median(uninstrumented) wall time.
func (r *Result) Slowdown() float64 { return Median(r.Inst) / Median(r.Plain) }

// SlowdownQuartiles are the quartiles of the per-repetition ratios
// (instrumented run / the uninstrumented run just before it).
func (r *Result) SlowdownQuartiles() (q1, q3 float64) {
	var rs []float64
	for i := range r.Inst {
		if i < len(r.Plain) && r.Plain[i] > 0 {
			rs = append(rs, r.Inst[i]/r.Plain[i])
		}
	}
	return Quantile(rs, 0.25), Quantile(rs, 0.75)
}

// Report is the outcome of an experiment.
type Report struct {
	Results  []*Result // the reference first, then by H, then by T
	Warnings []string
	Files    []string // what was written to Out
	ASLR     string   // how runs were made comparable
	// FloorRecall and FloorPrecision: the worst comparison of a further
	// run of the exact build with its first (NaN: none).
	FloorRecall, FloorPrecision float64
	// Unstable: runs whose comparison does not count (see judge).
	Unstable int
	Elapsed  time.Duration
	// Blocks: the workload's block counts (the blockcount preset), nil
	// when not measured (Options.NoBlockCounts, or it failed: a warning).
	Blocks *BlockCounts
}

// StableBar is the least recall and precision that runs of one build
// must reach against each other, and the least precision a run must
// reach against the reference, for comparisons to count (the project's
// accuracy bar, 99.5%; see judge). Below it, pages differ between runs
// for reasons other than what a build traces.
const StableBar = 0.995

// Run runs an experiment.
func Run(ctx context.Context, o Options) (*Report, error) {
	e, err := newExperiment(o)
	if err != nil {
		return nil, err
	}
	defer e.cleanup()
	return e.run(ctx)
}

type experiment struct {
	o         Options
	dir       string // Dir, absolute
	work      string // Out/work
	rulesData []byte
	noASLR    bool // runs start with ADDR_NO_RANDOMIZE (startNoASLR)
	progress  io.Writer
	rep       *Report
	warned    map[string]bool

	plain  *build
	builds []*build // the reference first

	total, done int
	start       time.Time
	plainOut    [32]byte
	plainOutSet bool
}

type build struct {
	cfg    Config
	dir    string
	exe    string
	layout *Layout
	res    *Result
	first  *RunTrace // its first run, as loaded (not the exact build's: that is the reference)
}

func newExperiment(o Options) (*experiment, error) {
	if len(o.Objects) == 0 {
		return nil, usageErr("no objects to instrument")
	}
	if o.Link == "" || o.Run == "" {
		return nil, usageErr("need a link command (--link) and a run command (--run)")
	}
	if !strings.Contains(o.Link, "{objs}") || !strings.Contains(o.Link, "{out}") {
		return nil, usageErr("link command %q: want {objs} and {out} in it (and {rt} for the runtime)", o.Link)
	}
	if !strings.Contains(o.Link, "{rt}") {
		return nil, usageErr("link command %q: want {rt} where the vptrace runtime goes", o.Link)
	}
	if !strings.Contains(o.Run, "{out}") {
		return nil, usageErr("run command %q: want {out} (the program) in it", o.Run)
	}
	if o.Reps < 1 {
		return nil, usageErr("--reps must be at least 1")
	}
	if len(o.Thresholds) == 0 || len(o.PageSizes) == 0 {
		return nil, usageErr("no thresholds or no page sizes")
	}
	for _, t := range o.Thresholds {
		if t < 0 || t > 1 {
			return nil, usageErr("threshold %g out of [0,1]", t)
		}
	}
	for _, h := range o.PageSizes {
		if h < 16 || h > 1<<30 || h&(h-1) != 0 {
			return nil, usageErr("page size %d: want a power of two from 16 to 1G", h)
		}
	}
	if o.Out == "" {
		return nil, usageErr("no output directory (--out)")
	}
	if o.Presets == nil {
		o.Presets = all.Presets()
	}
	e := &experiment{o: o, rep: &Report{}, warned: map[string]bool{}, progress: o.Progress}
	if e.progress == nil {
		e.progress = io.Discard
	}
	var err error
	if e.dir, err = filepath.Abs(orDot(o.Dir)); err != nil {
		return nil, err
	}
	for _, obj := range o.Objects {
		if _, err := os.Stat(e.abs(obj)); err != nil {
			return nil, fmt.Errorf("%s: %v", obj, errors.Unwrap(err))
		}
	}
	if _, err := os.Stat(e.abs(o.Runtime)); o.Runtime == "" || err != nil {
		return nil, fmt.Errorf("%s: vptrace runtime not found (make build writes bin/libvptrace.a; or give --runtime)", orDot(o.Runtime))
	}
	if o.Rules != "" {
		if e.rulesData, err = readFile(e.abs(o.Rules), o.Rules); err != nil {
			return nil, err
		}
	}
	// Check every configuration's rules before building anything: errors
	// of a rules file name it; without one, they are in --param.
	for _, c := range e.configs() {
		if _, err := rulesFor(o.Presets.Registry(), c, o.Rules, e.rulesData, o.Params); err != nil {
			if o.Rules == "" {
				return nil, usageErr("--param: %v", err)
			}
			return nil, fmt.Errorf("%v (for %s)", err, c)
		}
	}
	switch {
	case o.ASLR:
		e.rep.ASLR = "on (--aslr): heap and mmap pages are aligned between runs from the data (Align)"
	default:
		if err := checkNoASLR(); err != nil {
			// Not fatal: Align may still line the runs up, and judge
			// tells which comparisons count.
			e.rep.ASLR = "on (it could not be turned off): heap and mmap pages are aligned between runs from the data (Align)"
			e.warn(fmt.Sprintf("cannot turn address-space randomisation off (%v): runs keep it, pages of different runs may not compare", err))
			break
		}
		e.noASLR = true
		e.rep.ASLR = "off (personality ADDR_NO_RANDOMIZE, checked in a child); image and brk heap translated by the executables' layouts, other pages aligned between runs (Align)"
	}
	out := e.abs(o.Out)
	e.work = filepath.Join(out, "work")
	if err := freshWork(e.work); err != nil {
		return nil, err
	}
	return e, nil
}

// workStamp marks a work directory tune made, and so may delete.
const workStamp = ".hijack-tune-work"

// freshWork makes dir an empty work directory. One that exists is removed
// only if tune made it (it holds workStamp): a directory of the user's
// that happens to be called work (hijack tune --out .) is an error, never
// deleted.
func freshWork(dir string) error {
	if _, err := os.Lstat(dir); err == nil {
		if _, err := os.Stat(filepath.Join(dir, workStamp)); err != nil {
			return fmt.Errorf("%s exists and was not made by hijack tune: choose another --out, or remove it yourself", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, workStamp), nil, 0o644)
}

// UsageError is an error in the options, not in the inputs or the runs
// (hijack tune exits with the usage status).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usageErr(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

func orDot(s string) string {
	if s == "" {
		return "."
	}
	return s
}

func (e *experiment) abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(e.dir, p)
}

// rel is how commands (run in Dir) name a path.
func (e *experiment) rel(p string) string {
	r, err := filepath.Rel(e.dir, p)
	if err != nil {
		return p
	}
	if !strings.Contains(r, "/") {
		r = "./" + r
	}
	return r
}

func (e *experiment) cleanup() {
	if !e.o.Keep && e.work != "" {
		os.RemoveAll(e.work)
	}
}

// configs: the reference, then every (H, T).
func (e *experiment) configs() []Config {
	cs := []Config{{Exact: true}}
	for _, h := range e.o.PageSizes {
		for _, t := range e.o.Thresholds {
			cs = append(cs, Config{Threshold: t, PageSize: h})
		}
	}
	return cs
}

func (e *experiment) logf(format string, args ...any) {
	fmt.Fprintf(e.progress, "hijack tune: "+format+"\n", args...)
}

func (e *experiment) warn(msg string) {
	if e.warned[msg] {
		return
	}
	e.warned[msg] = true
	e.rep.Warnings = append(e.rep.Warnings, msg)
	e.logf("warning: %s", msg)
}

func (e *experiment) run(ctx context.Context) (*Report, error) {
	e.start = time.Now()
	cs := e.configs()
	e.logf("%d object(s), %d configurations + the reference (exact mode), %d repetitions; address-space randomisation %s",
		len(e.o.Objects), len(cs)-1, e.o.Reps, strings.SplitN(e.rep.ASLR, ";", 2)[0])
	var err error
	if e.plain, err = e.link(Config{}, "plain", nil, ""); err != nil {
		return nil, err
	}
	for _, c := range cs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := e.instrument(c)
		if err != nil {
			return nil, err
		}
		e.builds = append(e.builds, b)
		e.rep.Results = append(e.rep.Results, b.res)
	}
	e.total = 1 + 2*len(e.builds)*e.o.Reps + 2*(e.reps(e.builds[0])-e.o.Reps)
	// a warm-up run of the uninstrumented build (caches, page cache)
	if _, err := e.exec(ctx, e.plain, "warm-up", 0, 0); err != nil {
		return nil, err
	}
	var ref *RunTrace
	for _, b := range e.builds {
		for rep := 1; rep <= e.reps(b); rep++ {
			pr, err := e.exec(ctx, e.plain, fmt.Sprintf("plain (for %s)", b.cfg), rep, e.reps(b))
			if err != nil {
				return nil, err
			}
			b.res.Plain = append(b.res.Plain, pr.wall)
			b.res.PlainCPU = append(b.res.PlainCPU, pr.cpu)
			ir, err := e.execTraced(ctx, b, rep, ref)
			if err != nil {
				return nil, err
			}
			if b.cfg.Exact && rep == 1 {
				ref = ir.trace
			}
		}
		b.first = nil // its runs are compared
	}
	if !e.o.NoBlockCounts {
		e.blockCounts(ctx)
	}
	e.judge()
	e.rep.Elapsed = time.Since(e.start)
	files, err := Write(e.abs(e.o.Out), e.rep, e.title())
	e.rep.Files = files
	if err != nil {
		return e.rep, err
	}
	return e.rep, nil
}

// reps is the number of runs of a build: the exact build runs at least
// twice, so that its runs' agreement (the floor) is known.
func (e *experiment) reps(b *build) int {
	if b.cfg.Exact {
		return max(e.o.Reps, 2)
	}
	return e.o.Reps
}

// judge decides which comparisons count, and warns about those that do
// not. The figures mean recall and precision of a build's tracing only
// if the compared runs' pages differ by nothing but what the builds
// trace. Three checks tell when they differ otherwise:
//
//   - the exact build runs at least twice: if its runs disagree beyond
//     StableBar (recall or precision of one against the first), the
//     program's layout or its threads' work changes from run to run
//     beyond what Align lines up (threads sharing a malloc arena put their
//     blocks in a different order every run), and no comparison counts;
//   - the same for the runs of every other build against its first run:
//     a build runs at another speed, and a program whose threads race
//     for memory may be reproducible at one speed and not at another;
//     none of that build's comparisons counts;
//   - a run with pages the reference never touched (precision below
//     StableBar): a build traces a subset of the exact build's accesses,
//     so its pages elsewhere are memory that lay elsewhere; that run does
//     not count.
//
// Runs that do not count keep their figures in runs.csv; results.csv
// leaves them out of its medians (layout_stable 0) and leaves the
// accuracy columns empty when no run of a configuration counts.
func (e *experiment) judge() {
	ref := e.builds[0].res
	fr, fp := Min(ref.Recall), Min(ref.Precision)
	e.rep.FloorRecall, e.rep.FloorPrecision = fr, fp
	below := func(x float64) bool { return x < StableBar } // NaN: nothing to tell
	floorOK := !below(fr) && !below(fp)
	var selfBad, runsBad []string
	for _, b := range e.builds {
		r := b.res
		sr, sp := Min(r.SelfRecall), Min(r.SelfPrecision)
		selfOK := !below(sr) && !below(sp)
		if floorOK && !selfOK {
			selfBad = append(selfBad, fmt.Sprintf("%s (recall %.4f, precision %.4f)", b.cfg, sr, sp))
		}
		r.Stable = make([]bool, len(r.Recall))
		var runs []string
		for i, rc := range r.Recall {
			p := r.Precision[i]
			ok := math.IsNaN(rc) || floorOK && selfOK && !below(p)
			r.Stable[i] = ok
			if !ok {
				e.rep.Unstable++
			}
			if floorOK && selfOK && !ok {
				runs = append(runs, fmt.Sprintf("run %d: recall %.4f, precision %.4f", i+1, rc, p))
			}
		}
		if len(runs) > 0 {
			runsBad = append(runsBad, fmt.Sprintf("%s (%s)", b.cfg, strings.Join(runs, "; ")))
		}
	}
	const where = "results.csv leaves those runs out of its medians (layout_stable 0; accuracy columns empty where no run counts), runs.csv has their figures"
	if !floorOK {
		e.warn(fmt.Sprintf("the comparison is not valid: two runs of the exact build agree on only %.1f%% of their (thread, page) pairs "+
			"(worst of %d: recall %.4f, precision %.4f; want at least %g): the program's heap or mmap layout, or which thread uses which memory, "+
			"changes from run to run beyond what tune can line up (e.g. threads sharing malloc arenas): no recall or precision; %s",
			100*min(fr, fp), len(ref.Recall)-1, fr, fp, StableBar, where))
		return
	}
	if len(selfBad) > 0 {
		e.warn(fmt.Sprintf("the comparison is not valid for builds whose runs disagree with each other (worst against the build's first run: %s; want at least %g): "+
			"at that build's speed the program's layout or its threads' work changes from run to run beyond what tune can line up; %s",
			strings.Join(selfBad, ", "), StableBar, where))
	}
	if len(runsBad) > 0 {
		e.warn(fmt.Sprintf("the comparison is not valid for runs with pages the reference never touched, their address spaces differ beyond what tune can line up: %s; %s",
			strings.Join(runsBad, ", "), where))
	}
}

func (e *experiment) title() string {
	if e.o.Title != "" {
		return e.o.Title
	}
	return strings.ReplaceAll(e.o.Run, "{out}", "prog")
}

// instrument rewrites the objects for a configuration and links them.
func (e *experiment) instrument(c Config) (*build, error) {
	rf, err := rulesFor(e.o.Presets.Registry(), c, e.o.Rules, e.rulesData, e.o.Params)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", c, err)
	}
	dir := filepath.Join(e.work, c.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	res := &Result{Config: c}
	var objs []string
	seen := map[string]int{}
	ps := e.o.Presets
	for _, in := range e.o.Objects {
		data, err := readFile(e.abs(in), in)
		if err != nil {
			return nil, err
		}
		name := filepath.Base(in)
		outName := strings.TrimSuffix(name, ".o") + ".inst.o"
		if k := seen[name]; k > 0 {
			outName = fmt.Sprintf("%d-%s", k, outName)
		}
		seen[name]++
		out, _, err := rewrite.Rewrite(name, data, rf, ps, func(msg string) {
			e.warn(fmt.Sprintf("%s: %s", in, oneLine(msg)))
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %s (instrumenting for %s)", in, strings.TrimPrefix(oneLine(err.Error()), name+": "), c)
		}
		path := filepath.Join(dir, outName)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return nil, err
		}
		s, bl, err := objectSites(path)
		if err != nil {
			return nil, err
		}
		res.Sites += s
		res.Blocks += bl
		objs = append(objs, path)
	}
	b, err := e.link(c, c.Name(), objs, e.abs(e.o.Runtime))
	if err != nil {
		return nil, err
	}
	b.res = res
	if b.layout, err = ReadLayout(b.exe); err != nil {
		return nil, fmt.Errorf("%s: %v", c, err)
	}
	e.logf("built %-14s %6d sites in %5d blocks", c.String()+":", res.Sites, res.Blocks)
	return b, nil
}

// link links objs (the original objects when nil) into Out/work/NAME/prog.
func (e *experiment) link(c Config, name string, objs []string, rt string) (*build, error) {
	dir := filepath.Join(e.work, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if objs == nil {
		for _, o := range e.o.Objects {
			objs = append(objs, e.abs(o))
		}
	}
	// Every build's executable has the same name: the main thread's name
	// (which threads inherit) is the executable's.
	exe := filepath.Join(dir, "prog")
	var q []string
	for _, o := range objs {
		q = append(q, shellQuote(e.rel(o)))
	}
	rtArg := ""
	if rt != "" {
		rtArg = shellQuote(e.rel(rt))
	}
	cmd := strings.NewReplacer("{objs}", strings.Join(q, " "), "{rt}", rtArg, "{out}", shellQuote(e.rel(exe))).Replace(e.o.Link)
	sh := exec.Command("sh", "-c", cmd)
	sh.Dir = e.dir
	out, err := sh.CombinedOutput()
	if err != nil {
		what := name
		if name != "plain" {
			what = c.String()
		}
		return nil, fmt.Errorf("linking %s failed (%s): %s: %s", what, cmd, err, errorLine(string(out)))
	}
	return &build{cfg: c, dir: dir, exe: exe}, nil
}

type runResult struct {
	wall, cpu float64
	trace     *RunTrace
}

// exec runs a build once: wall-clock and CPU time.
func (e *experiment) exec(ctx context.Context, b *build, what string, rep, of int) (runResult, error) {
	r, _, err := e.execEnv(ctx, b, nil)
	if err != nil {
		return r, fmt.Errorf("%s, run %d: %v", what, rep, err)
	}
	e.done++
	repStr := "      "
	if rep > 0 {
		repStr = fmt.Sprintf("%d/%d", rep, of)
	}
	e.logf("[%*d/%d] %-26s %-5s %8.4fs%s", width(e.total), e.done, e.total, what, repStr, r.wall, e.eta())
	return r, nil
}

// execTraced runs an instrumented build once, reads its trace and
// compares it with the reference.
func (e *experiment) execTraced(ctx context.Context, b *build, rep int, ref *RunTrace) (runResult, error) {
	// A fresh, empty directory per run: the runtime does not overwrite a
	// trace file that exists (it picks another name), and every file
	// found here afterwards is this run's (a fork child writes its own).
	tdir := filepath.Join(b.dir, fmt.Sprintf("run%d", rep))
	if err := os.RemoveAll(tdir); err != nil {
		return runResult{}, err
	}
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		return runResult{}, err
	}
	r, out, err := e.execEnv(ctx, b, []string{"VPTRACE_OUT=" + filepath.Join(tdir, "trace.%p.vpt")})
	if err != nil {
		return r, fmt.Errorf("%s, run %d: %v", b.cfg, rep, err)
	}
	res := b.res
	res.Inst = append(res.Inst, r.wall)
	res.InstCPU = append(res.InstCPU, r.cpu)
	if e.plainOutSet && out != e.plainOut {
		res.OutputDiffers++
		e.warn(fmt.Sprintf("%s: the program's output differs from the uninstrumented build's", b.cfg))
	}
	paths, _ := filepath.Glob(filepath.Join(tdir, "*.vpt*"))
	if len(paths) == 0 {
		return r, fmt.Errorf("%s, run %d: no trace file (is the program the one linked from {out}? does it exit normally?)", b.cfg, rep)
	}
	rt, err := LoadRun(paths, b.layout, ref)
	if err != nil {
		return r, fmt.Errorf("%s, run %d: %v", b.cfg, rep, err)
	}
	for _, w := range rt.Warnings {
		e.warn(w)
	}
	if !rt.Complete {
		e.warn(fmt.Sprintf("%s: a trace has no end record (the program was killed or called _exit): its last events may be missing", b.cfg))
	}
	r.trace = rt
	res.Events = append(res.Events, rt.Events)
	res.Drops = append(res.Drops, rt.Drops)
	res.TraceBytes = append(res.TraceBytes, rt.Bytes)
	acc := Accuracy{Recall: math.NaN(), Precision: math.NaN(), CountError: math.NaN(), PageRecall: math.NaN()}
	shifted := math.NaN()
	self := Accuracy{Recall: math.NaN(), Precision: math.NaN()}
	if ref != nil {
		// a copy as loaded (Compare moves got's pages) for the
		// comparison with the build's own first run
		var mine *RunTrace
		if !b.cfg.Exact {
			mine = rt.clone()
		}
		acc = Compare(ref, rt)
		if rt.Unshifted > 0 {
			shifted = float64(rt.Shifted) / float64(rt.Unshifted)
		}
		switch {
		case b.cfg.Exact:
			self = acc // the reference is the exact build's first run
		case b.first == nil:
			b.first = mine
		default:
			self = Compare(b.first, mine)
		}
	}
	res.SelfRecall = append(res.SelfRecall, self.Recall)
	res.SelfPrecision = append(res.SelfPrecision, self.Precision)
	res.Recall = append(res.Recall, acc.Recall)
	res.Precision = append(res.Precision, acc.Precision)
	res.CountError = append(res.CountError, acc.CountError)
	res.PageRecall = append(res.PageRecall, acc.PageRecall)
	res.Pairs = append(res.Pairs, acc.Pairs)
	res.RefPairs = append(res.RefPairs, acc.RefPairs)
	res.Shifted = append(res.Shifted, shifted)
	if !(e.o.Keep && b.cfg.Exact && rep == 1) {
		os.RemoveAll(tdir)
	}
	e.done++
	accStr := ""
	switch {
	case ref == nil:
		accStr = fmt.Sprintf("  reference: %d (thread, page) pairs", pairs(rt))
	default:
		accStr = fmt.Sprintf("  recall %.4f precision %.4f", acc.Recall, acc.Precision)
	}
	slow := ""
	if n := len(res.Plain); n > 0 && res.Plain[n-1] > 0 {
		slow = fmt.Sprintf(" x%.2f", r.wall/res.Plain[n-1])
	}
	e.logf("[%*d/%d] %-26s %d/%d   %8.4fs%s%s%s", width(e.total), e.done, e.total, b.cfg.String(), rep, e.reps(b), r.wall, slow, accStr, e.eta())
	return r, nil
}

func pairs(rt *RunTrace) int {
	n := 0
	for _, t := range rt.Threads {
		n += len(t.Pages)
	}
	return n
}

func width(n int) int { return len(fmt.Sprint(n)) }

func (e *experiment) eta() string {
	if e.done == 0 || e.done >= e.total {
		return ""
	}
	el := time.Since(e.start)
	left := time.Duration(float64(el) / float64(e.done) * float64(e.total-e.done))
	return fmt.Sprintf("  ETA %s", left.Round(time.Second))
}

// execEnv runs the run command for a build with extra environment;
// returns the times and a hash of the output.
func (e *experiment) execEnv(ctx context.Context, b *build, env []string) (runResult, [32]byte, error) {
	var r runResult
	cmdline := strings.ReplaceAll(e.o.Run, "{out}", shellQuote(e.rel(b.exe)))
	if e.o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.o.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", cmdline)
	cmd.Dir = e.dir
	cmd.Env = append(withoutVPTRACE(os.Environ()), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	h := sha256.New()
	cmd.Stdout = h
	var stderr tailBuffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	var err error
	if e.noASLR {
		if err = startNoASLR(cmd); err == nil {
			err = cmd.Wait()
		}
	} else {
		err = cmd.Run()
	}
	r.wall = time.Since(t0).Seconds()
	if cmd.ProcessState != nil {
		r.cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return r, sum, fmt.Errorf("%s: timed out after %s", cmdline, e.o.Timeout)
		}
		if ctx.Err() != nil {
			return r, sum, ctx.Err()
		}
		return r, sum, fmt.Errorf("%s: %v: %s", cmdline, err, lastLine(stderr.String()))
	}
	if b == e.plain && !e.plainOutSet {
		e.plainOut, e.plainOutSet = sum, true
	}
	return r, sum, nil
}

// withoutVPTRACE drops the runtime settings that would break the
// experiment (where the trace goes, tracing off or stopped); the others
// (VPTRACE_BUFKB, VPTRACE_INTERVAL_MS, ...) pass through.
func withoutVPTRACE(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k != "VPTRACE_OUT" && k != "VPTRACE" && k != "VPTRACE_START" {
			out = append(out, kv)
		}
	}
	return out
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if l == "" {
		return "(no output)"
	}
	return l
}

// errorLine picks the line of a compiler driver's output that says what
// went wrong: the first that mentions an error and is not collect2's
// summary, else the last.
func errorLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		low := strings.ToLower(l)
		if strings.HasPrefix(l, "collect2:") {
			continue
		}
		for _, w := range []string{"error", "undefined", "not recognized", "no such file", "cannot find"} {
			if strings.Contains(low, w) {
				return strings.TrimSpace(l)
			}
		}
	}
	return lastLine(s)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// shellQuote quotes a word for sh when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./+,=:@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"hijack/vptrace/trace"
)

// csmith differential testing: random C programs (free of undefined
// behaviour by construction) print a checksum of their global state. Each
// seed is compiled under several compiler configurations; the program's own
// object is rewritten and the rewritten program must print exactly what the
// original prints (with argument "1", csmith programs also print every
// variable's value, which makes the comparison finer than the checksum).

type csmithConfig struct {
	name    string
	cc      string
	flags   []string
	ldflags []string
	cpu     []string // /proc/cpuinfo flags the binaries need
}

var csmithConfigs = []csmithConfig{
	{name: "gcc-O0", cc: "gcc", flags: []string{"-O0"}},
	{name: "gcc-O2", cc: "gcc", flags: []string{"-O2"}},
	{name: "gcc-O3-v3", cc: "gcc", flags: []string{"-O3", "-march=x86-64-v3"},
		cpu: []string{"avx", "avx2", "bmi1", "bmi2", "fma", "f16c", "movbe", "abm"}},
	{name: "gcc-Os-cet", cc: "gcc", flags: []string{"-Os", "-fomit-frame-pointer", "-fcf-protection"}},
	{name: "gcc-O2-nopie", cc: "gcc", flags: []string{"-O2", "-fno-pie"}, ldflags: []string{"-no-pie"}},
	{name: "clang-O2", cc: "clang", flags: []string{"-O2"}},
	{name: "gcc-O1", cc: "gcc", flags: []string{"-O1"}},
	{name: "clang-O0", cc: "clang", flags: []string{"-O0"}},
	{name: "clang-O3", cc: "clang", flags: []string{"-O3"}},
}

const (
	csmithFirstSeed = 1
	csmithStride    = 10_000_000 // replacement seeds for slot i: i+1, i+1+stride, ...
	csmithTries     = 8
	csmithTimeout   = 5 * time.Second  // CPU time limit for the original program
	csmithRewritten = 20 * time.Second // CPU time limit for the rewritten one
	csmithWall      = 3 * time.Minute  // wall-clock backstop for both
	csmithInclude   = "/usr/include/csmith"
)

var checksumLine = regexp.MustCompile(`(?m)^checksum = [0-9A-F]+$`)

func csmithSeedCount(t *testing.T) int {
	n := 50
	if testing.Short() {
		n = len(csmithConfigs)
	}
	if s := os.Getenv("CSMITH_SEEDS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("CSMITH_SEEDS=%q: want a positive number", s)
		}
		n = v
	}
	return n
}

func TestCsmith(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	csmith := needTool(t, "csmith", "csmith")
	needFile(t, filepath.Join(csmithInclude, "csmith.h"), "Debian package libcsmith-dev; run `make deps`")
	needTool(t, "gcc", "gcc")
	gen := newCsmithGen(t, csmith)

	n := csmithSeedCount(t)
	width := len(strconv.Itoa(n - 1))
	for slot := 0; slot < n; slot++ {
		slot := slot
		t.Run(fmt.Sprintf("s%0*d", width, slot), func(t *testing.T) {
			t.Parallel()
			seed, src := pickCsmithSeed(t, gen, slot)
			configs := csmithConfigs
			if testing.Short() && os.Getenv("CSMITH_SEEDS") == "" {
				configs = []csmithConfig{csmithConfigs[slot%len(csmithConfigs)]}
			}
			for _, c := range configs {
				c := c
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					csmithDiff(t, c, seed, src)
				})
			}
		})
	}
}

// csmithDiff builds one seed under one configuration, rewrites the object
// and compares the runs.
func csmithDiff(t *testing.T, c csmithConfig, seed uint64, src string) {
	if len(c.cpu) > 0 && !cpuHas(c.cpu...) {
		t.Skipf("this CPU lacks %v (x86-64-v3): cannot run %s binaries", c.cpu, c.name)
	}
	flags := append(append([]string{}, c.flags...), "-w", "-I"+csmithInclude)
	obj := compile(t, c.cc, flags, src)
	dir := workDir(t)
	what := fmt.Sprintf("csmith seed %d, %s %s", seed, c.cc, strings.Join(c.flags, " "))
	copyFile(t, src, filepath.Join(dir, fmt.Sprintf("seed%d.c", seed)))

	origBin := filepath.Join(dir, "prog.orig")
	newBin := filepath.Join(dir, "prog.rewritten")
	link(t, c.cc, origBin, []string{obj}, c.ldflags...)
	orig := runCached(t, spec{Dir: dir, CPU: csmithTimeout, Timeout: csmithWall}, origBin, "1")
	if orig.TimedOut {
		t.Skipf("%s: the original takes longer than %v with these flags; not compared", what, csmithTimeout)
	}
	if !checksumLine.Match(orig.Stdout) {
		t.Fatalf("%s: original printed no checksum line (%s):\n%s", what, orig.status(), tail(orig.Stdout, 500))
	}
	_, outs := rewriteAll(t, cfg.rules, []string{obj}, dir)
	link(t, c.cc, newBin, outs, linkRewritten(c.ldflags...)...)
	got := mustRun(t, spec{Dir: dir, CPU: csmithRewritten, Timeout: csmithWall}, newBin, "1")
	compareRuns(t, dir, what, orig, got)
	checkTracePages(t, dir, what, csmithMaxPages)
}

// csmithMaxPages bounds the pages a traced csmith program may record (its
// globals, arrays of a few dimensions of ten, and stack: some tens of
// pages): a range or address the inserted code computed wrong records
// pages it never touched, which its output does not show.
const csmithMaxPages = 4096

// checkTracePages fails the test if a trace the run left in dir (the
// runtime's default vptrace.PID.vpt, with a preset that traces) records
// more than max distinct pages. It reads chunk by chunk: a wrong range
// (TestSweepSpill's bug) is millions of pages, more than a trace.Load
// should hold.
func checkTracePages(t testing.TB, dir, what string, max int) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "vptrace.*.vpt"))
	for _, path := range paths {
		n, err := tracePages(path, max)
		switch {
		case err != nil:
			t.Errorf("%s: %s: %v", what, filepath.Base(path), err)
		case n > max:
			t.Errorf("%s: %s records more than %d pages: an address or range of the inserted code is wrong (artifacts kept in %s)", what, filepath.Base(path), max, dir)
		}
	}
}

// tracePages counts the distinct pages of a trace's raw events and
// aggregates, up to max+1.
func tracePages(path string, max int) (int, error) {
	r, err := trace.Open(path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	pages := map[uint64]bool{}
	for len(pages) <= max {
		c, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		x, err := c.Decode()
		if err != nil {
			return 0, err
		}
		switch x := x.(type) {
		case *trace.Raw:
			for _, e := range x.Events {
				pages[e.Page1] = true
			}
		case *trace.Agg:
			for _, p := range x.Pages {
				pages[p.Page+1] = true
			}
		}
	}
	return len(pages), nil
}

// pickCsmithSeed returns the seed for a slot: the first of the slot's seed
// sequence whose gcc -O0 build runs within the time limit and prints a
// checksum. Results are cached, so reruns pick instantly.
func pickCsmithSeed(t *testing.T, gen *csmithGen, slot int) (uint64, string) {
	var why []string
	for k := 0; k < csmithTries; k++ {
		seed := uint64(csmithFirstSeed + slot + k*csmithStride)
		src := gen.source(t, seed)
		obj := compile(t, "gcc", []string{"-O0", "-w", "-I" + csmithInclude}, src)
		bin := filepath.Join(gen.binDir, fmt.Sprintf("screen-%d-%s", seed, filepath.Base(obj)))
		if _, err := os.Stat(bin); err != nil {
			tmp := fmt.Sprintf("%s.tmp%d", bin, time.Now().UnixNano())
			link(t, "gcc", tmp, []string{obj})
			if err := os.Rename(tmp, bin); err != nil {
				t.Fatal(err)
			}
		}
		r := runCached(t, spec{Dir: gen.binDir, CPU: csmithTimeout, Timeout: csmithWall}, bin, "1")
		switch {
		case r.TimedOut:
			why = append(why, fmt.Sprintf("seed %d times out", seed))
		case r.Exit != 0:
			why = append(why, fmt.Sprintf("seed %d: %s", seed, r.status()))
		case !checksumLine.Match(r.Stdout):
			why = append(why, fmt.Sprintf("seed %d prints no checksum", seed))
		default:
			if len(why) > 0 {
				t.Logf("using seed %d (%s)", seed, strings.Join(why, "; "))
			}
			return seed, src
		}
	}
	t.Skipf("no usable seed in %d tries: %s", csmithTries, strings.Join(why, "; "))
	return 0, ""
}

type csmithGen struct {
	csmith string
	dir    string // generated sources, keyed by csmith version
	binDir string // screening binaries
}

func newCsmithGen(t *testing.T, csmith string) *csmithGen {
	// csmith writes platform.info into its working directory, even for --version
	r, err := runNow(spec{Dir: t.TempDir(), Timeout: time.Minute}, csmith, "--version")
	if err != nil || r.Exit != 0 {
		t.Fatalf("csmith --version: %v %s", err, r.status())
	}
	ver := string(bytes.TrimSpace(r.Stdout))
	name := "csmith"
	if m := regexp.MustCompile(`csmith ([0-9][0-9.]*)`).FindStringSubmatch(ver); m != nil {
		name += "-" + m[1]
	}
	name += "-" + hashStrings(ver)[:8]
	g := &csmithGen{
		csmith: csmith,
		dir:    filepath.Join(cfg.cache, "csmith", name),
		binDir: filepath.Join(cfg.cache, "e2e", "csmith-screen"),
	}
	for _, d := range []string{g.dir, g.binDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// source returns the path of the csmith program for seed, generating it
// into the cache when absent.
func (g *csmithGen) source(t *testing.T, seed uint64) string {
	path := filepath.Join(g.dir, fmt.Sprintf("%d.c", seed))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	// csmith writes platform.info into its working directory: give each
	// run its own.
	tmpDir, err := os.MkdirTemp(g.dir, "gen-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmpDir)
	out := filepath.Join(tmpDir, "out.c")
	args := []string{"--seed", strconv.FormatUint(seed, 10), "--output", out}
	r, err := run(spec{Dir: tmpDir, Timeout: 2 * time.Minute}, g.csmith, args...)
	if err != nil || r.Exit != 0 {
		t.Fatalf("%s: %v %s\n%s", cmdline(g.csmith, args...), err, r.status(), tail(r.Stderr, 2000))
	}
	if err := os.Rename(out, path); err != nil {
		t.Fatal(err)
	}
	return path
}

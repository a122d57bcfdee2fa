package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// vptrace accuracy: the workloads of vptrace/testdata/workloads (a kernel
// object hijack instruments, a driver it does not) are built at several
// optimisation levels, the kernel rewritten with the vptrace preset, linked
// with the runtime (bin/libvptrace.a, or $VPTRACE_LIB, or the one next to
// $HIJACK) and run with VPTRACE_OUT. `hijack report --csv` of the trace is
// compared per thread with the oracle the driver computed from the access
// pattern it knows:
//
//   - T=0, H=4096: recall >= 99.5% of the pages the kernel touched, per
//     thread, and precision 100% (no page the kernel did not touch); pages
//     only read (written) must show no writes (reads);
//   - the same with usestack: true where the workload asks for it (stack
//     pages become required);
//   - T=1: precision 100%, and its pages a subset of the T=0 run's;
//   - every instrumented run prints what the plain build prints.
//
// VPTRACE_WORKLOADS=regexp selects workloads; the results table is logged
// and written to .cache/e2e/vptrace-accuracy.txt.

const vptMinRecall = 0.995

type vptLevel struct {
	name  string
	flags []string
	cpu   []string
}

var vptLevels = []vptLevel{
	{name: "O0", flags: []string{"-O0"}},
	{name: "O2", flags: []string{"-O2"}},
	{name: "O3-v3", flags: []string{"-O3", "-march=x86-64-v3"},
		cpu: []string{"avx", "avx2", "bmi1", "bmi2", "fma", "f16c", "movbe", "abm"}},
}

// Kernel flags at every level: keep loops the compiler would turn into
// calls to memset/memcpy (libc is not instrumented) in the kernel.
var vptKernelFlags = []string{"-fno-tree-loop-distribute-patterns"}

var vptDriverFlags = []string{"-O2"}

type vptConfig struct {
	name      string
	threshold string
	usestack  bool
	exact     bool
}

func (c vptConfig) rules() string {
	return fmt.Sprintf("version: 1\nrules:\n  - preset: vptrace\n    params:\n      threshold: %s\n      pagesize: 4096\n      usestack: %v\n      exact: %v\n",
		c.threshold, c.usestack, c.exact)
}

var (
	vptT0      = vptConfig{name: "T0", threshold: "0.0"}
	vptT0Stack = vptConfig{name: "T0-stack", threshold: "0.0", usestack: true}
	vptT1      = vptConfig{name: "T1", threshold: "1.0"}
	vptExact   = vptConfig{name: "T0-exact", threshold: "0.0", exact: true}
)

// vptExactLevel is the level at which the exact mode (every access of the
// selected blocks calls the runtime: the reference of the tuning
// experiments) is checked too.
const vptExactLevel = "O2"

// vptResult is one line of the results table.
type vptResult struct {
	workload, level, config string
	threads                 int
	need, hit, traced       int
	extra, kindBad          int
	minRecall               float64
	precision               float64
	plain, inst             time.Duration
	ok                      bool
	note                    string
}

var vptResults struct {
	sync.Mutex
	r []vptResult
}

func vptLib(t testing.TB) string {
	if l := os.Getenv("VPTRACE_LIB"); l != "" {
		return needFile(t, l, "VPTRACE_LIB")
	}
	l := filepath.Join(filepath.Dir(cfg.hijack), "libvptrace.a")
	if _, err := os.Stat(l); err != nil {
		l = filepath.Join(cfg.root, "bin", "libvptrace.a")
	}
	return needFile(t, l, "the vptrace runtime: run vptrace/runtime/build.sh (make build)")
}

func TestVptraceAccuracy(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	if cfg.fake {
		t.Skip("the copy-through stand-in rewriter does not trace")
	}
	needTool(t, "gcc", "gcc")
	lib := vptLib(t)
	ws, err := loadVptWorkloads()
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) == 0 {
		t.Fatalf("no workloads in %s", vptWorkloadDir())
	}
	sel := os.Getenv("VPTRACE_WORKLOADS")
	t.Cleanup(func() { vptSummary(t) })
	for _, w := range ws {
		w := w
		if sel != "" && !matchName(sel, w.name) {
			continue
		}
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			for _, lv := range vptLevels {
				lv := lv
				t.Run(lv.name, func(t *testing.T) {
					t.Parallel()
					vptAccuracy(t, w, lv, lib)
				})
			}
		})
	}
}

func matchName(pattern, name string) bool {
	for _, p := range strings.Split(pattern, "|") {
		if p == name || strings.Contains(name, p) {
			return true
		}
	}
	return false
}

func levelListed(list []string, lv string, def bool) bool {
	if len(list) == 0 {
		return def
	}
	for _, l := range list {
		if l == lv || l == "all" {
			return true
		}
	}
	return false
}

// vptAccuracy builds one workload at one level and checks every config.
func vptAccuracy(t *testing.T, w vptWorkload, lv vptLevel, lib string) {
	cpu := append(append([]string{}, lv.cpu...), w.fields("cpu")...)
	if len(cpu) > 0 && !cpuHas(cpu...) {
		t.Skipf("this CPU lacks some of %v", cpu)
	}
	kflags := append(append(append([]string{}, lv.flags...), vptKernelFlags...), w.fields("cflags")...)
	kobj := compile(t, "gcc", kflags, w.kern)
	dobj := compile(t, "gcc", vptDriverFlags, w.drv)
	dir := workDir(t)
	args := w.fields("test-args")
	what := fmt.Sprintf("%s %s", w.name, lv.name)

	// the plain build: what every instrumented run must print
	plainBin := filepath.Join(dir, "plain")
	link(t, "gcc", plainBin, []string{dobj, kobj}, "-lpthread")
	plain := runCached(t, spec{Dir: dir, CPU: 60 * time.Second, Timeout: 3 * time.Minute}, plainBin, args...)
	if plain.Exit != 0 || plain.TimedOut {
		t.Fatalf("%s: the plain build fails: %s\n%s%s", what, plain.status(), tail(plain.Stdout, 2000), tail(plain.Stderr, 2000))
	}

	configs := []vptConfig{vptT0}
	if levelListed(w.fields("usestack"), lv.name, lv.name == "O0") {
		configs = append(configs, vptT0Stack)
	}
	if lv.name == vptExactLevel {
		configs = append(configs, vptExact)
	}
	configs = append(configs, vptT1)
	norm := map[string]map[string]bool{} // config -> thread name -> "thread|region/page"
	for _, c := range configs {
		res, s := vptRunConfig(t, w, lv, c, kobj, dobj, lib, dir, args, plain)
		vptRecord(res)
		if s == nil {
			continue
		}
		all := map[string]bool{}
		for _, ts := range s.threads {
			for p := range ts.normPages {
				all[ts.thread+"|"+p] = true
			}
		}
		norm[c.name] = all
	}
	// T=1 traces only what T=0 traces
	if t1, t0 := norm[vptT1.name], norm[vptT0.name]; t1 != nil && t0 != nil {
		var notIn []string
		for p := range t1 {
			if !t0[p] {
				notIn = append(notIn, p)
			}
		}
		sort.Strings(notIn)
		if len(notIn) > 0 {
			if len(notIn) > 20 {
				notIn = append(notIn[:20], fmt.Sprintf("... and %d more", len(notIn)-20))
			}
			t.Errorf("%s: the T=1 trace has %d pages the T=0 trace lacks (thread|region/page):\n  %s", what, len(notIn), strings.Join(notIn, "\n  "))
		}
	}
}

// vptRunConfig rewrites, links, runs and scores one configuration. It
// returns a nil score when the run could not be scored (the test has
// failed then).
func vptRunConfig(t *testing.T, w vptWorkload, lv vptLevel, c vptConfig, kobj, dobj, lib, dir string, args []string, plain result) (vptResult, *vptScore) {
	t.Helper()
	what := fmt.Sprintf("%s %s %s", w.name, lv.name, c.name)
	res := vptResult{workload: w.name, level: lv.name, config: c.name, plain: plain.Dur}
	cd := filepath.Join(dir, c.name)
	fail := func(short, format string, args ...any) (vptResult, *vptScore) {
		t.Helper()
		res.note = short
		t.Errorf("%s: %s\nartifacts kept in %s", what, fmt.Sprintf(format, args...), rel(cd))
		return res, nil
	}
	rules := filepath.Join(cd, "rules.yaml")
	writeFile(t, rules, []byte(c.rules()))
	inst := filepath.Join(cd, "kern.inst.o")
	copyFile(t, kobj, filepath.Join(cd, "kern.o"))
	if err := rewrite(rules, filepath.Join(cd, "kern.o"), inst); err != nil {
		return fail("rewrite failed", "%v", err)
	}
	bin := filepath.Join(cd, "app")
	largs := []string{"-o", bin, dobj, inst, lib, "-lpthread"}
	if r, err := run(spec{Dir: cd, Timeout: 5 * time.Minute}, "gcc", largs...); err != nil || r.Exit != 0 {
		msg := strings.TrimSpace(tail(r.Stderr, 3000))
		first := msg
		if i := strings.IndexByte(first, '\n'); i > 0 {
			first = first[:i]
		}
		if i := strings.LastIndex(first, ".o: "); i > 0 {
			first = first[i+4:]
		}
		return fail("link failed: "+first, "link failed: %s\n%v %s\n%s", cmdline("gcc", largs...), err, r.status(), msg)
	}
	return vptCheckRun(t, what, cd, c, bin, args, plain, res)
}

// vptCheckRun runs an instrumented build of a workload (bin) in cd and
// scores its trace against the oracle its driver writes: the output must be
// the plain build's; at T=0 recall at least vptMinRecall per thread and
// kinds right; precision 100%. It returns a nil score when the run could
// not be scored (the test has failed then).
func vptCheckRun(t *testing.T, what, cd string, c vptConfig, bin string, args []string, plain result, res vptResult) (vptResult, *vptScore) {
	t.Helper()
	fail := func(short, format string, args ...any) (vptResult, *vptScore) {
		t.Helper()
		res.note = short
		t.Errorf("%s: %s\nartifacts kept in %s", what, fmt.Sprintf(format, args...), rel(cd))
		return res, nil
	}
	trace := filepath.Join(cd, "app.vpt")
	oracle := filepath.Join(cd, "oracle.txt")
	got := mustRun(t, spec{Dir: cd, CPU: 120 * time.Second, Timeout: 4 * time.Minute,
		Env: []string{"VPTRACE_OUT=" + trace, "VPTRACE_ORACLE=" + oracle}}, bin, args...)
	res.inst = got.Dur
	// transparency: same output as the plain build (the oracle is only
	// written when asked for, so the runs are otherwise identical)
	if !compareRuns(t, cd, what, plain, got) {
		res.note = "output differs from the plain build: " + got.status()
		return res, nil
	}
	od, err := os.ReadFile(oracle)
	if err != nil {
		return fail("no oracle", "the driver wrote no oracle: %v", err)
	}
	o, err := parseOracle(od)
	if err != nil {
		return fail("bad oracle", "%v", err)
	}
	rr := mustRun(t, spec{Dir: cd, Timeout: 2 * time.Minute}, cfg.hijack, "report", "--csv", trace)
	if rr.Exit != 0 || rr.TimedOut {
		return fail("report failed", "%s: %s\n%s", cmdline(cfg.hijack, "report", "--csv", trace), rr.status(), tail(rr.Stderr, 2000))
	}
	writeFile(t, filepath.Join(cd, "report.csv"), rr.Stdout)
	rep, err := parseReportCSV(rr.Stdout)
	if err != nil {
		return fail("bad report", "%v", err)
	}
	s := score(o, rep, c.usestack, true)
	res.threads = len(s.threads)
	res.need, res.hit, res.traced, res.extra = s.totalNeed, s.totalHit, s.totalTraced, s.totalExtra
	res.minRecall, res.precision = 1, s.precision()
	for _, ts := range s.threads {
		res.minRecall = min(res.minRecall, ts.recall)
		res.kindBad += ts.kindBad
	}
	var fails []string
	checkRecall := c.threshold == vptT0.threshold
	if checkRecall && res.minRecall < vptMinRecall {
		fails = append(fails, fmt.Sprintf("recall %.2f%% < %.1f%% (worst thread)", 100*res.minRecall, 100*vptMinRecall))
	}
	if res.extra > 0 {
		fails = append(fails, fmt.Sprintf("precision %.3f%% (%d extra pages)", 100*res.precision, res.extra))
	}
	if res.kindBad > 0 && checkRecall {
		fails = append(fails, fmt.Sprintf("%d pages with the wrong read/write kind", res.kindBad))
	}
	res.ok = len(fails) == 0
	res.note = strings.Join(fails, "; ")
	if !res.ok {
		minR := 0.0
		if checkRecall {
			minR = vptMinRecall
		}
		t.Errorf("%s: %s\n%s\nrules:\n%s\nartifacts kept in %s (report.csv, oracle.txt, app.vpt)",
			what, res.note, failureText(o, rep, s, minR, c.usestack), c.rules(), rel(cd))
	} else {
		var per []string
		for _, ts := range s.threads {
			per = append(per, fmt.Sprintf("%s %.2f%%/%d", ts.thread, 100*ts.recall, ts.need))
		}
		t.Logf("%s: ok: recall (thread %%/pages) %s; %d pages traced, %d only allowed", what, strings.Join(per, ", "), s.totalTraced, vptAllowedCount(s))
	}
	return res, s
}

func vptAllowedCount(s *vptScore) int {
	n := 0
	for _, ts := range s.threads {
		n += ts.allowed
	}
	return n
}

func vptRecord(r vptResult) {
	vptResults.Lock()
	vptResults.r = append(vptResults.r, r)
	vptResults.Unlock()
}

// vptSummary logs the results table and writes it to the cache.
func vptSummary(t *testing.T) {
	vptResults.Lock()
	rs := append([]vptResult{}, vptResults.r...)
	vptResults.Unlock()
	if len(rs) == 0 {
		return
	}
	lvIdx := map[string]int{}
	for i, l := range vptLevels {
		lvIdx[l.name] = i
	}
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.workload != b.workload {
			return a.workload < b.workload
		}
		if a.level != b.level {
			return lvIdx[a.level] < lvIdx[b.level]
		}
		return a.config < b.config
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "%-10s %-6s %-9s %3s %8s %8s %9s %9s %6s %5s %8s %8s  %s\n",
		"workload", "level", "config", "thr", "need", "traced", "recall", "minrecall", "extra", "kind", "plain", "inst", "result")
	for _, r := range rs {
		recall := 1.0
		if r.need > 0 {
			recall = float64(r.hit) / float64(r.need)
		}
		status := "ok"
		if !r.ok {
			status = "FAIL " + r.note
		}
		if r.threads == 0 { // not scored
			fmt.Fprintf(&b, "%-10s %-6s %-9s %3s %8s %8s %9s %9s %6s %5s %8s %8s  %s\n",
				r.workload, r.level, r.config, "-", "-", "-", "-", "-", "-", "-", r.plain.Round(time.Millisecond), "-", status)
			continue
		}
		fmt.Fprintf(&b, "%-10s %-6s %-9s %3d %8d %8d %8.3f%% %8.3f%% %6d %5d %8s %8s  %s\n",
			r.workload, r.level, r.config, r.threads, r.need, r.traced, 100*recall, 100*r.minRecall, r.extra, r.kindBad,
			r.plain.Round(time.Millisecond), r.inst.Round(time.Millisecond), status)
	}
	t.Logf("vptrace accuracy (recall over required pages; precision failures counted as extra):\n%s", b.String())
	os.WriteFile(filepath.Join(cfg.cache, "e2e", "vptrace-accuracy.txt"), b.Bytes(), 0o644)
}

// TestVptracePCSThreads checks that the PCS simulation (the pdes workload)
// prints the same statistics whatever the number of worker threads: the
// property that makes its instrumented and plain runs, and runs with
// different thread counts in the tuning experiments, comparable.
func TestVptracePCSThreads(t *testing.T) {
	t.Parallel()
	needTool(t, "gcc", "gcc")
	ws, err := loadVptWorkloads()
	if err != nil {
		t.Fatal(err)
	}
	var w *vptWorkload
	for i := range ws {
		if ws[i].get("pdes") == "yes" {
			w = &ws[i]
		}
	}
	if w == nil {
		t.Fatal("no workload says `pdes: yes`")
	}
	kobj := compile(t, "gcc", append([]string{"-O2"}, vptKernelFlags...), w.kern)
	dobj := compile(t, "gcc", vptDriverFlags, w.drv)
	dir := workDir(t)
	bin := filepath.Join(dir, "pcs")
	link(t, "gcc", bin, []string{dobj, kobj}, "-lpthread")
	var args []string
	for _, a := range w.fields("test-args") {
		if !strings.HasPrefix(a, "threads=") {
			args = append(args, a)
		}
	}
	var first result
	for i, n := range []int{1, 2, 4, 7} {
		r := runCached(t, spec{Dir: dir, CPU: time.Minute, Timeout: 3 * time.Minute}, bin, append(args, fmt.Sprintf("threads=%d", n))...)
		if r.Exit != 0 || r.TimedOut {
			t.Fatalf("pcs threads=%d: %s\n%s", n, r.status(), tail(r.Stderr, 2000))
		}
		if i == 0 {
			first = r
			t.Logf("pcs %s:\n%s", strings.Join(args, " "), r.Stdout)
			continue
		}
		compareRuns(t, dir, fmt.Sprintf("pcs threads=1 vs threads=%d", n), first, r)
	}
}

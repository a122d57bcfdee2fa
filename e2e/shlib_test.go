package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Shared libraries (issue 10): instrumented code in shared libraries, in
// the program, in dlopen'ed plugins, run and checked against an oracle: the
// driver (testdata/shlib/shlib.c, host.c) knows the pages each thread's
// instrumented kernels touched (testdata/shlib/kern.c). Objects are
// compiled, rewritten with `hijack -rules` and linked as README's "Linking
// the runtime" says: every instrumented program and library depends on the
// shared runtime (-L DIR -lvptrace -Wl,-rpath,DIR). Every run must print
// what the plain build prints, map one runtime (shlib.c reads
// /proc/self/maps), leave exactly one trace file, and the trace must hold
// every page the instrumented kernels touched per thread and no other
// (recall and precision 100% at T=0; vptMinRecall for the workloads).

// shlibRules: every function, T=0, H=4096, tls auto (indirect in
// position-independent code).
const shlibRules = "version: 1\nrules:\n  - preset: vptrace\n    params:\n      threshold: 0.0\n      pagesize: 4096\n"

// vptRuntimeDir is the directory of libvptrace.so (and libvptrace.a): next
// to $HIJACK, else bin/.
func vptRuntimeDir(t testing.TB) string {
	t.Helper()
	d := filepath.Dir(cfg.hijack)
	if _, err := os.Stat(filepath.Join(d, "libvptrace.so")); err != nil {
		d = filepath.Join(cfg.root, "bin")
	}
	needFile(t, filepath.Join(d, "libvptrace.so"), "the shared vptrace runtime: make build")
	return d
}

// shlibBuild compiles and links in one work directory with one compiler.
type shlibBuild struct {
	t     *testing.T
	dir   string
	rules string
	rt    string // the runtime's directory
	cc    string // gcc or clang
	// viaCC: compile and link instrumented components with `hijack cc`,
	// which adds the runtime itself, instead of the compiler, `hijack
	// -rules` and the runtime's link options.
	viaCC bool
}

func newShlibBuild(t *testing.T, cc string) *shlibBuild {
	t.Helper()
	needHijack(t)
	if cfg.fake {
		t.Skip("the copy-through stand-in rewriter does not trace")
	}
	needTool(t, cc, cc)
	b := &shlibBuild{t: t, dir: workDir(t), rt: vptRuntimeDir(t), cc: cc}
	b.rules = filepath.Join(b.dir, "rules.yaml")
	writeFile(t, b.rules, []byte(shlibRules))
	return b
}

// run runs name args in the work directory; the test fails if it does.
func (b *shlibBuild) run(name string, args ...string) {
	b.t.Helper()
	r, err := run(spec{Dir: b.dir, Timeout: 5 * time.Minute, Env: []string{"HIJACK_RUNTIME=" + b.rt}}, name, args...)
	if err != nil || r.Exit != 0 {
		b.t.Fatalf("%s: %v %s\n%s\nartifacts kept in %s", cmdline(name, args...), err, r.status(), tail(r.Stderr, 3000), rel(b.dir))
	}
}

// compile compiles src to obj, instrumented when inst.
func (b *shlibBuild) compile(inst bool, obj, src string, flags ...string) {
	b.t.Helper()
	args := append(append([]string{}, flags...), "-c", src, "-o", obj)
	switch {
	case !inst:
		b.run(b.cc, args...)
	case b.viaCC:
		b.run(cfg.hijack, append([]string{"cc", "-q", "-r", b.rules, "--", b.cc}, args...)...)
	default:
		plain := strings.TrimSuffix(obj, ".o") + ".plain.o"
		args[len(args)-1] = plain
		b.run(b.cc, args...)
		b.run(cfg.hijack, "-q", "-rules", b.rules, plain, obj)
	}
}

// link links a program or a shared library; with the runtime when
// instrumented objects are among its inputs (inst).
func (b *shlibBuild) link(inst bool, args ...string) {
	b.t.Helper()
	switch {
	case !inst:
		b.run(b.cc, args...)
	case b.viaCC:
		b.run(cfg.hijack, append([]string{"cc", "-q", "-r", b.rules, "--", b.cc}, args...)...)
	default:
		b.run(b.cc, append(args, "-L"+b.rt, "-lvptrace", "-Wl,-rpath,"+b.rt)...)
	}
}

// shlibSrc is a file of testdata/shlib.
func shlibSrc(name string) string { return testdata("shlib", name) }

// driver compiles a driver (never instrumented) to an object.
func (b *shlibBuild) driver(src, obj string, cflags ...string) {
	b.t.Helper()
	inc := []string{"-I", testdata("shlib"), "-I", filepath.Join(cfg.root, "vptrace", "testdata", "workloads")}
	b.compile(false, obj, shlibSrc(src), append(append([]string{"-O2"}, inc...), cflags...)...)
}

// kern builds kern.c as component name: an object kern_NAME.o (kind "o",
// for the program) or a shared library libkern_NAME.so ("so"),
// instrumented or not; cflags and lflags are extra compiler and linker
// options.
func (b *shlibBuild) kern(name, kind string, inst bool, cflags, lflags []string) {
	b.t.Helper()
	obj := "kern_" + name + ".o"
	b.compile(inst, obj, shlibSrc("kern.c"), append([]string{"-O2", "-fPIC", "-DKERN=" + name}, cflags...)...)
	if kind == "so" {
		b.link(inst, append([]string{"-shared", obj, "-o", "libkern_" + name + ".so"}, lflags...)...)
	}
}

// runTraced runs a program of the build with VPTRACE_OUT=traces/%p.vpt (a
// directory the runtime creates) and the oracle, and checks it: the plain
// output want, one trace file, and the trace against the oracle.
func (b *shlibBuild) runTraced(what string, env []string, want []byte, prog string, args ...string) {
	b.t.Helper()
	traces := filepath.Join(b.dir, "traces")
	oracle := filepath.Join(b.dir, "oracle.txt")
	env = append([]string{"VPTRACE_OUT=" + filepath.Join(traces, "%p.vpt"), "VPTRACE_ORACLE=" + oracle}, env...)
	got := mustRun(b.t, spec{Dir: b.dir, Env: env, CPU: time.Minute, Timeout: 3 * time.Minute}, filepath.Join(b.dir, prog), args...)
	if !compareRuns(b.t, b.dir, what, result{Stdout: want}, got) {
		return
	}
	files, _ := filepath.Glob(filepath.Join(traces, "*"))
	if len(files) != 1 {
		b.t.Errorf("%s: %d trace files, want 1 (one runtime in the process): %v\nstderr:\n%s\nartifacts kept in %s", what, len(files), files, tail(got.Stderr, 2000), rel(b.dir))
		return
	}
	b.checkOracle(what, files[0], oracle)
}

// checkOracle scores a trace against the oracle: every page required,
// nothing else, kinds right.
func (b *shlibBuild) checkOracle(what, trace, oracle string) {
	b.t.Helper()
	od, err := os.ReadFile(oracle)
	if err != nil {
		b.t.Errorf("%s: the driver wrote no oracle: %v", what, err)
		return
	}
	o, err := parseOracle(od)
	if err != nil {
		b.t.Errorf("%s: %v", what, err)
		return
	}
	rr := mustRun(b.t, spec{Dir: b.dir, Timeout: 2 * time.Minute}, cfg.hijack, "report", "--csv", trace)
	if rr.Exit != 0 {
		b.t.Errorf("%s: hijack report --csv %s: %s\n%s", what, trace, rr.status(), tail(rr.Stderr, 2000))
		return
	}
	rep, err := parseReportCSV(rr.Stdout)
	if err != nil {
		b.t.Errorf("%s: %v", what, err)
		return
	}
	s := score(o, rep, false, true)
	minRecall := 1.0
	kinds := 0
	for _, ts := range s.threads {
		minRecall = min(minRecall, ts.recall)
		kinds += ts.kindBad
	}
	if len(s.threads) == 0 || minRecall < 1 || s.totalExtra > 0 || kinds > 0 {
		writeFile(b.t, filepath.Join(b.dir, "report.csv"), rr.Stdout)
		b.t.Errorf("%s: the trace does not match the oracle (%d threads, recall %.2f%% worst thread, %d extra pages, %d wrong kinds):\n%s\nartifacts kept in %s",
			what, len(s.threads), 100*minRecall, s.totalExtra, kinds, failureText(o, rep, s, 1, false), rel(b.dir))
	}
}

// shlibCase is one mix of instrumented and plain components.
type shlibCase struct {
	name   string
	inst   []string // instrumented components: exe, a, b
	plugin bool     // b is dlopen'ed, not linked
	cflags []string // for every component and the driver
	lflags []string // for every link
	env    []string
}

// build builds the components of c (plain ones too) and the driver, and
// links the program.
func (b *shlibBuild) build(c shlibCase) {
	b.t.Helper()
	inst := func(n string) bool { return slices.Contains(c.inst, n) }
	b.kern("a", "so", inst("a"), c.cflags, c.lflags)
	b.kern("b", "so", inst("b"), c.cflags, c.lflags)
	b.kern("exe", "o", inst("exe"), c.cflags, nil)
	dflags := c.cflags
	if c.plugin {
		dflags = append([]string{"-DPLUGIN"}, dflags...)
	}
	b.driver("shlib.c", "shlib.o", dflags...)
	link := []string{"shlib.o", "kern_exe.o", "-L.", "-lkern_a"}
	if !c.plugin {
		link = append(link, "-lkern_b")
	}
	link = append(append(link, "-ldl", "-lpthread", "-Wl,-rpath,"+b.dir, "-o", "shlib"), c.lflags...)
	b.link(inst("exe"), link...)
}

// args are the driver's arguments for c.
func (b *shlibBuild) args(c shlibCase) []string {
	a := []string{strings.Join(c.inst, ",")}
	if len(c.inst) == 0 {
		a[0] = "-"
	}
	if c.plugin {
		a = append(a, filepath.Join(b.dir, "libkern_b.so"))
	}
	return a
}

// shlibPlain is what the driver prints for every mix built with cc: the
// plain build's output (kernels compute the same whatever is
// instrumented).
func shlibPlain(t *testing.T, cc string) []byte {
	t.Helper()
	b := newShlibBuild(t, cc)
	c := shlibCase{name: "plain"}
	b.build(c)
	r := mustRun(t, spec{Dir: b.dir, Timeout: time.Minute}, filepath.Join(b.dir, "shlib"), b.args(c)...)
	if r.Exit != 0 {
		t.Fatalf("the plain build fails: %s\n%s", r.status(), tail(r.Stderr, 2000))
	}
	return r.Stdout
}

// shlibCases are the mixes TestShlib runs with each compiler (clang: the
// binding cases and the plugin).
func shlibCases(cc string) []shlibCase {
	all := []string{"exe", "a", "b"}
	cases := []shlibCase{
		// binding: the calls into the runtime never go through a PLT
		{name: "lazy", inst: all, env: []string{"LD_BIND_NOW="}},
		{name: "z-now", inst: all, lflags: []string{"-Wl,-z,now"}, env: []string{"LD_BIND_NOW="}},
		{name: "fno-plt", inst: all, cflags: []string{"-fno-plt"}, env: []string{"LD_BIND_NOW="}},
		{name: "plugin", inst: all, plugin: true},
	}
	if cc != "gcc" {
		return cases
	}
	return append(cases, []shlibCase{
		{name: "LD_BIND_NOW", inst: all, env: []string{"LD_BIND_NOW=1"}},
		// one runtime whatever the mix
		{name: "program-only", inst: []string{"exe"}},
		{name: "libraries-only", inst: []string{"a", "b"}},
		{name: "one-library", inst: []string{"b"}},
		{name: "plugin-into-plain", inst: []string{"b"}, plugin: true},
	}...)
}

// TestShlib: an instrumented program and two instrumented libraries in one
// process (and every other mix of instrumented and plain components),
// under lazy binding, -z now and -fno-plt, with the program's kern_helper
// interposing the libraries' own, gcc and clang.
func TestShlib(t *testing.T) {
	t.Parallel()
	reportWall(t)
	for _, cc := range []string{"gcc", "clang"} {
		t.Run(cc, func(t *testing.T) {
			t.Parallel()
			plain := shlibPlain(t, cc)
			for _, c := range shlibCases(cc) {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					b := newShlibBuild(t, cc)
					b.build(c)
					b.runTraced(cc+" "+c.name, c.env, plain, "shlib", b.args(c)...)
				})
			}
		})
	}
}

// TestShlibDlopen dlopens and dlcloses an instrumented plugin 1000 times
// (testdata/shlib/host.c checks that each dlclose unloads it), from a
// plain program (the runtime comes and stays with the plugin's first load)
// and from an instrumented one (the runtime is there from the start); the
// output must be what the plain plugin gives, and the trace hold every
// page each round's copy of the plugin touched.
func TestShlibDlopen(t *testing.T) {
	t.Parallel()
	reportWall(t)
	const rounds = "1000"
	host := func(b *shlibBuild, plugin, hostInst bool) {
		b.kern("p", "so", plugin, nil, nil)
		b.kern("exe", "o", hostInst, nil, nil)
		b.driver("host.c", "host.o")
		link := []string{"host.o", "-ldl", "-lpthread", "-o", "host"}
		if hostInst {
			// an instrumented object that registers itself: the
			// program depends on the runtime
			link = append([]string{"kern_exe.o"}, link...)
		}
		b.link(hostInst, link...)
	}
	b := newShlibBuild(t, "gcc")
	host(b, false, false)
	plain := mustRun(t, spec{Dir: b.dir, Timeout: 2 * time.Minute}, filepath.Join(b.dir, "host"), filepath.Join(b.dir, "libkern_p.so"), rounds)
	if plain.Exit != 0 {
		t.Fatalf("the plain build fails: %s\n%s", plain.status(), tail(plain.Stderr, 2000))
	}
	for _, hostInst := range []bool{false, true} {
		name := map[bool]string{false: "plain-program", true: "instrumented-program"}[hostInst]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := newShlibBuild(t, "gcc")
			host(b, true, hostInst)
			b.runTraced(name, nil, plain.Stdout, "host", filepath.Join(b.dir, "libkern_p.so"), rounds)
		})
	}
}

// TestShlibValgrind: the instrumented program and libraries of TestShlib
// run under memcheck with the runtime's suppressions (bin/vptrace.supp,
// README) as a test suite would run them: no error, the plain output.
func TestShlibValgrind(t *testing.T) {
	t.Parallel()
	reportWall(t)
	vg := needTool(t, "valgrind", "valgrind")
	plain := shlibPlain(t, "gcc")
	b := newShlibBuild(t, "gcc")
	supp := needFile(t, filepath.Join(b.rt, "vptrace.supp"), "the runtime's valgrind suppressions: make build")
	c := shlibCase{name: "valgrind", inst: []string{"exe", "a", "b"}}
	b.build(c)
	args := append([]string{"-q", "--fair-sched=yes", "--error-exitcode=1", "--suppressions=" + supp, filepath.Join(b.dir, "shlib")}, b.args(c)...)
	got := mustRun(t, spec{Dir: b.dir, Env: []string{"VPTRACE_OUT=" + filepath.Join(b.dir, "traces", "%p.vpt")},
		CPU: 5 * time.Minute, Timeout: 10 * time.Minute}, vg, args...)
	if got.Exit != 0 || valgrindMsg.Match(got.Stderr) {
		writeFile(t, filepath.Join(b.dir, "valgrind.err"), got.Stderr)
		t.Errorf("valgrind reports errors in the instrumented program (%s):\n%s\nartifacts kept in %s", got.status(), tail(got.Stderr, 4000), rel(b.dir))
		return
	}
	compareRuns(t, b.dir, "under valgrind", result{Stdout: plain}, got)
	// Suites that run under valgrind compare its stderr too (jq's
	// shtest): with -q it must say nothing, not even that it cannot read
	// the runtime's debug information (valgrind 3.19 and Go's DWARF 5).
	if len(got.Stderr) > 0 {
		t.Errorf("valgrind -q prints on stderr:\n%s", tail(got.Stderr, 2000))
	}
	if files, _ := filepath.Glob(filepath.Join(b.dir, "traces", "*.vpt")); len(files) != 1 {
		t.Errorf("%d trace files under valgrind, want 1: %v", len(files), files)
	}
}

// TestShlibWorkloads: the accuracy workloads (vptrace/testdata/workloads)
// with their kernels built -fPIC into an instrumented shared library (tls
// auto: indirect) that a plain driver links, scored against the oracle as
// TestVptraceAccuracy scores them (vptCheckRun), with gcc and clang at -O2.
func TestShlibWorkloads(t *testing.T) {
	t.Parallel()
	reportWall(t)
	ws, err := loadVptWorkloads()
	if err != nil {
		t.Fatal(err)
	}
	sel := os.Getenv("VPTRACE_WORKLOADS")
	for _, cc := range []string{"gcc", "clang"} {
		for _, w := range ws {
			if sel != "" && !matchName(sel, w.name) {
				continue
			}
			t.Run(cc+"/"+w.name, func(t *testing.T) {
				t.Parallel()
				if cpu := w.fields("cpu"); len(cpu) > 0 && !cpuHas(cpu...) {
					t.Skipf("this CPU lacks some of %v", cpu)
				}
				if cf := w.fields("cflags"); cc != "gcc" && len(cf) > 0 {
					t.Skipf("the workload's cflags %v are gcc's", cf)
				}
				b := newShlibBuild(t, cc)
				// keep loops the compiler would turn into calls to
				// memset/memcpy (libc is not instrumented) in the kernel
				noLibc := vptKernelFlags
				if cc != "gcc" {
					noLibc = []string{"-fno-builtin"}
				}
				kflags := append(append([]string{"-O2", "-fPIC"}, noLibc...), w.fields("cflags")...)
				b.compile(false, "drv.o", w.drv, vptDriverFlags...)
				lib := func(inst bool, dir string) {
					obj := filepath.Join(dir, "kern.o")
					b.compile(inst, obj, w.kern, kflags...)
					b.link(inst, "-shared", obj, "-o", filepath.Join(dir, "libwk.so"))
					b.link(false, "-o", filepath.Join(dir, "app"), "drv.o", "-L"+dir, "-lwk", "-Wl,-rpath,"+dir, "-lpthread")
				}
				pd, cd := filepath.Join(b.dir, "plain"), filepath.Join(b.dir, vptT0.name)
				for _, d := range []string{pd, cd} {
					if err := os.MkdirAll(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				lib(false, pd)
				args := w.fields("test-args")
				plain := mustRun(t, spec{Dir: pd, CPU: 60 * time.Second, Timeout: 3 * time.Minute}, filepath.Join(pd, "app"), args...)
				if plain.Exit != 0 || plain.TimedOut {
					t.Fatalf("the plain build fails: %s\n%s%s", plain.status(), tail(plain.Stdout, 2000), tail(plain.Stderr, 2000))
				}
				lib(true, cd)
				res := vptResult{workload: w.name, level: cc + "-O2-shared", config: vptT0.name, plain: plain.Dur}
				vptCheckRun(t, fmt.Sprintf("%s %s in a shared library", w.name, cc), cd, vptT0, filepath.Join(cd, "app"), args, plain, res)
			})
		}
	}
}

// TestShlibStatic: a -static program links the runtime archive,
// libvptrace.a, its one runtime (README, "Linking the runtime"): workloads
// with threads and thread-local data, scored like the others.
func TestShlibStatic(t *testing.T) {
	t.Parallel()
	reportWall(t)
	ws, err := loadVptWorkloads()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.name != "mt" && w.name != "globals" {
			continue
		}
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			b := newShlibBuild(t, "gcc")
			rt := needFile(t, filepath.Join(b.rt, "libvptrace.a"), "the vptrace runtime archive: make build")
			kflags := append([]string{"-O2"}, vptKernelFlags...)
			b.compile(false, "drv.o", w.drv, vptDriverFlags...)
			pd, cd := filepath.Join(b.dir, "plain"), filepath.Join(b.dir, vptT0.name)
			for _, d := range []string{pd, cd} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			b.compile(false, filepath.Join(pd, "kern.o"), w.kern, kflags...)
			b.run(b.cc, "-static", "-o", filepath.Join(pd, "app"), "drv.o", filepath.Join(pd, "kern.o"), "-lpthread")
			b.compile(true, filepath.Join(cd, "kern.o"), w.kern, kflags...)
			b.run(b.cc, "-static", "-o", filepath.Join(cd, "app"), "drv.o", filepath.Join(cd, "kern.o"), rt, "-lpthread")
			args := w.fields("test-args")
			plain := mustRun(t, spec{Dir: pd, CPU: 60 * time.Second, Timeout: 3 * time.Minute}, filepath.Join(pd, "app"), args...)
			if plain.Exit != 0 || plain.TimedOut {
				t.Fatalf("the plain build fails: %s\n%s%s", plain.status(), tail(plain.Stdout, 2000), tail(plain.Stderr, 2000))
			}
			res := vptResult{workload: w.name, level: "O2-static", config: vptT0.name, plain: plain.Dur}
			vptCheckRun(t, w.name+" static", cd, vptT0, filepath.Join(cd, "app"), args, plain, res)
		})
	}
}

// TestShlibStaticTLS: a plugin with 512 sites (testdata/shlib/many.c)
// dlopen'ed by a plain program. With tls auto (indirect: one TLS word) it
// loads and is traced; with tls: initial-exec its 4 KiB of slots exceed
// the static TLS glibc keeps for dlopen'ed libraries, and dlopen fails:
// why libraries default to indirect.
func TestShlibStaticTLS(t *testing.T) {
	t.Parallel()
	reportWall(t)
	build := func(b *shlibBuild, inst bool) {
		b.compile(inst, "many.o", shlibSrc("many.c"), "-O2", "-fPIC")
		b.compile(inst, "kern_p.o", shlibSrc("kern.c"), "-O2", "-fPIC", "-DKERN=p")
		b.link(inst, "-shared", "kern_p.o", "many.o", "-o", "libkern_p.so")
		b.driver("host.c", "host.o")
		b.link(false, "host.o", "-ldl", "-lpthread", "-o", "host")
	}
	const rounds = "20"
	pb := newShlibBuild(t, "gcc")
	build(pb, false)
	plain := mustRun(t, spec{Dir: pb.dir, Timeout: 2 * time.Minute}, filepath.Join(pb.dir, "host"), filepath.Join(pb.dir, "libkern_p.so"), rounds)
	if plain.Exit != 0 {
		t.Fatalf("the plain build fails: %s\n%s", plain.status(), tail(plain.Stderr, 2000))
	}
	t.Run("indirect", func(t *testing.T) {
		t.Parallel()
		b := newShlibBuild(t, "gcc")
		build(b, true)
		b.runTraced("indirect", nil, plain.Stdout, "host", filepath.Join(b.dir, "libkern_p.so"), rounds)
	})
	t.Run("initial-exec", func(t *testing.T) {
		t.Parallel()
		b := newShlibBuild(t, "gcc")
		writeFile(t, b.rules, []byte(shlibRules+"      tls: initial-exec\n"))
		build(b, true)
		r := mustRun(t, spec{Dir: b.dir, Timeout: 2 * time.Minute, Env: []string{"VPTRACE=off"}}, filepath.Join(b.dir, "host"), filepath.Join(b.dir, "libkern_p.so"), rounds)
		if r.Exit == 0 || !strings.Contains(string(r.Stderr), "static TLS") {
			t.Errorf("dlopen of a plugin with 4 KiB of initial-exec TLS: %s, want a failure for static TLS\n%s", r.status(), tail(r.Stderr, 2000))
		}
	})
}

// TestShlibFork: a fork child records the pages its instrumented library
// code touches though the forking thread's slots (indirect: an array the
// child gets a copy of) held them already (testdata/shlib/fork.c).
func TestShlibFork(t *testing.T) {
	t.Parallel()
	b := newShlibBuild(t, "gcc")
	b.kern("a", "so", true, nil, nil)
	b.driver("fork.c", "fork.o")
	b.link(false, "fork.o", "-L.", "-lkern_a", "-Wl,-rpath,"+b.dir, "-o", "fork")
	traces := filepath.Join(b.dir, "traces")
	r := mustRun(t, spec{Dir: b.dir, Env: []string{"VPTRACE_OUT=" + filepath.Join(traces, "%p.vpt")}, Timeout: time.Minute}, filepath.Join(b.dir, "fork"))
	var lo, hi, single uint64
	var parent, child int
	if _, err := fmt.Sscanf(string(r.Stdout), "range %v %v single %v\nparent %d child %d\n", &lo, &hi, &single, &parent, &child); r.Exit != 0 || err != nil {
		t.Fatalf("fork: %s, %v\n%s%s", r.status(), err, r.Stdout, tail(r.Stderr, 2000))
	}
	for _, who := range []struct {
		name string
		file string
	}{{"parent", fmt.Sprintf("%d.vpt", parent)}, {"child", fmt.Sprintf("%d.vpt", child)}} {
		rr := mustRun(t, spec{Dir: b.dir, Timeout: time.Minute}, cfg.hijack, "report", "--csv", filepath.Join(traces, who.file))
		rep, err := parseReportCSV(rr.Stdout)
		if rr.Exit != 0 || err != nil {
			t.Errorf("%s: hijack report: %s, %v\n%s", who.name, rr.status(), err, tail(rr.Stderr, 2000))
			continue
		}
		var missing []string
		for pg := lo; pg <= single; pg++ {
			found := false
			for _, pages := range rep.byTID {
				if row := pages[pg]; row != nil && row.reads > 0 && (row.writes > 0 || pg == single) {
					found = true
				}
			}
			if !found && (pg <= hi || pg == single) {
				missing = append(missing, fmt.Sprintf("%#x", pg<<12))
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s: pages the library's kernels touched missing from the trace: %v (the last is read only by one site, whose slot held it at the fork)\nartifacts kept in %s", who.name, missing, rel(b.dir))
		}
	}
}

// Package e2e is hijack's differential test suite: programs are compiled,
// their objects rewritten with the hijack binary, linked, run, and the
// behaviour compared with the original build. It drives external tools (gcc,
// clang, csmith, gdb, ar, Debian's static libraries and sources) and the
// rewriter named by $HIJACK (default ../bin/hijack, built by `make build`).
//
// Environment:
//
//	HIJACK            rewriter to test; e2e/testdata/fake-hijack is a copy-through stand-in
//	HIJACK_RULES      rules file for the differential tests (default testdata/rules/pad.yaml)
//	HIJACK_LDLIBS     extra link arguments for rewritten programs (e.g. bin/libvptrace.a -lpthread)
//	HIJACK_CACHE      cache directory (default <repo>/.cache)
//	CI                when set, a missing tool or source fails a test instead of skipping it
//	CSMITH_SEEDS      number of csmith seeds (default 50; 6 with -short)
//	E2E_JOBS          concurrent external processes (default GOMAXPROCS)
//	E2E_KEEP          keep every work directory, not only those of failed tests
//	E2E_FORCE_BADINPUT run TestBadInput even against the stand-in (it fails there)
//	E2E_BADINPUT_RANDOM number of random header corruptions in TestBadInput (default 40)
package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var cfg struct {
	root     string // repository root
	e2eDir   string // this package's directory
	cache    string // <root>/.cache
	hijack   string // absolute path of the rewriter
	hijackOK string // "" when usable, else why not
	fake     bool   // hijack is the copy-through stand-in
	rules    string // rules for differential tests
	none     string // rules that select no function
	ldlibs   []string
	ci       bool
	keep     bool
	jobs     int
}

// sem bounds the number of external processes (compilers, rewriter, test
// programs) running at once, whatever the number of parallel tests.
var sem chan struct{}

func TestMain(m *testing.M) {
	flag.Parse()
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	code := m.Run()
	if code == 0 && !cfg.keep {
		os.RemoveAll(filepath.Join(cfg.cache, "e2e", "work", "_archives"))
	}
	os.Exit(code)
}

func setup() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	cfg.e2eDir = wd
	cfg.root = filepath.Dir(wd)
	cfg.cache = filepath.Join(cfg.root, ".cache")
	if c := os.Getenv("HIJACK_CACHE"); c != "" {
		cfg.cache, _ = filepath.Abs(c)
	}
	cfg.ci = os.Getenv("CI") != "" && os.Getenv("CI") != "false" && os.Getenv("CI") != "0"
	cfg.keep = os.Getenv("E2E_KEEP") != ""

	h := os.Getenv("HIJACK")
	if h == "" {
		h = filepath.Join(cfg.root, "bin", "hijack")
	} else if !filepath.IsAbs(h) {
		// relative to this directory (go test's cwd), else to the repo root
		if _, err := os.Stat(filepath.Join(wd, h)); err == nil {
			h = filepath.Join(wd, h)
		} else {
			h = filepath.Join(cfg.root, h)
		}
	}
	cfg.hijack = h
	if st, err := os.Stat(h); err != nil {
		cfg.hijackOK = fmt.Sprintf("rewriter %s not found: run `make build`, or set HIJACK (HIJACK=$PWD/e2e/testdata/fake-hijack for the stand-in)", h)
	} else if st.IsDir() || st.Mode()&0o111 == 0 {
		cfg.hijackOK = fmt.Sprintf("rewriter %s is not an executable file", h)
	} else {
		f, err := os.Open(h)
		if err == nil {
			head := make([]byte, 1024)
			n, _ := io.ReadFull(f, head)
			f.Close()
			cfg.fake = bytes.Contains(head[:n], []byte("hijack-stand-in"))
		}
	}

	cfg.rules = filepath.Join(cfg.root, "testdata", "rules", "pad.yaml")
	if r := os.Getenv("HIJACK_RULES"); r != "" {
		cfg.rules, _ = filepath.Abs(r)
	}
	cfg.none = filepath.Join(wd, "testdata", "rules", "none.yaml")
	cfg.ldlibs = strings.Fields(os.Getenv("HIJACK_LDLIBS"))

	cfg.jobs = runtime.GOMAXPROCS(0)
	if j, err := strconv.Atoi(os.Getenv("E2E_JOBS")); err == nil && j > 0 {
		cfg.jobs = j
	}
	sem = make(chan struct{}, cfg.jobs)
	return os.MkdirAll(filepath.Join(cfg.cache, "e2e"), 0o755)
}

// ---------------------------------------------------------------------------
// Skips and requirements

// missing skips the test because something it needs is absent, or fails it
// when running in CI, where everything must be present.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if cfg.ci {
		t.Fatalf("CI=true and %s", msg)
	}
	t.Skip(msg)
}

// reportWall logs, when the test and all its subtests are done, how long it
// took from its start (for the timing lines of `make e2e`).
func reportWall(t *testing.T) {
	start := time.Now()
	t.Cleanup(func() { t.Logf("%s: wall time %v", t.Name(), time.Since(start).Round(100*time.Millisecond)) })
}

func needHijack(t testing.TB) {
	t.Helper()
	if cfg.hijackOK != "" {
		missing(t, "%s", cfg.hijackOK)
	}
	if _, err := os.Stat(cfg.rules); err != nil {
		t.Fatalf("rules file: %v", err)
	}
}

var lookMu sync.Mutex
var lookCache = map[string]string{}

// needTool returns the path of an executable or skips (fails in CI).
func needTool(t testing.TB, name, pkg string) string {
	t.Helper()
	lookMu.Lock()
	p, ok := lookCache[name]
	if !ok {
		p, _ = exec.LookPath(name)
		lookCache[name] = p
	}
	lookMu.Unlock()
	if p == "" {
		missing(t, "%s not found in PATH (Debian package %s; run `make deps`)", name, pkg)
	}
	return p
}

// needFile skips (fails in CI) when a file is absent.
func needFile(t testing.TB, path, how string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		missing(t, "%s not found (%s)", path, how)
	}
	return path
}

var cpuFlagsOnce sync.Once
var cpuFlags map[string]bool

// cpuHas reports whether /proc/cpuinfo lists every one of the flags.
func cpuHas(flags ...string) bool {
	cpuFlagsOnce.Do(func() {
		cpuFlags = map[string]bool{}
		data, _ := os.ReadFile("/proc/cpuinfo")
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "flags") {
				if i := strings.IndexByte(line, ':'); i >= 0 {
					for _, f := range strings.Fields(line[i+1:]) {
						cpuFlags[f] = true
					}
				}
				break
			}
		}
	})
	for _, f := range flags {
		if !cpuFlags[f] {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// Work directories

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._/+=-]+`)

// workDir returns a fresh directory for the test's artifacts under
// .cache/e2e/work/<test name>. It is removed when the test passes (unless
// E2E_KEEP is set) and kept when it fails, so failure messages can name it.
func workDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(cfg.cache, "e2e", "work", unsafeName.ReplaceAllString(t.Name(), "_"))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() && !cfg.keep {
			os.RemoveAll(dir)
		}
	})
	return dir
}

func rel(p string) string {
	if r, err := filepath.Rel(cfg.root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func testdata(parts ...string) string {
	return filepath.Join(append([]string{cfg.e2eDir, "testdata"}, parts...)...)
}

func hashStrings(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ---------------------------------------------------------------------------
// Running external programs

type spec struct {
	Dir     string
	Stdin   []byte
	Env     []string // added to the environment
	Timeout time.Duration
	// CPU limits the process's CPU time (RLIMIT_CPU, whole seconds): unlike
	// the wall-clock Timeout it does not depend on the machine's load. A
	// process killed by the limit counts as timed out.
	CPU time.Duration
}

type result struct {
	Stdout   []byte
	Stderr   []byte
	Exit     int // exit status; 128+signal when killed by a signal
	Signal   string
	TimedOut bool
	Dur      time.Duration // wall clock
	CPUTime  time.Duration // user + system
}

func (r result) status() string {
	switch {
	case r.TimedOut:
		return fmt.Sprintf("timed out after %v (%v CPU)", r.Dur.Round(time.Millisecond), r.CPUTime.Round(time.Millisecond))
	case r.Signal != "":
		return "killed by " + r.Signal
	default:
		return fmt.Sprintf("exit %d", r.Exit)
	}
}

// run executes a command while holding a slot of sem. The timeout counts
// from the start of the process, not from the wait for a slot. Only a
// failure to start is an error.
func run(s spec, name string, args ...string) (result, error) {
	sem <- struct{}{}
	defer func() { <-sem }()
	return runNow(s, name, args...)
}

func runNow(s spec, name string, args ...string) (result, error) {
	if s.Timeout == 0 {
		s.Timeout = 5 * time.Minute
	}
	if s.CPU > 0 {
		secs := int((s.CPU + time.Second - 1) / time.Second)
		args = append([]string{"-c", fmt.Sprintf(`ulimit -t %d && exec "$0" "$@"`, secs), name}, args...)
		name = "/bin/sh"
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = s.Dir
	if s.Env != nil {
		cmd.Env = append(os.Environ(), s.Env...)
	}
	cmd.Stdin = bytes.NewReader(s.Stdin)
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// the whole process group: a timed-out program may have children
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := result{Stdout: out.Bytes(), Stderr: errb.Bytes(), Dur: time.Since(start)}
	if cmd.ProcessState != nil {
		r.CPUTime = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if ctx.Err() != nil {
		r.TimedOut = true
		r.Exit = -1
		return r, nil
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return r, err
		}
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		r.Exit = 128 + int(ws.Signal())
		r.Signal = ws.Signal().String()
		if s.CPU > 0 && (ws.Signal() == syscall.SIGXCPU || ws.Signal() == syscall.SIGKILL && r.CPUTime >= s.CPU-time.Second) {
			r.TimedOut = true
		}
	} else {
		r.Exit = ws.ExitStatus()
	}
	return r, nil
}

func cmdline(name string, args ...string) string {
	q := []string{name}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$\\*?;&|<>()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q = append(q, a)
	}
	return strings.Join(q, " ")
}

func tail(b []byte, n int) string {
	s := string(b)
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}

// ---------------------------------------------------------------------------
// Compiling (cached) and linking

var ccIDs sync.Map // compiler name -> identity string

// ccIdentity is the resolved path and `--version` of a compiler, part of
// every cache key.
func ccIdentity(t testing.TB, cc string) string {
	if v, ok := ccIDs.Load(cc); ok {
		return v.(string)
	}
	path := needTool(t, cc, map[string]string{"gcc": "gcc", "g++": "g++", "clang": "clang", "clang++": "clang"}[cc])
	real, _ := filepath.EvalSymlinks(path)
	r, err := runNow(spec{Timeout: time.Minute}, path, "--version")
	if err != nil || r.Exit != 0 {
		t.Fatalf("%s --version: %v %s", cc, err, r.Stderr)
	}
	id := real + "\n" + string(r.Stdout)
	ccIDs.Store(cc, id)
	return id
}

// compile compiles sources (one .o per call) with cc and flags, caching the
// object under .cache/e2e/obj keyed by the compiler, flags, the source and
// the headers beside it. It returns the cached object's path: copy it before
// handing it to anything that might write.
func compile(t testing.TB, cc string, flags []string, src string) string {
	t.Helper()
	id := ccIdentity(t, cc)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	parts := []string{id, strings.Join(flags, "\x00"), src, string(data)}
	// headers next to the source (testdata keeps its headers there)
	hs, _ := filepath.Glob(filepath.Join(filepath.Dir(src), "*.h"))
	hpp, _ := filepath.Glob(filepath.Join(filepath.Dir(src), "*.hpp"))
	hs = append(hs, hpp...)
	sort.Strings(hs)
	for _, h := range hs {
		hd, _ := os.ReadFile(h)
		parts = append(parts, h, string(hd))
	}
	key := hashStrings(parts...)[:20]
	base := strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))
	dir := filepath.Join(cfg.cache, "e2e", "obj")
	obj := filepath.Join(dir, base+"-"+key+".o")
	if _, err := os.Stat(obj); err == nil {
		return obj
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := fmt.Sprintf("%s.tmp%d-%d", obj, os.Getpid(), time.Now().UnixNano())
	args := append(append([]string{}, flags...), "-c", src, "-o", tmp)
	r, err := run(spec{Dir: filepath.Dir(src), Timeout: 10 * time.Minute}, cc, args...)
	if err != nil || r.Exit != 0 {
		os.Remove(tmp)
		t.Fatalf("compile failed: %s\n%v %s\n%s", cmdline(cc, args...), err, r.status(), tail(r.Stderr, 4000))
	}
	if err := os.Rename(tmp, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// link links objects and archives into an executable.
func link(t testing.TB, cc, out string, inputs []string, flags ...string) {
	t.Helper()
	args := append([]string{"-o", out}, inputs...)
	args = append(args, flags...)
	r, err := run(spec{Dir: filepath.Dir(out), Timeout: 5 * time.Minute}, cc, args...)
	if err != nil || r.Exit != 0 {
		t.Fatalf("link failed: %s\n%v %s\n%s\nartifacts kept in %s", cmdline(cc, args...), err, r.status(), tail(r.Stderr, 4000), rel(filepath.Dir(out)))
	}
}

// ---------------------------------------------------------------------------
// Rewriting

type hijackError struct {
	args []string
	res  result
	err  error
}

func (e *hijackError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", cmdline(cfg.hijack, e.args...))
	if e.err != nil {
		fmt.Fprintf(&b, "%v", e.err)
	} else {
		b.WriteString(e.res.status())
	}
	if len(e.res.Stderr) > 0 {
		fmt.Fprintf(&b, "\nhijack stderr:\n%s", tail(e.res.Stderr, 4000))
	}
	return b.String()
}

// rewrite runs `hijack -rules RULES in out`.
func rewrite(rules, in, out string) error {
	args := []string{"-rules", rules, in, out}
	r, err := run(spec{Dir: filepath.Dir(out), Timeout: 10 * time.Minute}, cfg.hijack, args...)
	if err != nil || r.Exit != 0 || r.TimedOut {
		return &hijackError{args: args, res: r, err: err}
	}
	if _, err := os.Stat(out); err != nil {
		return &hijackError{args: args, res: r, err: fmt.Errorf("exit 0 but no output: %v", err)}
	}
	return nil
}

// parallel runs f(i) for i in [0,n) on cfg.jobs workers and returns the
// errors in index order (nil entries for successes).
func parallel(n int, f func(i int) error) []error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < cfg.jobs && w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return errs
}

func firstErrors(errs []error, max int) error {
	var msgs []string
	n := 0
	for _, e := range errs {
		if e != nil {
			n++
			if len(msgs) < max {
				msgs = append(msgs, e.Error())
			}
		}
	}
	if n == 0 {
		return nil
	}
	head := fmt.Sprintf("%d of %d rewrites failed", n, len(errs))
	if n > max {
		head += fmt.Sprintf(" (first %d shown)", max)
	}
	return errors.New(head + ":\n" + strings.Join(msgs, "\n\n"))
}

// rewriteAll copies each object into dir/orig/ and rewrites it into
// dir/rewritten/ (in parallel); it returns the rewritten paths in order.
// Names are made unique by an index prefix when they collide.
func rewriteAll(t testing.TB, rules string, objs []string, dir string) (orig, out []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, sub := range []string{"orig", "rewritten"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, o := range objs {
		name := filepath.Base(o)
		if seen[name] {
			name = fmt.Sprintf("%d-%s", i, name)
		}
		seen[name] = true
		dst := filepath.Join(dir, "orig", name)
		copyFile(t, o, dst)
		orig = append(orig, dst)
		out = append(out, filepath.Join(dir, "rewritten", name))
	}
	errs := parallel(len(orig), func(i int) error { return rewrite(rules, orig[i], out[i]) })
	if err := firstErrors(errs, 3); err != nil {
		t.Fatalf("%v\nartifacts kept in %s", err, rel(dir))
	}
	return orig, out
}

// ---------------------------------------------------------------------------
// Archives

type arMember struct {
	Name string
	Data []byte
}

// readArchive parses a System V / GNU ar archive (with a // long-name table
// and / or /SYM64/ symbol tables, which are dropped).
func readArchive(path string) ([]arMember, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	const magic = "!<arch>\n"
	if !bytes.HasPrefix(data, []byte(magic)) {
		return nil, fmt.Errorf("%s: not an ar archive", path)
	}
	var members []arMember
	var longNames []byte
	off := len(magic)
	for off < len(data) {
		if off+60 > len(data) {
			return nil, fmt.Errorf("%s: truncated member header at %d", path, off)
		}
		h := data[off : off+60]
		if string(h[58:60]) != "`\n" {
			return nil, fmt.Errorf("%s: bad member header at %d", path, off)
		}
		name := strings.TrimRight(string(h[0:16]), " ")
		size, err := strconv.Atoi(strings.TrimSpace(string(h[48:58])))
		if err != nil || size < 0 || off+60+size > len(data) {
			return nil, fmt.Errorf("%s: bad member size at %d", path, off)
		}
		body := data[off+60 : off+60+size]
		off += 60 + size
		if off%2 == 1 {
			off++
		}
		switch {
		case name == "/" || name == "/SYM64/" || name == "__.SYMDEF" || name == "__.SYMDEF SORTED":
			continue
		case name == "//":
			longNames = body
			continue
		case strings.HasPrefix(name, "/"):
			n, err := strconv.Atoi(name[1:])
			if err != nil || n >= len(longNames) {
				return nil, fmt.Errorf("%s: bad long name %q", path, name)
			}
			end := bytes.Index(longNames[n:], []byte("/\n"))
			if end < 0 {
				return nil, fmt.Errorf("%s: unterminated long name %q", path, name)
			}
			name = string(longNames[n : n+end])
		default:
			name = strings.TrimSuffix(name, "/")
		}
		members = append(members, arMember{Name: name, Data: body})
	}
	return members, nil
}

// extractArchive writes the members of an archive to dir/NNN-name and returns
// the paths in archive order.
func extractArchive(t testing.TB, archive, dir string) []string {
	t.Helper()
	ms, err := readArchive(archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i, m := range ms {
		p := filepath.Join(dir, fmt.Sprintf("%03d-%s", i, filepath.Base(m.Name)))
		writeFile(t, p, m.Data)
		paths = append(paths, p)
	}
	return paths
}

type archiveResult struct {
	once sync.Once
	path string
	dir  string
	err  error
}

var archives sync.Map // archive+rules -> *archiveResult

// rewrittenArchive rewrites every member of a static library with rules
// and builds a new archive from the results, once per test binary run
// (tests share it). Artifacts live in .cache/e2e/work/_archives/.
func rewrittenArchive(t testing.TB, rules, archive string) string {
	t.Helper()
	needTool(t, "ar", "binutils")
	key := archive + "\x00" + rules
	v, _ := archives.LoadOrStore(key, &archiveResult{})
	ar := v.(*archiveResult)
	ar.once.Do(func() {
		name := strings.TrimSuffix(filepath.Base(archive), ".a") + "-" + hashStrings(key)[:8]
		ar.dir = filepath.Join(cfg.cache, "e2e", "work", "_archives", name)
		ar.path, ar.err = buildRewrittenArchive(rules, archive, ar.dir)
	})
	if ar.err != nil {
		t.Fatalf("rewriting %s: %v\nartifacts kept in %s", archive, ar.err, rel(ar.dir))
	}
	return ar.path
}

func buildRewrittenArchive(rules, archive, dir string) (string, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	ms, err := readArchive(archive)
	if err != nil {
		return "", err
	}
	var in, out []string
	for i, m := range ms {
		sub := fmt.Sprintf("%03d", i)
		for _, d := range []string{"orig", "rewritten"} {
			if err := os.MkdirAll(filepath.Join(dir, d, sub), 0o755); err != nil {
				return "", err
			}
		}
		p := filepath.Join(dir, "orig", sub, filepath.Base(m.Name))
		if err := os.WriteFile(p, m.Data, 0o644); err != nil {
			return "", err
		}
		in = append(in, p)
		out = append(out, filepath.Join(dir, "rewritten", sub, filepath.Base(m.Name)))
	}
	errs := parallel(len(in), func(i int) error { return rewrite(rules, in[i], out[i]) })
	if err := firstErrors(errs, 3); err != nil {
		return "", err
	}
	lib := filepath.Join(dir, filepath.Base(archive))
	args := append([]string{"rcsD", lib}, out...)
	r, err := run(spec{Dir: dir}, "ar", args...)
	if err != nil || r.Exit != 0 {
		return "", fmt.Errorf("ar %s: %v %s %s", lib, err, r.status(), r.Stderr)
	}
	return lib, nil
}

// ---------------------------------------------------------------------------
// Comparing runs

// compareRuns checks that two runs printed the same stdout and ended with
// the same status. On a mismatch it writes both outputs into dir, prints a
// diff and fails the test naming dir.
func compareRuns(t testing.TB, dir, what string, orig, got result) bool {
	t.Helper()
	if orig.TimedOut {
		t.Fatalf("%s: original run timed out", what)
	}
	same := bytes.Equal(orig.Stdout, got.Stdout) && orig.Exit == got.Exit && !got.TimedOut
	if same {
		return true
	}
	name := unsafeName.ReplaceAllString(strings.ReplaceAll(what, " ", "_"), "_")
	name = strings.ReplaceAll(name, "/", "_")
	po := filepath.Join(dir, name+".orig.out")
	pr := filepath.Join(dir, name+".rewritten.out")
	writeFile(t, po, orig.Stdout)
	writeFile(t, pr, got.Stdout)
	writeFile(t, filepath.Join(dir, name+".orig.err"), orig.Stderr)
	writeFile(t, filepath.Join(dir, name+".rewritten.err"), got.Stderr)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: rewritten program behaves differently\n", what)
	fmt.Fprintf(&b, "  original:  %s, %d bytes of stdout\n", orig.status(), len(orig.Stdout))
	fmt.Fprintf(&b, "  rewritten: %s, %d bytes of stdout\n", got.status(), len(got.Stdout))
	if !bytes.Equal(orig.Stdout, got.Stdout) {
		b.WriteString(diffText(po, pr, 60))
	}
	if len(got.Stderr) > 0 {
		fmt.Fprintf(&b, "rewritten stderr:\n%s\n", tail(got.Stderr, 2000))
	}
	fmt.Fprintf(&b, "artifacts kept in %s", rel(dir))
	t.Error(b.String())
	return false
}

// diffText is `diff -u a b` cut to max lines, or a first-difference report
// when diff is unavailable.
func diffText(a, b string, max int) string {
	if p, err := exec.LookPath("diff"); err == nil {
		r, err := runNow(spec{Timeout: time.Minute}, p, "-u", "--label", "original", "--label", "rewritten", a, b)
		if err == nil && len(r.Stdout) > 0 {
			lines := strings.SplitAfter(string(r.Stdout), "\n")
			if len(lines) > max {
				lines = append(lines[:max], fmt.Sprintf("... (%d more diff lines)\n", len(lines)-max))
			}
			return strings.Join(lines, "")
		}
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	la := strings.Split(string(da), "\n")
	lb := strings.Split(string(db), "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y || i >= len(la) || i >= len(lb) {
			return fmt.Sprintf("first difference at line %d:\n- %q\n+ %q\n", i+1, x, y)
		}
	}
	return ""
}

// runCached runs a deterministic program (no inputs but args) and caches the
// result keyed by the binary's bytes and arguments. Used for the originals
// of csmith programs, whose runs (and time-outs) dominate reruns.
func runCached(t testing.TB, s spec, bin string, args ...string) result {
	t.Helper()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	key := hashStrings(string(data), strings.Join(args, "\x00"), string(s.Stdin), s.CPU.String())[:24]
	path := filepath.Join(cfg.cache, "e2e", "runs", key+".json")
	if b, err := os.ReadFile(path); err == nil {
		var r result
		if json.Unmarshal(b, &r) == nil {
			return r
		}
	}
	r, err := run(s, bin, args...)
	if err != nil {
		t.Fatalf("%s: %v", cmdline(bin, args...), err)
	}
	if r.TimedOut && r.Signal == "" {
		return r // a wall-clock time-out depends on the load: not cached
	}
	if b, err := json.Marshal(r); err == nil {
		os.MkdirAll(filepath.Dir(path), 0o755)
		tmp := fmt.Sprintf("%s.%d", path, time.Now().UnixNano())
		if os.WriteFile(tmp, b, 0o644) == nil {
			os.Rename(tmp, path)
		}
	}
	return r
}

// mustRun runs a program and fails the test if it could not be started.
func mustRun(t testing.TB, s spec, name string, args ...string) result {
	t.Helper()
	r, err := run(s, name, args...)
	if err != nil {
		t.Fatalf("%s: %v", cmdline(name, args...), err)
	}
	return r
}

// linkRewritten returns the extra link arguments rewritten programs need
// (HIJACK_LDLIBS, e.g. a runtime library for the vptrace preset).
func linkRewritten(flags ...string) []string {
	return append(append([]string{}, flags...), cfg.ldlibs...)
}

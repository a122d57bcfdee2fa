package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// Fault injection for the vptrace runtime and `hijack report`: a program
// (testdata/faults/faults.c, and other.c that it execs) is rewritten with
// the vptrace preset, linked with the runtime and made to fail: its trace
// file is a full device or on a full file system, it is killed during
// start-up, in mid-run and during its exit flush, it execs itself or
// another traced program, forks and execs or _exits with a fixed
// VPTRACE_OUT, exits from a thread, shares one VPTRACE_OUT with siblings
// or with its previous run, touches a global array by pointer. Each
// case says which trace files must exist, which of the pages the program
// says it touched each must hold (for the right thread), what the runtime
// must say on stderr, and report's verdict on each file: its status line,
// its warnings (the same for --csv) and exit status 0. No case depends on
// timing: kills wait for the program to say where it is (and, for the exit
// flush, for the pipe it writes its trace into to fill).

// faultRange is one "R image tid address pages" line of the program.
type faultRange struct {
	image       string
	tid         uint32
	first, n    uint64 // first page number, pages
	description string
}

// faultRun is one run of the program.
type faultRun struct {
	dir    string
	res    result
	ranges []faultRange
}

func parseFaultRanges(t *testing.T, stdout []byte) []faultRange {
	t.Helper()
	var rs []faultRange
	for _, l := range strings.Split(string(stdout), "\n") {
		f := strings.Fields(l)
		if len(f) != 5 || f[0] != "R" {
			continue
		}
		tid, err1 := strconv.ParseUint(f[2], 10, 32)
		addr, err2 := strconv.ParseUint(f[3], 16, 64)
		n, err3 := strconv.ParseUint(f[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("bad line %q", l)
		}
		rs = append(rs, faultRange{image: f[1], tid: uint32(tid), first: addr >> 12, n: n, description: l})
	}
	return rs
}

// pid is the pid of the process whose main thread printed image's lines.
func (r *faultRun) pid(t *testing.T, image string) uint32 {
	t.Helper()
	for _, g := range r.ranges {
		if g.image == image {
			return g.tid
		}
	}
	t.Fatalf("the program printed nothing for %q:\n%s", image, r.res.Stdout)
	return 0
}

// faultVerdict is what a trace file must be.
type faultVerdict struct {
	images []string // whose pages it must hold, each under its thread
	status string   // in report's status line
	warn   []string // report's warnings must say each (none if empty)
	noWarn []string // and none of these
}

var (
	faultComplete   = faultVerdict{status: "status: complete"}
	faultUntilExec  = faultVerdict{status: "status: complete up to its exec of"}
	faultKilled     = faultVerdict{status: "status: INCOMPLETE: no end record", warn: []string{"incomplete trace: no end record", "was killed"}, noWarn: []string{"write error"}}
	faultWriteError = faultVerdict{status: "status: INCOMPLETE: write error (no space left on device, errno 28)",
		warn: []string{"incomplete trace: write error (no space left on device, errno 28)"}, noWarn: []string{"killed"}}
)

func (v faultVerdict) with(images ...string) faultVerdict {
	v.images = images
	return v
}

// checkTrace checks one trace file of a run against its verdict, through
// `hijack report` and `hijack report --csv`.
func checkTrace(t *testing.T, r *faultRun, name string, v faultVerdict) {
	t.Helper()
	path := filepath.Join(r.dir, name)
	text := mustRun(t, spec{Dir: r.dir, Timeout: time.Minute}, cfg.hijack, "report", path)
	csvRun := mustRun(t, spec{Dir: r.dir, Timeout: time.Minute}, cfg.hijack, "report", "--csv", path)
	if text.Exit != 0 || csvRun.Exit != 0 {
		t.Errorf("%s: hijack report: %s, --csv: %s\n%s%s", name, text.status(), csvRun.status(), text.Stderr, csvRun.Stderr)
		return
	}
	status := ""
	for _, l := range strings.Split(string(text.Stdout), "\n") {
		if strings.HasPrefix(l, "status: ") {
			status = l
		}
	}
	if !strings.HasPrefix(status, v.status) {
		t.Errorf("%s: report says %q, want %q...", name, status, v.status)
	}
	warnings := string(text.Stderr)
	if !bytes.Equal(text.Stderr, csvRun.Stderr) {
		t.Errorf("%s: the tables warn %q, --csv %q", name, text.Stderr, csvRun.Stderr)
	}
	if len(v.warn) == 0 && warnings != "" {
		t.Errorf("%s: warnings %q, want none", name, warnings)
	}
	for _, w := range v.warn {
		if !strings.Contains(warnings, w) {
			t.Errorf("%s: the warnings %q do not say %q", name, warnings, w)
		}
	}
	for _, w := range v.noWarn {
		if strings.Contains(warnings, w) {
			t.Errorf("%s: the warnings %q say %q", name, warnings, w)
		}
	}
	rep, err := parseReportCSV(csvRun.Stdout)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	for _, img := range v.images {
		found := false
		for _, g := range r.ranges {
			if g.image != img {
				continue
			}
			found = true
			missing := 0
			for p := g.first; p < g.first+g.n; p++ {
				if rep.byTID[g.tid][p] == nil {
					missing++
				}
			}
			if missing > 0 {
				t.Errorf("%s: %d of the %d pages of %q missing (thread %d has %d pages in the trace)", name, missing, g.n, g.description, g.tid, len(rep.byTID[g.tid]))
			}
		}
		if !found {
			t.Errorf("%s: the program printed no pages for %q", name, img)
		}
	}
}

// checkFiles checks that the run's directory holds exactly these files
// (besides the program's own).
func checkFiles(t *testing.T, r *faultRun, want ...string) {
	t.Helper()
	ls, err := os.ReadDir(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ls {
		got = append(got, e.Name())
	}
	want = append([]string{}, want...)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("files %v, want %v", got, want)
	}
}

// checkStderr compares the program's stderr with want (the runtime's
// messages; <dir> is the run's directory, <pid.image> the pid of an
// image).
func checkStderr(t *testing.T, r *faultRun, want string) {
	t.Helper()
	want = strings.ReplaceAll(want, "<dir>", r.dir)
	for _, g := range r.ranges {
		want = strings.ReplaceAll(want, "<pid."+g.image+">", strconv.FormatUint(uint64(g.tid), 10))
	}
	if got := string(r.res.Stderr); got != want {
		t.Errorf("the program's stderr %q, want %q", got, want)
	}
}

// checkExec checks a run of "faults exec": t.vpt has the pages of the
// image before the exec and ends with it, t.PID.vpt those of the image
// after (image), and the runtime said why that name.
func checkExec(t *testing.T, r *faultRun, image string) {
	t.Helper()
	next := fmt.Sprintf("t.%d.vpt", r.pid(t, "main"))
	checkStderr(t, r, "vptrace: <dir>/t.vpt exists; writing this trace to <dir>/"+next+"\n")
	checkFiles(t, r, "t.vpt", next)
	checkTrace(t, r, "t.vpt", faultUntilExec.with("main"))
	checkTrace(t, r, next, faultComplete.with(image))
}

type faultProgs struct{ faults, other string }

// buildFaultProgs compiles, rewrites and links faults.c and other.c.
func buildFaultProgs(t *testing.T) faultProgs {
	t.Helper()
	lib := vptLib(t)
	dir := workDir(t)
	rules := filepath.Join(cfg.root, "testdata", "rules", "vptrace.yaml")
	var ps faultProgs
	for _, p := range []struct {
		name string
		out  *string
	}{{"faults", &ps.faults}, {"other", &ps.other}} {
		obj := compile(t, "gcc", []string{"-O2"}, testdata("faults", p.name+".c"))
		inst := filepath.Join(dir, p.name+".inst.o")
		if err := rewrite(rules, obj, inst); err != nil {
			t.Fatal(err)
		}
		*p.out = filepath.Join(dir, p.name)
		link(t, "gcc", *p.out, []string{inst, lib}, "-lpthread")
	}
	return ps
}

// runFault runs the program in the test's fresh work directory (its trace
// there, VPTRACE_OUT=t.vpt unless env sets it) and fails the test if the
// program fails.
func runFault(t *testing.T, env []string, bin string, args ...string) *faultRun {
	t.Helper()
	return runFaultIn(t, workDir(t), env, bin, args...)
}

// runFaultIn is runFault in dir.
func runFaultIn(t *testing.T, dir string, env []string, bin string, args ...string) *faultRun {
	t.Helper()
	env = append([]string{"VPTRACE_OUT=t.vpt"}, env...)
	res := mustRun(t, spec{Dir: dir, Env: env, Timeout: 2 * time.Minute}, bin, args...)
	if res.Exit != 0 {
		t.Fatalf("%s: %s\n%s", cmdline(bin, args...), res.status(), res.Stderr)
	}
	return &faultRun{dir: dir, res: res, ranges: parseFaultRanges(t, res.Stdout)}
}

// runKilled starts the program, waits until it prints marker (and, with
// full, until full() says so), kills it with SIGKILL and returns its run.
// Only the program's own progress decides when: the deadlines (minutes)
// only catch a program that never gets there.
func runKilled(t *testing.T, dir string, env []string, marker string, full func() bool, bin string, args ...string) *faultRun {
	t.Helper()
	sem <- struct{}{}
	defer func() { <-sem }()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "VPTRACE_OUT=t.vpt"), env...)
	stdin, err := cmd.StdinPipe() // held open: the program waits on it
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// a program that never gets there is killed: Scan then ends
	watchdog := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	var out bytes.Buffer
	sc := bufio.NewScanner(stdout)
	seen := false
	for !seen && sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		seen = sc.Text() == marker
	}
	if !seen {
		cmd.Wait()
		killed = true
		t.Fatalf("%s ended without printing %q: %v\n%s%s", cmdline(bin, args...), marker, cmd.ProcessState, out.String(), stderr.String())
	}
	for deadline := time.Now().Add(time.Minute); full != nil && !full(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the condition to kill it never came", cmdline(bin, args...))
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	killed = true
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("%s was not killed: %v\n%s", cmdline(bin, args...), err, stderr.String())
	}
	res := result{Stdout: out.Bytes(), Stderr: stderr.Bytes(), Exit: 128 + int(syscall.SIGKILL), Signal: "killed"}
	return &faultRun{dir: dir, res: res, ranges: parseFaultRanges(t, out.Bytes())}
}

// pipeHalfFull reports whether the pipe behind fd holds half of what it
// can or more. Here that is only ever the exit flush (30000 pages, far
// more than the pipe takes; what the program wrote before is a few KiB),
// which then cannot end until the test reads: the program is inside it.
// (A full pipe holds less than its size: small writes share its pages.)
func pipeHalfFull(fd int) bool {
	size, _, e1 := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), 1032 /* F_GETPIPE_SZ */, 0)
	var n int32
	_, _, e2 := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCINQ /* FIONREAD */, uintptr(unsafe.Pointer(&n)))
	return e1 == 0 && e2 == 0 && n > 0 && uintptr(n) >= size/2
}

// drain reads what is left in the fifo whose writer died into a file.
func drain(t *testing.T, fd int, path string) {
	t.Helper()
	var data []byte
	buf := make([]byte, 1<<16)
	for deadline := time.Now().Add(time.Minute); ; {
		n, err := syscall.Read(fd, buf)
		if n > 0 {
			data = append(data, buf[:n]...)
			continue
		}
		if err == syscall.EAGAIN && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // (a writer still has it open)
			continue
		}
		if err != nil && err != syscall.EAGAIN {
			t.Fatal(err)
		}
		break
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// mountTmpfs mounts a tmpfs of size bytes on dir until the test ends, or
// skips the test when that is not permitted.
func mountTmpfs(t *testing.T, dir string, size int) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs on %s (%v): this case needs root or CAP_SYS_ADMIN", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
}

func TestVptraceFaults(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	if cfg.fake {
		t.Skip("the copy-through stand-in rewriter does not trace")
	}
	needTool(t, "gcc", "gcc")
	ps := buildFaultProgs(t)
	for _, c := range []struct {
		name string
		run  func(t *testing.T)
	}{
		// a full device: the header cannot be written; said once, tracing off
		{"full device", func(t *testing.T) {
			dir := workDir(t)
			full := filepath.Join(dir, "full")
			if err := syscall.Mknod(full, syscall.S_IFCHR|0o666, 1<<8|7); err != nil {
				t.Skipf("cannot make a /dev/full-like node (mknod c 1 7: %v): needs root", err)
			}
			r := runFaultIn(t, dir, []string{"VPTRACE_OUT=" + full}, ps.faults, "run", "main", "20")
			checkStderr(t, r, "vptrace: cannot write trace file <dir>/full: No space left on device (ENOSPC); tracing is off\n")
			checkFiles(t, r, "full")
		}},
		// a full file system in mid-run: said once; the file says write
		// error, not killed
		{"full file system", func(t *testing.T) {
			dir := workDir(t)
			mountTmpfs(t, dir, 64<<10)
			// (uncompressed: 30000 pages' aggregates overflow 64 KiB only so)
			r := runFaultIn(t, dir, []string{"VPTRACE_COMPRESS=0"}, ps.faults, "run", "main", "30000")
			checkStderr(t, r, "vptrace: cannot write trace file <dir>/t.vpt: No space left on device (ENOSPC); the trace is incomplete\n")
			checkFiles(t, r, "t.vpt")
			checkTrace(t, r, "t.vpt", faultWriteError)
		}},
		// SIGKILL before the first event: the header is there, no events
		{"killed during start-up", func(t *testing.T) {
			r := runKilled(t, workDir(t), []string{"FAULTS_HOLD=1"}, "READY", nil, ps.faults)
			checkFiles(t, r, "t.vpt")
			checkTrace(t, r, "t.vpt", faultKilled)
		}},
		// SIGKILL in mid-run: what was flushed is there
		{"killed in mid-run", func(t *testing.T) {
			r := runKilled(t, workDir(t), nil, "READY", nil, ps.faults, "hold", "50")
			checkFiles(t, r, "t.vpt")
			checkTrace(t, r, "t.vpt", faultKilled.with("flushed"))
		}},
		// SIGKILL during the exit flush: the trace goes into a fifo the
		// test reads only after the kill; the flush of 30000 pages cannot
		// fit in the pipe, so once the pipe fills the program is in it
		{"killed during the exit flush", func(t *testing.T) {
			dir := workDir(t)
			fifo := filepath.Join(dir, "t.vpt")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			fd, err := syscall.Open(fifo, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(fd)
			// (uncompressed: 30000 pages' aggregates fill the pipe only so)
			r := runKilled(t, dir, []string{"VPTRACE_INTERVAL_MS=3600000", "VPTRACE_COMPRESS=0"}, "EXITING", func() bool { return pipeHalfFull(fd) }, ps.faults, "exitbig", "30000")
			r.dir = filepath.Join(dir, "drained")
			if err := os.Mkdir(r.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			drain(t, fd, filepath.Join(r.dir, "t.vpt"))
			// (whether the pipe ends inside a chunk depends on where the
			// writer was: not asked)
			checkTrace(t, r, "t.vpt", faultKilled.with("flushed"))
		}},
		// exec of itself, of another traced program: the first image's
		// file is whole, the second image writes t.PID.vpt
		{"exec itself", func(t *testing.T) {
			checkExec(t, runFault(t, nil, ps.faults, "exec", ps.faults, "run", "exec", "12"), "exec")
		}},
		{"exec another traced program", func(t *testing.T) {
			checkExec(t, runFault(t, nil, ps.faults, "exec", ps.other), "other")
		}},
		// fork, exec in the child, one VPTRACE_OUT: three files, none
		// truncated or mixed
		{"fork and exec with a fixed VPTRACE_OUT", func(t *testing.T) {
			r := runFault(t, nil, ps.faults, "forkexec", ps.other)
			child := r.pid(t, "child")
			forked, execd := fmt.Sprintf("t.%d.vpt", child), fmt.Sprintf("t.%d.2.vpt", child)
			checkStderr(t, r, "vptrace: <dir>/t.vpt exists; writing this trace to <dir>/"+execd+"\n")
			checkFiles(t, r, "t.vpt", forked, execd)
			checkTrace(t, r, "t.vpt", faultComplete.with("main"))
			checkTrace(t, r, forked, faultUntilExec.with("child"))
			checkTrace(t, r, execd, faultComplete.with("other"))
			all := mustRun(t, spec{Dir: r.dir, Timeout: time.Minute}, cfg.hijack, "report", "t.vpt", forked, execd)
			if all.Exit != 0 || len(all.Stderr) != 0 || bytes.Count(all.Stdout, []byte("\ntrace ")) != 2 {
				t.Errorf("report of the three files: %s, stderr %q", all.status(), all.Stderr)
			}
		}},
		// a fork child that ends with _exit: its pages are in its file
		{"_exit in a fork child", func(t *testing.T) {
			r := runFault(t, nil, ps.faults, "forkexit")
			forked := fmt.Sprintf("t.%d.vpt", r.pid(t, "child"))
			checkStderr(t, r, "")
			checkFiles(t, r, "t.vpt", forked)
			checkTrace(t, r, "t.vpt", faultComplete.with("main"))
			checkTrace(t, r, forked, faultComplete.with("child"))
		}},
		{"exit from a thread", func(t *testing.T) {
			r := runFault(t, nil, ps.faults, "threadexit")
			checkStderr(t, r, "")
			checkFiles(t, r, "t.vpt")
			checkTrace(t, r, "t.vpt", faultComplete.with("main", "thread"))
		}},
		// four processes started together with one VPTRACE_OUT (a make
		// check): one gets t.vpt, the others t.PID.vpt, each file one
		// process's
		{"siblings sharing VPTRACE_OUT", func(t *testing.T) {
			r := runFault(t, nil, "/bin/sh", "-c", `for i in 1 2 3 4; do "$0" run s$i 5 & done; wait`, ps.faults)
			if len(r.ranges) != 4 {
				t.Fatalf("%d processes printed their pages, want 4:\n%s", len(r.ranges), r.res.Stdout)
			}
			files := map[string]bool{"t.vpt": true}
			var moved []string
			for _, g := range r.ranges {
				name := fmt.Sprintf("t.%d.vpt", g.tid)
				if _, err := os.Stat(filepath.Join(r.dir, name)); err == nil {
					files[name] = true
					moved = append(moved, fmt.Sprintf("vptrace: %s exists; writing this trace to %s\n", filepath.Join(r.dir, "t.vpt"), filepath.Join(r.dir, name)))
				}
			}
			var names []string
			for f := range files {
				names = append(names, f)
			}
			checkFiles(t, r, names...)
			if len(names) != 4 {
				t.Fatalf("files %v: want t.vpt and three t.PID.vpt", names)
			}
			for _, m := range moved {
				if !bytes.Contains(r.res.Stderr, []byte(m)) {
					t.Errorf("stderr %q lacks %q", r.res.Stderr, m)
				}
			}
			if n := bytes.Count(r.res.Stderr, []byte("\n")); n != 3 {
				t.Errorf("stderr: %d lines, want 3: %q", n, r.res.Stderr)
			}
			for _, name := range names {
				checkTrace(t, r, name, faultComplete) // (each one process's: report refuses others)
			}
			all := append([]string{"report", "--csv"}, names...)
			rr := mustRun(t, spec{Dir: r.dir, Timeout: time.Minute}, cfg.hijack, all...)
			rep, err := parseReportCSV(rr.Stdout)
			if rr.Exit != 0 || err != nil {
				t.Fatalf("%s: %s %v\n%s", cmdline(cfg.hijack, all...), rr.status(), err, rr.Stderr)
			}
			for _, g := range r.ranges {
				for p := g.first; p < g.first+g.n; p++ {
					if rep.byTID[g.tid][p] == nil {
						t.Errorf("page %#x of %q missing", p<<12, g.description)
					}
				}
			}
		}},
		// a global array passed by pointer (the demo's table): the
		// preset cannot tell its segment from the instruction, the report
		// names it by address from the executable's symbol table
		{"global passed by pointer", func(t *testing.T) {
			r := runFault(t, nil, ps.faults, "global")
			checkTrace(t, r, "t.vpt", faultComplete.with("global"))
			rr := mustRun(t, spec{Dir: r.dir, Timeout: time.Minute}, cfg.hijack, "report", "--csv", "t.vpt")
			rep, err := parseReportCSV(rr.Stdout)
			if err != nil {
				t.Fatal(err)
			}
			g := r.ranges[0]
			seen := 0
			for _, row := range rep.rows {
				if row.page >= g.first && row.page < g.first+g.n {
					seen++
					if !strings.Contains(row.rest, "segment=global") || !strings.Contains(row.rest, "owner=global_table") {
						t.Errorf("page %#x: %s; want segment global, owner global_table", row.page<<12, row.rest)
					}
				}
			}
			if seen < int(g.n) {
				t.Errorf("%d rows for the %d pages of global_table", seen, g.n)
			}
			text := mustRun(t, spec{Dir: r.dir, Timeout: time.Minute}, cfg.hijack, "report", "t.vpt")
			heap := false
			for _, line := range strings.Split(string(text.Stdout), "\n") {
				if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[0], "0x") && f[4] == "heap" {
					heap = true
				}
			}
			if heap || !bytes.Contains(text.Stdout, []byte("global_table")) {
				t.Errorf("the report calls pages heap, or does not name global_table:\n%s", text.Stdout)
			}
		}},
		// the same VPTRACE_OUT twice: the first run's file is kept
		{"run twice with one VPTRACE_OUT", func(t *testing.T) {
			dir := workDir(t)
			first := runFaultIn(t, dir, nil, ps.faults, "run", "first", "10")
			second := runFaultIn(t, dir, nil, ps.faults, "run", "second", "10")
			next := fmt.Sprintf("t.%d.vpt", second.pid(t, "second"))
			checkStderr(t, first, "")
			checkStderr(t, second, "vptrace: <dir>/t.vpt exists; writing this trace to <dir>/"+next+"\n")
			checkFiles(t, second, "t.vpt", next)
			checkTrace(t, first, "t.vpt", faultComplete.with("first"))
			checkTrace(t, second, next, faultComplete.with("second"))
		}},
	} {
		c := c
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			c.run(t)
		})
	}
}

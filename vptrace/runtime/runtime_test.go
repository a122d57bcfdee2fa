package main

// Tests of the runtime with real programs: testdata/vt.c drives the
// hand-instrumented functions of testdata/sites.S (the exact ABI.md
// sequences), linked with the archive built from this package, and prints
// the events it expects per thread; the tests read the trace with package
// trace and compare exactly.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hijack/vptrace/abi"
	"hijack/vptrace/trace"
)

var (
	vtBin    string // the test program
	vtSOBin  string // the same, linked with libvptrace.so (gohalf_test.go)
	libDir   string // libvptrace.a, vptrace.h
	buildErr error
	noGCC    bool
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vptrace-rt-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	libDir = dir
	buildErr = buildVT(dir)
	if os.Getenv("VT_SHARED") != "" && buildErr == nil {
		// every vt test with the shared runtime (libvptrace.so, its Go
		// half loaded when needed) instead of the archive
		vtBin = vtSOBin
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildVT(dir string) error {
	if _, err := exec.LookPath("gcc"); err != nil {
		noGCC = true
		return fmt.Errorf("no gcc: %v", err)
	}
	cmd := exec.Command("sh", "build.sh", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build.sh: %v\n%s", err, out)
	}
	vtBin = filepath.Join(dir, "vt")
	cmd = exec.Command("gcc", "-O1", "-g", "-Wall", "-I", dir, "-o", vtBin,
		"testdata/vt.c", "testdata/sites.S", "testdata/regs.S",
		filepath.Join(dir, "libvptrace.a"), "-lpthread")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("gcc: %v\n%s", err, out)
	}
	// (-z now: sites.S calls the stubs through the PLT, whose lazy
	// binding would clobber r10 and r11 at a first call; instrumented
	// code calls them through the GOT)
	vtSOBin = filepath.Join(dir, "vt-so")
	cmd = exec.Command("gcc", "-O1", "-g", "-Wall", "-I", dir, "-o", vtSOBin,
		"testdata/vt.c", "testdata/sites.S", "testdata/regs.S",
		"-L", dir, "-lvptrace", "-Wl,-rpath,"+dir, "-Wl,-z,now", "-lpthread")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("gcc: %v\n%s", err, out)
	}
	return nil
}

func needVT(t *testing.T) {
	t.Helper()
	if noGCC {
		t.Skip(buildErr)
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

type run struct {
	stdout, stderr string
	err            error
	trace          string // path
	dir            string
}

// runVT runs the test program with VPTRACE_OUT in a fresh directory.
func runVT(t *testing.T, env []string, args ...string) *run {
	t.Helper()
	needVT(t)
	return runVTBin(t, vtBin, env, args...)
}

// runVTBin runs bin (vt, vt-so) with VPTRACE_OUT in a fresh directory.
func runVTBin(t *testing.T, bin string, env []string, args ...string) *run {
	t.Helper()
	dir := t.TempDir()
	r := &run{dir: dir, trace: filepath.Join(dir, "t.vpt")}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "VPTRACE_OUT="+r.trace)
	cmd.Env = append(cmd.Env, env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case r.err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("vt %v: timed out\n%s", args, se.String())
	}
	r.stdout, r.stderr = so.String(), se.String()
	return r
}

type exp struct{ events, reads, writes uint64 }

// expectations parses "E tid page events reads writes" lines, summing lines
// for the same (tid, page) (a thread's normal and signal-handler tables).
func expectations(t *testing.T, out string) map[uint32]map[uint64]exp {
	t.Helper()
	return expectTagged(t, out, "E")
}

func expectTagged(t *testing.T, out, tag string) map[uint32]map[uint64]exp {
	t.Helper()
	m := map[uint32]map[uint64]exp{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 6 || f[0] != tag {
			continue
		}
		tid, _ := strconv.ParseUint(f[1], 10, 32)
		page, err := strconv.ParseUint(f[2], 16, 64)
		if err != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		ev, _ := strconv.ParseUint(f[3], 10, 64)
		rd, _ := strconv.ParseUint(f[4], 10, 64)
		wr, _ := strconv.ParseUint(f[5], 10, 64)
		if m[uint32(tid)] == nil {
			m[uint32(tid)] = map[uint64]exp{}
		}
		e := m[uint32(tid)][page]
		m[uint32(tid)][page] = exp{e.events + ev, e.reads + rd, e.writes + wr}
	}
	return m
}

func load(t *testing.T, path string) *trace.Trace {
	t.Helper()
	tr, err := trace.Load(path)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	if len(tr.Errors) > 0 {
		t.Errorf("%s: %v", path, tr.Errors)
	}
	return tr
}

// compare checks the trace against the expectations exactly: the same
// threads, the same pages, the same counts.
func compare(t *testing.T, tr *trace.Trace, want map[uint32]map[uint64]exp) {
	t.Helper()
	errs := 0
	report := func(format string, args ...any) {
		if errs++; errs <= 20 {
			t.Errorf(format, args...)
		}
	}
	for tid, pages := range want {
		th := tr.Thread(tid)
		if th == nil {
			report("thread %d (%d pages) missing from the trace", tid, len(pages))
			continue
		}
		for page, e := range pages {
			p := th.Pages[page]
			if p == nil {
				report("thread %d: page %#x missing (want %+v)", tid, page<<12, e)
				continue
			}
			if p.Events != e.events || p.Reads != e.reads || p.Writes != e.writes {
				report("thread %d page %#x: events/reads/writes %d/%d/%d, want %d/%d/%d",
					tid, page<<12, p.Events, p.Reads, p.Writes, e.events, e.reads, e.writes)
			}
		}
		for page := range th.Pages {
			if _, ok := pages[page]; !ok {
				report("thread %d: page %#x in the trace, never touched", tid, page<<12)
			}
		}
		if th.Drops != 0 {
			report("thread %d: %d drops", tid, th.Drops)
		}
	}
	for _, th := range tr.Threads {
		if _, ok := want[th.TID]; !ok {
			report("thread %d in the trace (%d pages), not expected", th.TID, len(th.Pages))
		}
	}
	if errs > 20 {
		t.Errorf("... %d errors in all", errs)
	}
}

func mustOK(t *testing.T, r *run) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("vt: %v\n%s", r.err, r.stderr)
	}
}

func checkClean(t *testing.T, tr *trace.Trace) {
	t.Helper()
	if tr.End == nil || tr.End.Flags&trace.EndClean == 0 {
		t.Errorf("no clean end chunk")
	}
	if tr.Truncated || tr.Damaged != 0 {
		t.Errorf("truncated %v, damaged %d", tr.Truncated, tr.Damaged)
	}
}

func TestBasic(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"go", nil},
		{"raw", []string{"VPTRACE_RAW=1"}},
		{"smallbuf", []string{"VPTRACE_BUFKB=4"}},
		{"backlog", []string{"VPTRACE_BUFKB=4", "VPTRACE_BACKLOG=1", "VPTRACE_BACKLOG_WAIT_MS=0"}},
		{"backlogwait", []string{"VPTRACE_BUFKB=4", "VPTRACE_BACKLOG=1"}},
		{"early", []string{"VT_EARLY=1"}},
		{"noclock", []string{"VPTRACE_CLOCK_US=0", "VPTRACE_INTERVAL_MS=5"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runVT(t, c.env, "basic", "4")
			mustOK(t, r)
			tr := load(t, r.trace)
			want := expectations(t, r.stdout)
			if len(want) != 5 {
				t.Fatalf("%d threads in the expectations, want 5", len(want))
			}
			compare(t, tr, want)
			checkClean(t, tr)
			if c.name == "raw" && tr.Chunks[trace.ChunkAgg] != 0 {
				t.Errorf("VPTRACE_RAW: %d agg chunks", tr.Chunks[trace.ChunkAgg])
			}
			if c.name == "go" && tr.Chunks[trace.ChunkRaw] != 0 {
				t.Errorf("%d raw chunks, want none", tr.Chunks[trace.ChunkRaw])
			}
			checkSites(t, tr)
		})
	}
}

// TestCompressedChunks: the C part stores its large chunks (RAW, OBJECT,
// MAPS) in DEFLATE chunks (its own compressor) that decode to the
// same events, and VPTRACE_COMPRESS=0 writes every chunk as it is.
func TestCompressedChunks(t *testing.T) {
	for _, c := range []struct {
		name   string
		env    []string
		packed bool
	}{
		{"raw", []string{"VPTRACE_RAW=1"}, true},
		{"raw,plain", []string{"VPTRACE_RAW=1", "VPTRACE_COMPRESS=0"}, false},
		{"go,plain", []string{"VPTRACE_COMPRESS=0"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runVT(t, c.env, "basic", "4")
			mustOK(t, r)
			tr := load(t, r.trace)
			compare(t, tr, expectations(t, r.stdout))
			checkClean(t, tr)
			checkSites(t, tr)
			packed := packedChunks(t, r.trace)
			if !c.packed && len(packed) != 0 {
				t.Errorf("compressed chunks with VPTRACE_COMPRESS=0: %v", packed)
			}
			if c.packed {
				for _, typ := range []trace.ChunkType{trace.ChunkRaw, trace.ChunkObject} {
					if packed[typ] == 0 {
						t.Errorf("no compressed %s chunk: %v", typ, packed)
					}
				}
			}
		})
	}
}

// packedChunks counts the trace's chunks stored compressed (DEFLATE), by
// the type of the chunk inside; each must take fewer bytes than its payload.
func packedChunks(t *testing.T, path string) map[trace.ChunkType]int {
	t.Helper()
	rd, err := trace.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	packed := map[trace.ChunkType]int{}
	for {
		ch, err := rd.Next()
		if err != nil {
			break
		}
		if ch.Packed {
			packed[ch.Type]++
			if ch.Stored >= len(ch.Payload) {
				t.Errorf("%s chunk at %d: %d bytes stored for %d", ch.Type, ch.Offset, ch.Stored, len(ch.Payload))
			}
		}
	}
	return packed
}

// checkSites: every site resolves, and the attribution is right.
func checkSites(t *testing.T, tr *trace.Trace) {
	t.Helper()
	if len(tr.Objects) != 1 || tr.Objects[0].Name() != "testdata/sites.o" {
		t.Fatalf("objects: %d", len(tr.Objects))
	}
	seen := map[string]bool{}
	for _, th := range tr.Threads {
		for _, p := range th.Pages {
			for _, sc := range p.Sites {
				s := tr.Site(sc.Site)
				if !s.Known() {
					t.Fatalf("site %#x unresolved", sc.Site)
				}
				seen[s.Function] = true
				switch s.Function {
				case "vt_global":
					if s.Symbol != "vt_gbuf" || s.Seg != trace.SegGlobal || s.Kind&trace.KindRMW != trace.KindWrite {
						t.Errorf("vt_global site: %+v", s)
					}
				case "vt_tls":
					if s.Symbol != "vt_tvar" || s.Seg != trace.SegTLS {
						t.Errorf("vt_tls site: %+v", s)
					}
				case "vt_rmw":
					if s.Kind&trace.KindRMW != trace.KindRMW || s.Where() != "vt_rmw+0x10" {
						t.Errorf("vt_rmw site: %+v %s", s, s.Where())
					}
				}
			}
		}
	}
	for _, f := range []string{"vt_read", "vt_write", "vt_rmw", "vt_global", "vt_tls", "vt_exact", "vt_read2"} {
		if !seen[f] {
			t.Errorf("no events from %s", f)
		}
	}
}

func TestChurn(t *testing.T) {
	n := "2000"
	if testing.Short() {
		n = "300"
	}
	r := runVT(t, nil, "churn", n, "50")
	mustOK(t, r)
	tr := load(t, r.trace)
	want := expectations(t, r.stdout)
	if len(want) < 200 {
		t.Fatalf("only %d threads", len(want))
	}
	compare(t, tr, want)
	checkClean(t, tr)
	exited := 0
	for _, th := range tr.Threads {
		for _, in := range th.Instances {
			if in.Exited {
				exited++
			}
		}
	}
	if exited < len(want)-1 {
		var noExit []string
		for _, th := range tr.Threads {
			for _, in := range th.Instances {
				if !in.Exited {
					noExit = append(noExit, fmt.Sprintf("%d(serial %d)", th.TID, in.Serial))
				}
			}
		}
		t.Errorf("%d thread exits recorded, want %d; threads without one: %v", exited, len(want)-1, noExit)
	}
}

// TestSignals: instrumented code in signal handlers that interrupt stubs
// (and the runtime's batch path). Nothing may be lost but what the runtime
// counts as dropped.
func TestSignals(t *testing.T) {
	for _, env := range [][]string{nil, {"VPTRACE_BUFKB=4"}} {
		t.Run(strings.Join(env, ","), func(t *testing.T) {
			r := runVT(t, env, "signals", "2", "300")
			mustOK(t, r)
			tr := load(t, r.trace)
			want := expectations(t, r.stdout)
			var handlerEvents uint64
			for tid, pages := range want {
				th := tr.Thread(tid)
				if th == nil {
					t.Fatalf("thread %d missing", tid)
				}
				var missing uint64
				for page, e := range pages {
					p := th.Pages[page]
					got := uint64(0)
					if p != nil {
						got = p.Events
					}
					if got > e.events {
						t.Errorf("thread %d page %#x: %d events, at most %d", tid, page<<12, got, e.events)
					}
					missing += e.events - min(got, e.events)
					if e.writes > 0 {
						handlerEvents += e.events
					}
				}
				for page := range th.Pages {
					if _, ok := pages[page]; !ok {
						t.Errorf("thread %d: page %#x never touched", tid, page<<12)
					}
				}
				if missing != th.Drops {
					t.Errorf("thread %d: %d events missing, %d reported dropped", tid, missing, th.Drops)
				}
				t.Logf("thread %d: %d events, %d dropped", tid, th.Events, th.Drops)
			}
			if handlerEvents == 0 {
				t.Errorf("no events from signal handlers")
			}
			checkClean(t, tr)
		})
	}
}

// TestStress: threads flood the runtime while the aggregator steals from
// their buffers every millisecond and they fall back to writing their own
// buffers (backlog): the claim protocol must neither lose nor duplicate.
func TestStress(t *testing.T) {
	n := "1000000"
	if testing.Short() {
		n = "200000"
	}
	for _, env := range [][]string{
		{"VPTRACE_INTERVAL_MS=1"},
		{"VPTRACE_INTERVAL_MS=1", "VPTRACE_BUFKB=4", "VPTRACE_BACKLOG=2", "VPTRACE_BACKLOG_WAIT_MS=0"},
		{"VPTRACE_INTERVAL_MS=1", "VPTRACE_BUFKB=4", "VPTRACE_BACKLOG=2"},
		{"VPTRACE_INTERVAL_MS=1", "VPTRACE_BUFKB=4", "VPTRACE_BACKLOG=2", "VPTRACE_BACKLOG_WAIT_MS=1"},
		{"VPTRACE_INTERVAL_MS=1", "VPTRACE_MAXMB=1"},
	} {
		t.Run(strings.Join(env, ","), func(t *testing.T) {
			r := runVT(t, env, "stress", "3", n)
			mustOK(t, r)
			tr := load(t, r.trace)
			compare(t, tr, expectations(t, r.stdout))
			checkClean(t, tr)
			t.Logf("chunks: %v", tr.Chunks)
		})
	}
}

// childLine returns the pid and trace path a fork child of vt printed
// ("C pid path").
func childLine(t *testing.T, stdout string) (int, string) {
	t.Helper()
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "C" {
			if pid, _ := strconv.Atoi(f[1]); pid != 0 {
				return pid, f[2]
			}
		}
	}
	t.Fatalf("no child line:\n%s", stdout)
	return 0, ""
}

func TestFork(t *testing.T) {
	r := runVT(t, nil, "fork")
	mustOK(t, r)
	child, childPath := childLine(t, r.stdout)
	if want := pidName(r.trace, child); childPath != want {
		t.Errorf("child trace %q, want %q", childPath, want)
	}
	parent := expectations(t, r.stdout)
	kids := expectTagged(t, r.stdout, "F")
	pt := load(t, r.trace)
	compare(t, pt, parent)
	checkClean(t, pt)
	ct := load(t, childPath)
	compare(t, ct, kids)
	checkClean(t, ct)
	if ct.Header.Flags&trace.HeaderForked == 0 || ct.Header.PID != uint32(child) || ct.Header.PPID != pt.Header.PID {
		t.Errorf("child header %+v", ct.Header)
	}
	if len(parent) != 1 || len(kids) != 2 {
		t.Errorf("parent threads %d (want 1), child threads %d (want 2)", len(parent), len(kids))
	}
}

// TestSmallStack: a thread with a 32 KiB stack records. glibc carves
// static TLS out of each thread's stack and refuses pthread_create when it
// does not fit, so the runtime's TLS must stay small (its cache is mapped
// per thread instead).
func TestSmallStack(t *testing.T) {
	r := runVT(t, nil, "smallstack")
	mustOK(t, r)
	want := expectations(t, r.stdout)
	compare(t, load(t, r.trace), want)
	if len(want) != 1 {
		t.Fatalf("%d threads expected, want 1", len(want))
	}
	for _, pages := range want {
		if len(pages) != 40 {
			t.Errorf("%d pages expected, want 40", len(pages))
		}
	}
}

// noEpochs keeps the cache epoch from moving on with the streaming
// interval during a run, for vt.c's model of the cache and the memo, which
// moves it only at vptrace_start and fork.
const noEpochs = "VPTRACE_INTERVAL_MS=3600000"

// TestCache: sites without the exact bit go through the runtime's
// per-thread recent-page cache; vt.c mirrors it (keys, hashing, epochs) and
// the trace must match the mirror exactly: pages a thread recorded lately
// for the same kind of access are dropped, other kinds and other threads
// record, vptrace_start and a fork child start afresh; three pages that
// share a set (16384 pages apart) evict one another.
func TestCache(t *testing.T) {
	r := runVT(t, []string{noEpochs}, "cache")
	mustOK(t, r)
	_, childPath := childLine(t, r.stdout)
	var hits int
	for _, l := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "H" {
			hits, _ = strconv.Atoi(f[1])
		}
	}
	// the second site's pass over 300 pages and the third pass of the
	// first site hit the cache, and part of the second round of 9000 pages
	if hits < 600 {
		t.Errorf("the model expects %d cache hits, want at least 600", hits)
	}
	parent := expectations(t, r.stdout)
	pt := load(t, r.trace)
	compare(t, pt, parent)
	checkClean(t, pt)
	kids := expectTagged(t, r.stdout, "F")
	ct := load(t, childPath)
	compare(t, ct, kids)
	if len(parent) != 2 || len(kids) != 1 {
		t.Errorf("parent threads %d (want 2), child threads %d (want 1)", len(parent), len(kids))
	}
	for _, pages := range kids {
		if len(pages) != 30 {
			t.Errorf("the fork child recorded %d pages, want 30 (its own trace starts with an empty cache)", len(pages))
		}
	}
}

// TestProbeTable: a new thread's probes read a table of zeros until the
// thread has a cache, then the cache, never 0; objects of earlier versions
// read the cache's address, 0 until then, from the same state at 88
// (testdata/vt.c "probetable").
func TestProbeTable(t *testing.T) {
	r := runVT(t, nil, "probetable")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "P 0 0\n") {
		t.Errorf("vt probetable: %q, want \"P 0 0\" (bits: 1 the names differ, 2 no table or a cache before the first event, 4 the table is not zeros, 8 the probes do not read the cache)", r.stdout)
	}
}

// TestIntervalEpochs: the recent-page cache and the range memo forget
// every VPTRACE_INTERVAL_MS, so a page in use is recorded again in a later
// interval: two events each, where within one interval there would be one.
func TestIntervalEpochs(t *testing.T) {
	r := runVT(t, []string{"VPTRACE_INTERVAL_MS=20"}, "epochs")
	mustOK(t, r)
	want := expectations(t, r.stdout)
	compare(t, load(t, r.trace), want)
	for _, pages := range want {
		if len(pages) != 11 {
			t.Errorf("%d pages, want 11", len(pages))
		}
		for p, e := range pages {
			if e.events != 2 {
				t.Errorf("page %#x: the model expects %d events, want 2", p<<12, e.events)
			}
		}
	}
}

// TestBigTLS: a program with more static TLS than the clock thread's 64 KB
// stack (instrumented objects' slot arrays: zstd has 260 KB) still gets
// its clock thread (glibc puts the static TLS in every thread's stack, and
// pthread_create failed with EINVAL): without it the cache epoch never
// moved, and a page used in every interval was recorded in the first only
// (epochs: 11 events, want 22).
func TestBigTLS(t *testing.T) {
	needVT(t)
	bin := filepath.Join(t.TempDir(), "vt-bigtls")
	cmd := exec.Command("gcc", "-O1", "-g", "-Wall", "-I", libDir, "-o", bin,
		"testdata/vt.c", "testdata/sites.S", "testdata/regs.S", "testdata/bigtls.c",
		filepath.Join(libDir, "libvptrace.a"), "-lpthread")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	r := runVTBin(t, bin, []string{"VPTRACE_INTERVAL_MS=20"}, "epochs")
	mustOK(t, r)
	compare(t, load(t, r.trace), expectations(t, r.stdout))
}

// TestForkQuiet: fork children that record nothing (one execs, one
// exits) leave no trace file.
func TestForkQuiet(t *testing.T) {
	r := runVT(t, nil, "forkquiet")
	mustOK(t, r)
	compare(t, load(t, r.trace), expectations(t, r.stdout))
	ls, _ := filepath.Glob(r.trace + "*")
	if len(ls) != 1 {
		t.Errorf("files %v, want only the parent's", ls)
	}
}

func TestExitThread(t *testing.T) {
	r := runVT(t, nil, "exitthread")
	mustOK(t, r)
	tr := load(t, r.trace)
	want := expectations(t, r.stdout)
	if len(want) != 3 {
		t.Fatalf("%d threads, want 3", len(want))
	}
	compare(t, tr, want)
	checkClean(t, tr)
}

func TestStopStart(t *testing.T) {
	r := runVT(t, nil, "stopstart")
	mustOK(t, r)
	tr := load(t, r.trace)
	compare(t, tr, expectations(t, r.stdout))
	// (one OBJECT chunk per object and file: a library dlopen'ed again
	// where it was has its chunk there already)
	if tr.Chunks[trace.ChunkObject] != 1 || len(tr.Objects) != 1 {
		t.Errorf("register, repeat, unregister, register: %d object chunks, %d objects", tr.Chunks[trace.ChunkObject], len(tr.Objects))
	}
	var kinds []uint32
	for _, n := range tr.Notes {
		kinds = append(kinds, n.Kind)
	}
	if fmt.Sprint(kinds) != fmt.Sprint([]uint32{trace.NoteStop, trace.NoteStart, trace.NoteText}) || tr.Notes[2].Text != "phase two" {
		t.Errorf("notes %v", kinds)
	}

	r = runVT(t, []string{"VPTRACE_START=stopped"}, "startstopped")
	mustOK(t, r)
	tr = load(t, r.trace)
	compare(t, tr, expectations(t, r.stdout))
	if tr.Header.Flags&trace.HeaderStopped == 0 {
		t.Errorf("header flags %#x", tr.Header.Flags)
	}
}

func TestDisabled(t *testing.T) {
	r := runVT(t, []string{"VPTRACE=off"}, "basic", "2")
	mustOK(t, r)
	if _, err := os.Stat(r.trace); !os.IsNotExist(err) {
		t.Errorf("VPTRACE=off wrote %s (%v)", r.trace, err)
	}
}

// TestDefaultPath: without VPTRACE_OUT the trace is vptrace.<pid>.vpt.
func TestDefaultPath(t *testing.T) {
	needVT(t)
	dir := t.TempDir()
	cmd := exec.Command(vtBin, "stopstart")
	cmd.Dir = dir
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "VPTRACE") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := filepath.Join(dir, fmt.Sprintf("vptrace.%d.vpt", cmd.Process.Pid))
	if _, err := os.Stat(want); err != nil {
		ls, _ := os.ReadDir(dir)
		t.Fatalf("%v (dir: %v)", err, ls)
	}
}

// TestCrash: SIGKILL after a flush and a few streaming intervals: what was
// recorded before is in the file; the rest may be lost. Then the file is
// damaged at the end as if killed while writing a chunk.
func TestCrash(t *testing.T) {
	r := runVT(t, nil, "crash")
	if ws, ok := r.err.(*exec.ExitError); !ok || ws.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("vt crash: %v\n%s", r.err, r.stderr)
	}
	tr := load(t, r.trace)
	want := expectations(t, r.stdout)
	compareSubset(t, tr, want, 300)
	if tr.End != nil {
		t.Errorf("end chunk after SIGKILL")
	}
	// a half-written chunk at the end
	data, err := os.ReadFile(r.trace)
	if err != nil {
		t.Fatal(err)
	}
	half := trace.AppendChunk(nil, trace.ChunkRaw, make([]byte, 1000))
	damaged := filepath.Join(r.dir, "damaged.vpt")
	os.WriteFile(damaged, append(data, half[:500]...), 0o644)
	tr2 := load(t, damaged)
	if !tr2.Truncated {
		t.Errorf("truncated tail not reported")
	}
	compareSubset(t, tr2, want, 300)
}

// compareSubset: the expected pages are there with their counts; the
// thread may have up to `extra` more pages (recorded after the expectation
// was printed).
func compareSubset(t *testing.T, tr *trace.Trace, want map[uint32]map[uint64]exp, extra int) {
	t.Helper()
	for tid, pages := range want {
		th := tr.Thread(tid)
		if th == nil {
			t.Fatalf("thread %d missing", tid)
		}
		for page, e := range pages {
			p := th.Pages[page]
			if p == nil || p.Events != e.events || p.Reads != e.reads || p.Writes != e.writes {
				t.Errorf("thread %d page %#x: %+v, want %+v", tid, page<<12, p, e)
			}
		}
		if len(th.Pages) > len(pages)+extra {
			t.Errorf("thread %d: %d pages, want at most %d", tid, len(th.Pages), len(pages)+extra)
		}
	}
}

// TestQuickExit: _exit right after the events flushes them like exit
// (before, what was recorded since the last streaming interval was lost).
func TestQuickExit(t *testing.T) {
	r := runVT(t, nil, "quickexit")
	mustOK(t, r)
	tr := load(t, r.trace)
	compare(t, tr, expectations(t, r.stdout))
	checkClean(t, tr)
}

// pidName is the name a trace file takes when path is taken, or in a fork
// child of a process writing path (vptrace.h): t.vpt -> t.PID.vpt, or
// t.PID.N.vpt for n > 1.
func pidName(path string, pid int, n ...int) string {
	stem := strings.TrimSuffix(path, ".vpt")
	ext := path[len(stem):]
	name := fmt.Sprintf("%s.%d", stem, pid)
	for _, k := range n {
		name += fmt.Sprintf(".%d", k)
	}
	return name + ext
}

// traceFiles lists the trace files of a run.
func traceFiles(t *testing.T, dir string) []string {
	t.Helper()
	ls, err := filepath.Glob(filepath.Join(dir, "t*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(ls)
	return ls
}

// TestExec: an image that execs writes what it recorded to its file
// before it is replaced (an END flagged EXEC after a NOTE EXEC), and the
// image it becomes (the same pid, the same VPTRACE_OUT) writes a file of
// its own, t.PID.vpt, saying so once on stderr. Before, the new image
// truncated the old one's file. Every function of the exec family.
func TestExec(t *testing.T) {
	for _, how := range []string{"execve", "execv", "execl", "execle", "execveat", "fexecve", "execvp", "execvpe", "execlp"} {
		t.Run(how, func(t *testing.T) {
			r := runVT(t, nil, "exec", how)
			mustOK(t, r)
			first := load(t, r.trace)
			compare(t, first, expectations(t, r.stdout))
			if first.End == nil || first.End.Flags&trace.EndExec == 0 || first.Exec == "" {
				t.Errorf("the first image's end: %+v, exec %q; want an END flagged EXEC", first.End, first.Exec)
			}
			pid := int(first.Header.PID)
			next := pidName(r.trace, pid)
			if files := traceFiles(t, r.dir); len(files) != 2 || !slices.Contains(files, r.trace) || !slices.Contains(files, next) {
				t.Fatalf("files %v, want %s and %s", files, r.trace, next)
			}
			second := load(t, next)
			compare(t, second, expectTagged(t, r.stdout, "X"))
			checkClean(t, second)
			if second.Header.PID != first.Header.PID {
				t.Errorf("pids %d and %d: not an exec?", first.Header.PID, second.Header.PID)
			}
			if want := fmt.Sprintf("vptrace: %s exists; writing this trace to %s\n", r.trace, next); r.stderr != want {
				t.Errorf("stderr %q, want %q", r.stderr, want)
			}
		})
	}
}

// TestExecFailed: when an exec fails (execv of a missing file, execvp's
// search finding nothing) tracing goes on in the same file, which ends
// as if nothing happened, the failures noted.
func TestExecFailed(t *testing.T) {
	r := runVT(t, nil, "execfail")
	mustOK(t, r)
	tr := load(t, r.trace)
	compare(t, tr, expectations(t, r.stdout))
	checkClean(t, tr)
	if tr.End.Flags&trace.EndExec != 0 || tr.Exec != "" {
		t.Errorf("end %+v, exec %q: want a plain END", tr.End, tr.Exec)
	}
	var kinds []string
	for _, n := range tr.Notes {
		kinds = append(kinds, fmt.Sprintf("%d:%d", n.Kind, n.Value))
	}
	enoent := int(syscall.ENOENT)
	want := fmt.Sprintf("[%d:0 %d:%d %d:0 %d:%d]", trace.NoteExec, trace.NoteExecFailed, enoent, trace.NoteExec, trace.NoteExecFailed, enoent)
	if fmt.Sprint(kinds) != want {
		t.Errorf("notes (kind:value) %v, want %s", kinds, want)
	}
	if files := traceFiles(t, r.dir); len(files) != 1 || r.stderr != "" {
		t.Errorf("files %v, stderr %q", files, r.stderr)
	}
}

// TestForkThen: a fork child's events between the fork and its exec or
// _exit are in its file (before, they were lost), and with a fixed
// VPTRACE_OUT the program the child execs writes a file of its own
// (before, it truncated the parent's, and report merged the two
// processes' threads).
func TestForkThen(t *testing.T) {
	for _, how := range []string{"exec", "exit"} {
		t.Run(how, func(t *testing.T) {
			r := runVT(t, nil, "forkthen", how)
			mustOK(t, r)
			child, childPath := childLine(t, r.stdout)
			if want := pidName(r.trace, child); childPath != want {
				t.Errorf("child trace %q, want %q", childPath, want)
			}
			pt := load(t, r.trace)
			compare(t, pt, expectations(t, r.stdout))
			checkClean(t, pt)
			ct := load(t, childPath)
			compare(t, ct, expectTagged(t, r.stdout, "F"))
			wantFiles := []string{r.trace, childPath}
			if how == "exec" {
				if ct.End == nil || ct.End.Flags&trace.EndExec == 0 {
					t.Errorf("the child's end %+v, want EXEC", ct.End)
				}
				next := pidName(r.trace, child, 2)
				xt := load(t, next)
				compare(t, xt, expectTagged(t, r.stdout, "X"))
				checkClean(t, xt)
				wantFiles = append(wantFiles, next)
				if want := fmt.Sprintf("vptrace: %s exists; writing this trace to %s\n", r.trace, next); r.stderr != want {
					t.Errorf("stderr %q, want %q", r.stderr, want)
				}
			} else {
				checkClean(t, ct)
				if r.stderr != "" {
					t.Errorf("stderr %q", r.stderr)
				}
			}
			sort.Strings(wantFiles)
			if files := traceFiles(t, r.dir); fmt.Sprint(files) != fmt.Sprint(wantFiles) {
				t.Errorf("files %v, want %v", files, wantFiles)
			}
		})
	}
}

// TestInstrumented: a C program rewritten by hijack's vptrace preset (the
// real instrumentation, cmd/hijack) and linked with the runtime: every page
// its loops touch is in the trace, for the right thread, and nothing else.
// Skipped when the rewriter is not available or fails (that is tested in
// its own package); a wrong trace fails.
func TestInstrumented(t *testing.T) {
	needVT(t)
	dir := t.TempDir()
	hj := filepath.Join(dir, "hijack")
	if out, err := exec.Command("go", "build", "-o", hj, "hijack/cmd/hijack").CombinedOutput(); err != nil {
		t.Skipf("building hijack: %v\n%s", err, out)
	}
	obj, inst, bin := filepath.Join(dir, "prog.o"), filepath.Join(dir, "prog.inst.o"), filepath.Join(dir, "prog")
	if out, err := exec.Command("gcc", "-O2", "-c", "testdata/prog.c", "-o", obj).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	for _, mode := range []string{"default", "exact"} {
		args := []string{"--preset", "vptrace", obj, inst}
		if mode == "exact" {
			args = []string{"--preset", "vptrace", "--param", "exact=true", obj, inst}
		}
		if out, err := exec.Command(hj, args...).CombinedOutput(); err != nil {
			t.Skipf("hijack %v: %v\n%s", args, err, out)
		}
		if out, err := exec.Command("gcc", inst, filepath.Join(libDir, "libvptrace.a"), "-lpthread", "-o", bin).CombinedOutput(); err != nil {
			t.Fatalf("link: %v\n%s", err, out)
		}
		vpt := filepath.Join(dir, mode+".vpt")
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "VPTRACE_OUT="+vpt)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		tr := load(t, vpt)
		want := map[uint32]map[uint64]bool{}
		for _, l := range strings.Split(string(out), "\n") {
			f := strings.Fields(l)
			if len(f) != 4 || f[0] != "R" {
				continue
			}
			tid, _ := strconv.ParseUint(f[1], 10, 32)
			addr, _ := strconv.ParseUint(f[2], 16, 64)
			n, _ := strconv.ParseUint(f[3], 10, 64)
			if want[uint32(tid)] == nil {
				want[uint32(tid)] = map[uint64]bool{}
			}
			for p := addr >> 12; p <= (addr+n-1)>>12; p++ {
				want[uint32(tid)][p] = true
			}
		}
		if len(want) != 4 {
			t.Fatalf("%s: %d threads reported:\n%s", mode, len(want), out)
		}
		for tid, pages := range want {
			th := tr.Thread(tid)
			if th == nil {
				t.Errorf("%s: thread %d missing", mode, tid)
				continue
			}
			missing := 0
			for p := range pages {
				if th.Pages[p] == nil {
					missing++
				}
			}
			extra := 0
			for p := range th.Pages {
				if !pages[p] {
					extra++
				}
			}
			if missing != 0 || extra != 0 {
				t.Errorf("%s: thread %d: %d of %d pages missing, %d pages never touched", mode, tid, missing, len(pages), extra)
			}
			if th.Reads == 0 || th.Writes == 0 {
				t.Errorf("%s: thread %d: reads %d writes %d", mode, tid, th.Reads, th.Writes)
			}
		}
		if len(tr.Threads) != 4 {
			t.Errorf("%s: %d threads in the trace", mode, len(tr.Threads))
		}
	}
}

// TestRep: vpt_rep records every page of rep string ranges, vpt_range of
// sweeps, forwards and backwards, short (the assembly path) and long (C),
// across hand-offs.
func TestRep(t *testing.T) {
	for _, env := range [][]string{nil, {"VPTRACE_BUFKB=4"}, {"VPTRACE_RAW=1"}} {
		r := runVT(t, env, "rep")
		mustOK(t, r)
		tr := load(t, r.trace)
		compare(t, tr, expectations(t, r.stdout))
		for _, th := range tr.Threads {
			for _, p := range th.Pages {
				for _, sc := range p.Sites {
					if s := tr.Site(sc.Site); s.Kind&(trace.KindRepSrc|trace.KindRepDest|trace.KindRange) == 0 {
						t.Errorf("site %s kind %v", s.Where(), s.Kind)
					}
				}
			}
		}
	}
}

// TestRegisters: every vpt_slow_<reg> (and vpt_rep, vpt_range, vpt_vec)
// preserves every general register, the arithmetic flags and DF, ymm0-15,
// MXCSR and the x87 state, on the per-event path and on the batch path
// (first event of a thread, full buffers), and vpt_vec's fast path (the
// pages in the cache) as well as its full path; the events match vt.c's
// model.
func TestRegisters(t *testing.T) {
	for _, env := range [][]string{{noEpochs}, {noEpochs, "VPTRACE_BUFKB=4"}, {noEpochs, "VPTRACE_RAW=1", "VPTRACE_BUFKB=4"}} {
		r := runVT(t, env, "regs")
		if strings.Contains(r.stdout, "SKIP") {
			t.Skip(r.stdout)
		}
		mustOK(t, r)
		tr := load(t, r.trace)
		want := expectations(t, r.stdout)
		if len(want) != 21 {
			t.Errorf("%d threads, want 21", len(want))
		}
		compare(t, tr, want)
	}
}

// needValgrind skips a test that runs vt under valgrind in -short mode or
// without valgrind.
func needValgrind(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("short")
	}
	needVT(t)
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("no valgrind")
	}
}

// valgrindSupps are the suppressions vt runs under valgrind with: the
// runtime's own (vptrace.supp, installed for users) and the test's.
var valgrindSupps = []string{"--suppressions=vptrace.supp", "--suppressions=testdata/valgrind.supp"}

// TestValgrind runs the program under memcheck: no errors from the
// runtime's C code; leaks only from the Go runtime (see FORMAT.md notes).
func TestValgrind(t *testing.T) {
	needValgrind(t)
	for _, sc := range [][]string{{"basic", "2"}, {"churn", "50", "10"}, {"fork"}, {"rep"}, {"forkthen", "exec"}} {
		dir := t.TempDir()
		// --fair-sched: valgrind runs one thread at a time, and its
		// default lock lets a spinning thread take it again and again: the
		// Go runtime's spins (a goroutine waiting for the GC's scan of
		// it) then stalled the aggregator for minutes, one run in three
		// (its exit flush timed out: events lost).
		args := append([]string{"--fair-sched=yes", "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite"}, valgrindSupps...)
		args = append(append(args, "--trace-children=yes", "-q", vtBin), sc...)
		cmd := exec.Command("valgrind", args...)
		// The exit wait is long: valgrind is slow, and this test is about
		// memory errors and exact pages (the time out: TestExitTimeoutLost).
		cmd.Env = append(os.Environ(), "VPTRACE_OUT="+filepath.Join(dir, "v.vpt"), "VPTRACE_EXIT_TIMEOUT_MS=600000")
		var se bytes.Buffer
		cmd.Stderr = &se
		cmd.Stdout = new(bytes.Buffer)
		if err := cmd.Run(); err != nil {
			t.Errorf("valgrind vt %v: %v\n%s", sc, err, tailStr(se.String(), 6000))
			continue
		}
		tr := load(t, filepath.Join(dir, "v.vpt"))
		compare(t, tr, expectations(t, cmd.Stdout.(*bytes.Buffer).String()))
	}
}

// TestExitTimeoutLost runs programs whose aggregator cannot answer the exit
// flush in time (VPTRACE_EXIT_TIMEOUT_MS=0; no interval write before it)
// while it holds aggregated events: the END must say how many are missing
// (flag LOST), stderr too, and they must be exactly what the file lacks:
// every page's counts at most the program's own, and the file's events
// plus the lost ones the program's total.
func TestExitTimeoutLost(t *testing.T) {
	env := []string{"VPTRACE_EXIT_TIMEOUT_MS=0", "VPTRACE_INTERVAL_MS=3600000"}
	lostRuns := 0
	scenarios := [][]string{{"basic", "2"}, {"basic", "3"}, {"churn", "200", "20"}, {"flushwait"}}
	for i := 0; i < len(scenarios); i++ {
		sc := scenarios[i]
		if i == len(scenarios)-1 && lostRuns == 0 && len(scenarios) < 10 {
			// on a loaded machine the aggregator may not have taken
			// anything by the exit: run a threaded one again
			scenarios = append(scenarios, []string{"basic", "2"})
		}
		r := runVT(t, env, sc...)
		if r.err != nil {
			t.Fatalf("vt %v: %v\n%s", sc, r.err, r.stderr)
		}
		// (with the shared runtime the flush may come before the Go half
		// is loaded: the C half writes everything then, and says 0)
		flushLate := strings.Contains(r.stdout, "F 1\n")
		shared := vtBin == vtSOBin
		if sc[0] == "flushwait" && !flushLate && !shared {
			t.Errorf("vptrace_flush did not say that the aggregator did not answer:\n%s", r.stdout)
		}
		tr := load(t, r.trace)
		want := expectations(t, r.stdout)
		var wantTotal, got uint64
		for tid, pages := range want {
			th := tr.Thread(tid)
			for page, e := range pages {
				wantTotal += e.events
				if th == nil || th.Pages[page] == nil {
					continue
				}
				if p := th.Pages[page]; p.Events > e.events || p.Reads > e.reads || p.Writes > e.writes {
					t.Errorf("vt %v: thread %d page %#x: %d/%d/%d, more than the program's %d/%d/%d",
						sc, tid, page<<12, p.Events, p.Reads, p.Writes, e.events, e.reads, e.writes)
				}
			}
		}
		for _, th := range tr.Threads {
			for _, p := range th.Pages {
				got += p.Events
			}
		}
		if tr.End == nil {
			t.Fatalf("vt %v: no END", sc)
		}
		if sc[0] == "flushwait" && flushLate && !slices.ContainsFunc(tr.Notes, func(n *trace.Note) bool {
			return n.Kind == trace.NoteWarning && strings.HasPrefix(n.Text, "vptrace_flush: the aggregator did not answer")
		}) {
			t.Errorf("vt %v: no warning note of the late flush", sc)
		}
		lost := tr.End.Lost
		t.Logf("vt %v: %d events in the file, %d lost, %d recorded; END flags %#x", sc, got, lost, wantTotal, tr.End.Flags)
		if got+lost != wantTotal {
			t.Errorf("vt %v: %d events in the file + %d lost != %d recorded", sc, got, lost, wantTotal)
		}
		if strings.Contains(r.stderr, "under valgrind") {
			t.Errorf("vt %v: the runtime thinks it runs under valgrind:\n%s", sc, r.stderr)
		}
		said := strings.Contains(r.stderr, "events it held are missing from "+r.trace)
		if lost > 0 {
			lostRuns++
			if tr.End.Flags&(trace.EndLost|trace.EndFallback) != trace.EndLost|trace.EndFallback {
				t.Errorf("vt %v: END flags %#x, want LOST and FALLBACK", sc, tr.End.Flags)
			}
			if !said || !strings.Contains(r.stderr, fmt.Sprintf(": %d events", lost)) {
				t.Errorf("vt %v: stderr does not say %d events are missing:\n%s", sc, lost, r.stderr)
			}
		} else if said || tr.End.Flags&trace.EndLost != 0 {
			t.Errorf("vt %v: a loss said (flags %#x) with none counted:\n%s", sc, tr.End.Flags, r.stderr)
		}
	}
	if lostRuns == 0 {
		t.Errorf("no run of %d lost events: the aggregator held nothing at exit every time (the test exercised nothing)", len(scenarios))
	}
	// given the time, the flush is answered (0) and nothing is lost
	r := runVT(t, nil, "flushwait")
	if r.err != nil || !strings.Contains(r.stdout, "F 0\n") {
		t.Fatalf("flushwait: %v, stdout %q\n%s", r.err, r.stdout, r.stderr)
	}
	compare(t, load(t, r.trace), expectations(t, r.stdout))
}

// TestValgrindHint: under valgrind, the message of an exit flush that timed
// out says to pass --fair-sched=yes (valgrind's RUNNING_ON_VALGRIND
// request; TestExitTimeoutLost checks that it is not said natively).
func TestValgrindHint(t *testing.T) {
	needValgrind(t)
	dir := t.TempDir()
	args := append([]string{"-q", "--fair-sched=yes"}, valgrindSupps...)
	cmd := exec.Command("valgrind", append(args, vtBin, "basic", "2")...)
	cmd.Env = append(os.Environ(), "VPTRACE_OUT="+filepath.Join(dir, "v.vpt"), "VPTRACE_EXIT_TIMEOUT_MS=0", "VPTRACE_INTERVAL_MS=3600000")
	var se bytes.Buffer
	cmd.Stderr, cmd.Stdout = &se, new(bytes.Buffer)
	if err := cmd.Run(); err != nil {
		t.Fatalf("valgrind vt basic 2: %v\n%s", err, tailStr(se.String(), 4000))
	}
	if tr := load(t, filepath.Join(dir, "v.vpt")); tr.End == nil || tr.End.Lost == 0 {
		t.Skipf("the aggregator held nothing at exit (END %+v): no message to check", tr.End)
	}
	if !strings.Contains(se.String(), "events it held are missing") || !strings.Contains(se.String(), "under valgrind, run with --fair-sched=yes") {
		t.Errorf("stderr lacks the valgrind hint:\n%s", se.String())
	}
}

func tailStr(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// BenchmarkStub runs the test program's benchmark scenarios 5 times each
// and reports medians (go test -run XXX -bench Stub -benchtime 1x):
//
//	hot_event_ns        one slow-path event, the stub alone (buffer has room)
//	event_ns            one slow-path event sustained: an exact-mode site in a
//	                    tight loop, 10M events, hand-offs and aggregation included
//	fastpath_ns         the inline fast path when the slot matches (no call)
//	cached_ns           a stub call that finds the page in the recent-page
//	                    cache (a default-mode site moving over 64 pages)
//	stopped_event_ns    a slow-path call while tracing is stopped
//	handoff_ns, _p90_ns the event that finds its buffer full and hands it over
//	raw_handoff_ns      the same when the thread writes its buffer itself (VPTRACE_RAW)
//	tp_end2end_Mev/s    2 threads, 10M events each, until vptrace_flush returns
func BenchmarkStub(b *testing.B) {
	if buildErr != nil {
		b.Skip(buildErr)
	}
	metrics := map[string][]float64{}
	runs := []struct {
		prefix string
		env    []string
		args   []string
		keep   map[string]bool
	}{
		{"", []string{"VPTRACE_BUFKB=4096"}, []string{"hot", "300"}, nil},
		{"", nil, []string{"bench", "10000000"}, map[string]bool{"event_ns": true, "fastpath_ns": true, "cached_ns": true}},
		{"stopped_", []string{"VPTRACE_START=stopped"}, []string{"bench", "10000000"}, map[string]bool{"event_ns": true}},
		{"", nil, []string{"handoffs", "200"}, map[string]bool{"handoff_ns": true, "handoff_p90_ns": true}},
		{"raw_", []string{"VPTRACE_RAW=1"}, []string{"handoffs", "100"}, map[string]bool{"handoff_ns": true}},
		{"", nil, []string{"throughput", "2", "10000000"}, nil},
	}
	for _, r := range runs {
		for i := 0; i < 5; i++ {
			dir := b.TempDir()
			cmd := exec.Command(vtBin, r.args...)
			cmd.Env = append(append(os.Environ(), "VPTRACE_OUT="+filepath.Join(dir, "b.vpt")), r.env...)
			out, err := cmd.Output()
			if err != nil {
				b.Fatal(err)
			}
			vals := map[string]float64{}
			for _, l := range strings.Split(string(out), "\n") {
				if f := strings.Fields(l); len(f) == 3 && f[0] == "B" {
					v, _ := strconv.ParseFloat(f[2], 64)
					vals[f[1]] = v
				}
			}
			if ev, ok := vals["tp_events"]; ok {
				metrics["tp_end2end_Mev/s"] = append(metrics["tp_end2end_Mev/s"], ev/vals["tp_total_s"]/1e6)
				continue
			}
			for k, v := range vals {
				if r.keep == nil || r.keep[k] {
					metrics[r.prefix+k] = append(metrics[r.prefix+k], v)
				}
			}
		}
	}
	names := make([]string, 0, len(metrics))
	for k := range metrics {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		b.ReportMetric(median(metrics[k]), k)
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// TestNaming: the runtime never opens an existing file (vptrace.h, "Trace
// file names"): when the name is taken the trace goes to the first free
// one of STEM.PID.vpt, STEM.PID.2.vpt, ... (STEM.2.vpt, ... when the name
// has %p), said once on stderr (without %p: with it a taken name is pid
// reuse and said only in the trace), and what was there is left as it was. An
// existing device is written into; a directory turns tracing off.
func TestNaming(t *testing.T) {
	needVT(t)
	for _, c := range []struct {
		name  string
		out   string // VPTRACE_OUT, in the run's directory
		setup string // shell commands run there first; $$ is the traced process's pid
		want  string // the trace file, "" for none
		msg   string // stderr; <dir> is the directory
	}{
		{"free", "t.vpt", "", "t.vpt", ""},
		{"taken", "t.vpt", "echo old >t.vpt", "t.$$.vpt", "vptrace: <dir>/t.vpt exists; writing this trace to <dir>/t.$$.vpt\n"},
		{"taken twice", "t.vpt", "echo old >t.vpt; echo old >t.$$.vpt", "t.$$.2.vpt", "vptrace: <dir>/t.vpt exists; writing this trace to <dir>/t.$$.2.vpt\n"},
		// With %p a taken name is pid reuse or an exec: silent on
		// stderr (a suite's tests compare it), said in the trace.
		{"pid taken", "t.%p.vpt", "echo old >t.$$.vpt", "t.$$.2.vpt", ""},
		{"no extension", "out", "echo old >out", "out.$$", "vptrace: <dir>/out exists; writing this trace to <dir>/out.$$\n"},
		{"dangling symlink", "t.vpt", "ln -s nowhere/x t.vpt", "t.$$.vpt", "vptrace: <dir>/t.vpt exists; writing this trace to <dir>/t.$$.vpt\n"},
		{"directory", "d", "mkdir d", "", "vptrace: cannot create trace file <dir>/d: Is a directory (EISDIR); tracing is off (set VPTRACE_OUT)\n"},
		{"device", "null", "mknod null c 1 3 || exit 99", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("sh", "-c", c.setup+"\nexec \"$0\" stopstart", vtBin)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "VPTRACE_OUT="+c.out)
			var so, se bytes.Buffer
			cmd.Stdout, cmd.Stderr = &so, &se
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 99 {
				t.Skipf("mknod: %s", se.String())
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, se.String())
			}
			pid := strconv.Itoa(cmd.Process.Pid)
			msg := strings.NewReplacer("<dir>", dir, "$$", pid).Replace(c.msg)
			if se.String() != msg {
				t.Errorf("stderr %q, want %q", se.String(), msg)
			}
			before := map[string]bool{}
			for _, f := range strings.Fields(strings.NewReplacer(";", " ", ">", " ").Replace(c.setup)) {
				before[strings.ReplaceAll(f, "$$", pid)] = true
			}
			want := strings.ReplaceAll(c.want, "$$", pid)
			ls, _ := os.ReadDir(dir)
			for _, e := range ls {
				switch {
				case e.Name() == want:
					tr := load(t, filepath.Join(dir, want))
					compare(t, tr, expectations(t, so.String()))
					checkClean(t, tr)
				case !before[e.Name()]:
					t.Errorf("%s written, want %q", e.Name(), want)
				case e.Type().IsRegular():
					if data, _ := os.ReadFile(filepath.Join(dir, e.Name())); string(data) != "old\n" {
						t.Errorf("%s was overwritten: %.40q", e.Name(), data)
					}
				}
			}
			if want != "" {
				if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
					t.Errorf("no trace: %v", err)
				}
			}
		})
	}
}

// TestTraceDir: the directories of VPTRACE_OUT that do not exist are
// created first, as mkdir -p would (mode 0777 less the umask), so that a
// test suite's processes can share VPTRACE_OUT=dir/%p.vpt; existing ones
// are left as they are, and a path that cannot be a directory turns
// tracing off with the open's error.
func TestTraceDir(t *testing.T) {
	needVT(t)
	for _, c := range []struct {
		name  string
		out   string // VPTRACE_OUT, in the run's directory; %p the pid
		setup string // shell commands run there first
		umask int
		dirs  []string // created, with mode 0777 &^ umask
		want  string   // the trace file, "" for none
		msg   string   // stderr; <dir> is the directory
	}{
		{"one level", "traces/%p.vpt", "", 0o022, []string{"traces"}, "traces/$$.vpt", ""},
		{"nested", "a/b/c/t.vpt", "", 0o077, []string{"a", "a/b", "a/b/c"}, "a/b/c/t.vpt", ""},
		{"partly there", "a/b/t.vpt", "mkdir -m 0711 a", 0o002, []string{"a/b"}, "a/b/t.vpt", ""},
		{"there", "a/t.vpt", "mkdir -m 0700 a", 0o022, nil, "a/t.vpt", ""},
		{"file in the way", "f/t.vpt", "echo old >f", 0o022, nil, "",
			"vptrace: cannot create trace file <dir>/f/t.vpt: Not a directory (ENOTDIR); tracing is off (set VPTRACE_OUT)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("sh", "-c", fmt.Sprintf("%s\numask %03o; exec \"$0\" stopstart", c.setup, c.umask), vtBin)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "VPTRACE_OUT="+c.out)
			var so, se bytes.Buffer
			cmd.Stdout, cmd.Stderr = &so, &se
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s", err, se.String())
			}
			pid := strconv.Itoa(cmd.Process.Pid)
			if msg := strings.ReplaceAll(c.msg, "<dir>", dir); se.String() != msg {
				t.Errorf("stderr %q, want %q", se.String(), msg)
			}
			for _, d := range c.dirs {
				fi, err := os.Stat(filepath.Join(dir, d))
				if err != nil {
					t.Errorf("%s: %v", d, err)
					continue
				}
				if want := os.FileMode(0o777 &^ c.umask); !fi.IsDir() || fi.Mode().Perm() != want {
					t.Errorf("%s: mode %v, want a directory with %v", d, fi.Mode(), want)
				}
			}
			if c.want == "" {
				return
			}
			tr := load(t, filepath.Join(dir, strings.ReplaceAll(c.want, "$$", pid)))
			compare(t, tr, expectations(t, so.String()))
			checkClean(t, tr)
		})
	}
}

// TestPackedSiteTable: an object hijack rewrote carries its site table
// compressed (abi.FlagPacked), which the runtime writes as it is, after a
// stored block with the chunk's header, instead of compressing the table
// at every start. The OBJECT chunk so written must read back as the one
// written uncompressed (VPTRACE_COMPRESS=0): the same sites and strings.
func TestPackedSiteTable(t *testing.T) {
	needVT(t)
	dir := t.TempDir()
	hj := filepath.Join(dir, "hijack")
	if out, err := exec.Command("go", "build", "-o", hj, "hijack/cmd/hijack").CombinedOutput(); err != nil {
		t.Skipf("building hijack: %v\n%s", err, out)
	}
	// A table worth compressing: 60 functions, each with its accesses.
	var src strings.Builder
	src.WriteString("#include <stdio.h>\nint tab[4096];\n")
	for k := 0; k < 60; k++ {
		fmt.Fprintf(&src, "__attribute__((noinline)) int f%d(int i) { tab[i + %d] += i; return tab[i * %d %% 4000]; }\n", k, k, k+1)
	}
	src.WriteString("int main(void) { int s = 0;\n")
	for k := 0; k < 60; k++ {
		fmt.Fprintf(&src, "\ts += f%d(%d);\n", k, k*7)
	}
	src.WriteString("\tprintf(\"%d\\n\", s); return 0; }\n")
	c := filepath.Join(dir, "many.c")
	if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	obj, inst, bin := filepath.Join(dir, "many.o"), filepath.Join(dir, "many.inst.o"), filepath.Join(dir, "many")
	if out, err := exec.Command("gcc", "-O2", "-c", c, "-o", obj).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if out, err := exec.Command(hj, "--preset", "vptrace", obj, inst).CombinedOutput(); err != nil {
		t.Fatalf("hijack: %v\n%s", err, out)
	}
	if out, err := exec.Command("gcc", inst, filepath.Join(libDir, "libvptrace.a"), "-lpthread", "-o", bin).CombinedOutput(); err != nil {
		t.Fatalf("link: %v\n%s", err, out)
	}
	objects := func(env ...string) ([]*trace.Object, map[trace.ChunkType]int) {
		vpt := filepath.Join(dir, fmt.Sprintf("t%d.vpt", len(env)))
		cmd := exec.Command(bin)
		cmd.Env = append(append(os.Environ(), "VPTRACE_OUT="+vpt), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", env, err, out)
		}
		return load(t, vpt).Objects, packedChunks(t, vpt)
	}
	got, packed := objects()
	want, plain := objects("VPTRACE_COMPRESS=0")
	if packed[trace.ChunkObject] != 1 || plain[trace.ChunkObject] != 0 {
		t.Fatalf("compressed OBJECT chunks: %d with compression, %d without; want 1 and 0", packed[trace.ChunkObject], plain[trace.ChunkObject])
	}
	if len(got) != 1 || len(want) != 1 {
		t.Fatalf("objects: %d and %d, want 1", len(got), len(want))
	}
	g, w := got[0], want[0]
	if g.Flags&uint32(abi.FlagPacked) == 0 {
		t.Errorf("descriptor flags %#x: not packed (hijack did not compress the table?)", g.Flags)
	}
	if len(g.Sites) < 10 || !reflect.DeepEqual(g.Sites, w.Sites) || !bytes.Equal(g.Strs, w.Strs) || g.Name() != w.Name() || g.ID != w.ID {
		t.Errorf("packed OBJECT chunk: %d sites, %d bytes of strings, %q; written as it is: %d sites, %d bytes, %q",
			len(g.Sites), len(g.Strs), g.Name(), len(w.Sites), len(w.Strs), w.Name())
	}
}

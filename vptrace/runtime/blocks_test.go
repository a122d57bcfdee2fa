package main

// Tests of the blockcount side of the runtime with real programs, no
// preset needed: testdata/bc.S and bclib.S are blockcount objects written
// by hand as ABI.md says (a descriptor with an R_X86_64_TPOFF64, one whose
// constructor stores its tpoff, one in a dlopen'ed library), bc.c drives
// them in threads, fork children and dlopen/dlclose and prints the counts
// it expects; the tests read the traces with package trace and compare
// them exactly, per process and thread, against the shared runtime (PIE
// and non-PIE programs) and the archive (-static).

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hijack/vptrace/trace"
)

// bcBuild is a way to build bc.
type bcBuild struct {
	name   string
	static bool // libvptrace.a: no dlopen, libc's own _exit
	args   []string
}

var bcBuilds = []bcBuild{
	{"pie", false, []string{"-pie", "-fPIE"}},
	{"nopie", false, []string{"-no-pie"}},
	{"static", true, []string{"-static"}},
}

var (
	bcOnce sync.Once
	bcErr  error
	bcLib  string // libbc.so
)

func bcBin(b bcBuild) string { return filepath.Join(libDir, "bc-"+b.name) }

// buildBC builds bc every way, and libbc.so, once.
func buildBC(t *testing.T) {
	t.Helper()
	needVT(t)
	bcOnce.Do(func() {
		bcLib = filepath.Join(libDir, "libbc.so")
		dyn := []string{"-L", libDir, "-lvptrace", "-Wl,-rpath," + libDir}
		cmds := [][]string{append([]string{"-shared", "-o", bcLib, "testdata/bclib.S"}, dyn...)}
		for _, b := range bcBuilds {
			args := append(append([]string{"-O1", "-g", "-Wall", "-I", libDir}, b.args...),
				"-o", bcBin(b), "testdata/bc.c", "testdata/bc.S")
			if b.static {
				args = append(args, filepath.Join(libDir, "libvptrace.a"), "-lpthread")
			} else {
				args = append(append(args, dyn...), "-lpthread", "-ldl")
			}
			cmds = append(cmds, args)
		}
		for _, args := range cmds {
			if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
				bcErr = fmt.Errorf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
				return
			}
		}
	})
	if bcErr != nil {
		t.Fatal(bcErr)
	}
}

// runBC runs a bc build with VPTRACE_OUT in a fresh directory.
func runBC(t *testing.T, b bcBuild, env []string, args ...string) *run {
	t.Helper()
	buildBC(t)
	dir := t.TempDir()
	r := &run{dir: dir, trace: filepath.Join(dir, "t.vpt")}
	cmd := exec.Command(bcBin(b), args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "VPTRACE_OUT="+r.trace), env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case r.err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("bc %v: timed out\n%s", args, se.String())
	}
	r.stdout, r.stderr = so.String(), se.String()
	if r.err != nil {
		t.Fatalf("bc-%s %v: %v\nstdout:\n%s\nstderr:\n%s", b.name, args, r.err, r.stdout, r.stderr)
	}
	return r
}

// blockWant is what a process's trace must hold: per TID, per block
// ("function+0xOFF"), the executions.
type blockWant map[uint32]map[string]uint64

// blockExpectations parses bc's "E pid tid function offset count" lines
// into each process's blockWant, summing the lines of a thread.
func blockExpectations(t *testing.T, out string) map[int]blockWant {
	t.Helper()
	m := map[int]blockWant{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 6 || f[0] != "E" {
			continue
		}
		pid, err1 := strconv.Atoi(f[1])
		tid, err2 := strconv.ParseUint(f[2], 10, 32)
		off, err3 := strconv.ParseUint(f[4], 0, 32)
		n, err4 := strconv.ParseUint(f[5], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		if m[pid] == nil {
			m[pid] = blockWant{}
		}
		if m[pid][uint32(tid)] == nil {
			m[pid][uint32(tid)] = map[string]uint64{}
		}
		m[pid][uint32(tid)][fmt.Sprintf("%s+%#x", f[3], off)] += n
	}
	return m
}

// compareBlocks checks a trace's block counts against want exactly: the
// same threads with counts, the same blocks, the same numbers.
func compareBlocks(t *testing.T, tr *trace.Trace, want blockWant) {
	t.Helper()
	got := blockWant{}
	for _, th := range tr.Threads {
		for id, n := range th.Blocks {
			b := tr.Block(id)
			if !b.Known() {
				t.Errorf("%s: thread %d: block %s of no object", tr.Path, th.TID, b.Where())
			}
			if got[th.TID] == nil {
				got[th.TID] = map[string]uint64{}
			}
			got[th.TID][b.Where()] += n
		}
	}
	for tid, w := range want {
		for blk, n := range w {
			if g := got[tid][blk]; g != n {
				t.Errorf("%s: thread %d: %s counted %d, want %d", tr.Path, tid, blk, g, n)
			}
		}
		for blk, n := range got[tid] {
			if _, ok := w[blk]; !ok {
				t.Errorf("%s: thread %d: %s counted %d, never run", tr.Path, tid, blk, n)
			}
		}
	}
	for tid, g := range got {
		if _, ok := want[tid]; !ok {
			t.Errorf("%s: thread %d has counts %v, expected none", tr.Path, tid, g)
		}
	}
}

// checkBlockObjects: the trace names the objects, their blocks with the
// descriptor's loop depths and scores.
func checkBlockObjects(t *testing.T, tr *trace.Trace, names ...string) {
	t.Helper()
	seen := map[string]bool{}
	for _, o := range tr.BlockObjects {
		seen[o.Name()] = true
		if o.Name() == "bc-a.o" {
			b := o.Blocks[1]
			if len(o.Blocks) != 3 || o.Str(b.Func) != "work" || b.Off != 0x12 || b.LoopDepth != 1 || b.Score != 2500000 || b.Insns != 2 || o.ID != 0xa11a {
				t.Errorf("%s: bc-a.o: %+v", tr.Path, o)
			}
		}
	}
	for _, n := range names {
		if !seen[n] {
			t.Errorf("%s: no BLOCKS chunk for %s", tr.Path, n)
		}
	}
}

// TestBlocksThreads: threads that exit (one of them counting again in a
// TLS destructor that runs after the runtime's), one still running at
// exit, the main thread; an object whose constructor stores its tpoff,
// run before that constructor.
func TestBlocksThreads(t *testing.T) {
	for _, b := range bcBuilds {
		t.Run(b.name, func(t *testing.T) {
			r := runBC(t, b, nil, "threads")
			want := blockExpectations(t, r.stdout)
			tr := load(t, r.trace)
			checkClean(t, tr)
			if len(want) != 1 || len(want[int(tr.Header.PID)]) != 5 {
				t.Fatalf("want %d processes, %d threads; bc said:\n%s", len(want), len(want[int(tr.Header.PID)]), r.stdout)
			}
			compareBlocks(t, tr, want[int(tr.Header.PID)])
			checkBlockObjects(t, tr, "bc-a.o", "bc-b.o")
			if len(tr.Objects) != 0 {
				t.Errorf("%d vptrace objects in a blockcount-only trace", len(tr.Objects))
			}
		})
	}
}

// TestBlocksFork: a fork child's trace counts what the child ran after
// fork returned, the parent's what the parent ran, before and after; a
// child that ends with _exit too (not in a static program: libc's own
// _exit wins there, ABI.md).
func TestBlocksFork(t *testing.T) {
	for _, b := range bcBuilds {
		t.Run(b.name, func(t *testing.T) {
			args := []string{"fork", "_exit"}
			if b.static {
				args = args[:1]
			}
			r := runBC(t, b, nil, args...)
			want := blockExpectations(t, r.stdout)
			if len(want) != len(args)+1 {
				t.Fatalf("%d processes, want %d:\n%s", len(want), len(args)+1, r.stdout)
			}
			parent := load(t, r.trace)
			checkClean(t, parent)
			for pid, w := range want {
				tr := parent
				if pid != int(parent.Header.PID) {
					tr = load(t, pidName(r.trace, pid))
					if tr.Header.Flags&trace.HeaderForked == 0 || tr.Header.PPID != parent.Header.PID {
						t.Errorf("child %d: header %+v", pid, tr.Header)
					}
					checkClean(t, tr)
					checkBlockObjects(t, tr, "bc-a.o")
				}
				compareBlocks(t, tr, w)
			}
		})
	}
}

// TestBlocksRegisters: vpt_blocks_thread keeps every general register,
// the flags (DF too) and xmm0-15, whatever the stack's alignment, and
// sets word 0.
func TestBlocksRegisters(t *testing.T) {
	for _, b := range bcBuilds {
		t.Run(b.name, func(t *testing.T) {
			r := runBC(t, b, nil, "regs")
			if n := strings.Count(r.stdout, "R "); n != 8 {
				t.Fatalf("%d checks, want 8:\n%s", n, r.stdout)
			}
			for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				if !strings.HasSuffix(l, " ok") {
					t.Errorf("%s", l)
				}
			}
			compareBlocks(t, load(t, r.trace), nil)
		})
	}
}

// TestBlocksDlopen: a library's counts are written when dlclose unloads
// it (for a thread still running too), and again for its next load;
// threads count in both.
func TestBlocksDlopen(t *testing.T) {
	for _, b := range bcBuilds {
		if b.static {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			r := runBC(t, b, nil, "dlopen", bcLib)
			if !strings.Contains(r.stdout, "U 1\n") {
				t.Errorf("libbc.so not unloaded by dlclose:\n%s", r.stdout)
			}
			want := blockExpectations(t, r.stdout)
			tr := load(t, r.trace)
			checkClean(t, tr)
			if w := want[int(tr.Header.PID)]; len(w) != 3 {
				t.Fatalf("%d threads, want 3:\n%s", len(w), r.stdout)
			}
			compareBlocks(t, tr, want[int(tr.Header.PID)])
			n := 0
			for _, o := range tr.BlockObjects {
				if o.Name() == "libbc.o" {
					n++
					if o.TPOff == 0 || len(o.Blocks) != 2 || o.Str(o.Blocks[1].Func) != "libwork" {
						t.Errorf("libbc.o: %+v", o)
					}
				}
			}
			if n != 2 {
				t.Errorf("libbc.o registered %d times, want 2", n)
			}
		})
	}
}

// TestBlocksExec: an image's counts are written before it execs.
func TestBlocksExec(t *testing.T) {
	for _, b := range bcBuilds {
		t.Run(b.name, func(t *testing.T) {
			r := runBC(t, b, nil, "exec")
			want := blockExpectations(t, r.stdout)
			tr := load(t, r.trace)
			if tr.End == nil || tr.End.Flags&trace.EndExec == 0 {
				t.Errorf("end %+v: want an END flagged EXEC", tr.End)
			}
			compareBlocks(t, tr, want[int(tr.Header.PID)])
			if len(want) != 1 || len(want[int(tr.Header.PID)]) != 1 {
				t.Errorf("want %v", want)
			}
			next := load(t, pidName(r.trace, int(tr.Header.PID)))
			compareBlocks(t, next, nil)
		})
	}
}

// TestBlocksChurn: threads registering, counting and exiting in waves (the
// kernel reuses their TIDs) while another thread writes everyone's counts
// (vptrace_flush) again and again: every count exact.
func TestBlocksChurn(t *testing.T) {
	for _, b := range bcBuilds {
		t.Run(b.name, func(t *testing.T) {
			r := runBC(t, b, nil, "churn")
			want := blockExpectations(t, r.stdout)
			tr := load(t, r.trace)
			checkClean(t, tr)
			if strings.Count(r.stdout, "E ") < 12*16*3 {
				t.Fatalf("bc said:\n%s", r.stdout)
			}
			compareBlocks(t, tr, want[int(tr.Header.PID)])
		})
	}
}

// TestBlocksOff: with tracing off there is no file, and the program runs.
func TestBlocksOff(t *testing.T) {
	r := runBC(t, bcBuilds[0], []string{"VPTRACE=off"}, "threads")
	if _, err := os.Stat(r.trace); !os.IsNotExist(err) {
		t.Errorf("VPTRACE=off wrote %s (%v)", r.trace, err)
	}
}

package main

// Tests of allocation tracking (rt_alloc.c, rt_maps.c; FORMAT.md format
// 1.3): testdata/allocs.c and allocs_cxx.cc call every allocator from
// functions of their own and print the events they expect (allocs.c
// says how); the tests compare them with the ALLOCS chunks exactly, and
// check each event's site against the calling function's extent in the
// program's symbol table.

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hijack/vptrace/trace"
)

// An allocation program, built once per variant.
type allocProg struct {
	once sync.Once
	path string
	err  error
}

var allocProgs sync.Map // name -> *allocProg

// allocBin builds a test program: src (testdata) linked with sites.S and
// the runtime as the variant says: "so" libvptrace.so, "archive"
// libvptrace.a in a dynamic link, "static" libvptrace.a in a -static one.
func allocBin(t *testing.T, src, variant string) string {
	t.Helper()
	needVT(t)
	v, _ := allocProgs.LoadOrStore(src+"/"+variant, &allocProg{})
	p := v.(*allocProg)
	p.once.Do(func() {
		cc := "gcc"
		if strings.HasSuffix(src, ".cc") {
			cc = "g++"
		}
		if _, err := exec.LookPath(cc); err != nil {
			p.err = err
			return
		}
		p.path = filepath.Join(libDir, strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))+"-"+variant)
		args := []string{"-O1", "-g", "-Wall", "-I", libDir, "-o", p.path, filepath.Join("testdata", src)}
		if cc == "gcc" {
			args = append(args, "testdata/sites.S")
		}
		switch variant {
		case "so":
			args = append(args, "-L", libDir, "-lvptrace", "-Wl,-rpath,"+libDir)
		case "archive":
			args = append(args, filepath.Join(libDir, "libvptrace.a"))
		case "static":
			args = append([]string{"-static"}, args...)
			args = append(args, filepath.Join(libDir, "libvptrace.a"))
		}
		args = append(args, "-lpthread", "-ldl")
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			p.err = fmt.Errorf("%s: %v\n%s", cc, err, out)
		}
	})
	if p.err != nil {
		if _, ok := p.err.(*exec.Error); ok {
			t.Skip(p.err)
		}
		t.Fatal(p.err)
	}
	return p.path
}

// runBin runs a program with VPTRACE_OUT in a fresh directory.
func runBin(t *testing.T, bin string, env []string, args ...string) *run {
	t.Helper()
	dir := t.TempDir()
	r := &run{dir: dir, trace: filepath.Join(dir, "t.vpt")}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "VPTRACE_OUT="+r.trace)
	cmd.Env = append(cmd.Env, env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case r.err = <-done:
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s %v: timed out\n%s", bin, args, se.String())
	}
	r.stdout, r.stderr = so.String(), se.String()
	if r.err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, r.err, r.stderr)
	}
	return r
}

// chunks is what a trace file holds, chunk by chunk.
type chunks struct {
	allocs  []*trace.Allocs
	maps    []*trace.Maps
	threads []*trace.ThreadStart
	aggs    []*trace.Agg
	raws    []*trace.Raw
	notes   []*trace.Note
	end     *trace.End
	events  []allocEvent // every allocation event, by seq
}

type allocEvent struct {
	trace.AllocEvent
	tid uint32
}

func readChunks(t *testing.T, path string) *chunks {
	t.Helper()
	r, err := trace.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := &chunks{}
	for {
		ch, err := r.Next()
		if err != nil {
			break
		}
		v, err := ch.Decode()
		if err != nil {
			t.Fatalf("%s: %s chunk: %v", path, ch.Type, err)
		}
		switch x := v.(type) {
		case *trace.Allocs:
			c.allocs = append(c.allocs, x)
			for _, e := range x.Events {
				c.events = append(c.events, allocEvent{e, x.TID})
			}
		case *trace.Maps:
			c.maps = append(c.maps, x)
		case *trace.ThreadStart:
			c.threads = append(c.threads, x)
		case *trace.Agg:
			c.aggs = append(c.aggs, x)
		case *trace.Raw:
			c.raws = append(c.raws, x)
		case *trace.Note:
			c.notes = append(c.notes, x)
		case *trace.End:
			c.end = x
		}
	}
	slices.SortFunc(c.events, func(a, b allocEvent) int { return int(a.Seq) - int(b.Seq) })
	for i := 1; i < len(c.events); i++ {
		if c.events[i].Seq == c.events[i-1].Seq {
			t.Errorf("seq %d twice", c.events[i].Seq)
		}
	}
	return c
}

// lost is the largest cumulative lost count of tid's chunks.
func (c *chunks) lost(tid uint32) uint64 {
	var n uint64
	for _, a := range c.allocs {
		if a.TID == tid {
			n = max(n, a.Lost)
		}
	}
	return n
}

// symbols gives a program's function extents.
type symbols struct {
	base  uint64 // runtime address - symbol value
	funcs map[string][2]uint64
	text  [2]uint64 // the executable's text, runtime addresses
}

func loadSymbols(t *testing.T, bin string, mainAddr uint64) *symbols {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	s := &symbols{funcs: map[string][2]uint64{}}
	for _, y := range syms {
		if elf.ST_TYPE(y.Info) == elf.STT_FUNC && y.Size > 0 {
			s.funcs[y.Name] = [2]uint64{y.Value, y.Value + y.Size}
		}
	}
	m, ok := s.funcs["main"]
	if !ok {
		t.Fatal("no main in the symbol table")
	}
	s.base = mainAddr - m[0]
	for k, v := range s.funcs {
		s.funcs[k] = [2]uint64{v[0] + s.base, v[1] + s.base}
	}
	if sec := f.Section(".text"); sec != nil {
		s.text = [2]uint64{sec.Addr + s.base, sec.Addr + sec.Size + s.base}
	}
	return s
}

func (s *symbols) inText(a uint64) bool { return a >= s.text[0] && a < s.text[1] }

// expected is a line of the program's: an allocation event it made.
type expected struct {
	tid             uint32
	kind, fn        string
	addr, size, old uint64
	line            string
}

// outLines parses the program's output: the expected events of tag (A,
// or F in a fork child), and the other lines by their tag.
func outLines(t *testing.T, out, tag string) ([]expected, map[string][][]string) {
	t.Helper()
	var exp []expected
	other := map[string][][]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if f[0] != tag {
			other[f[0]] = append(other[f[0]], f[1:])
			continue
		}
		if len(f) != 7 {
			t.Fatalf("bad line %q", sc.Text())
		}
		tid, _ := strconv.ParseUint(f[1], 10, 32)
		addr, err1 := strconv.ParseUint(f[4], 16, 64)
		size, err2 := strconv.ParseUint(f[5], 10, 64)
		old, err3 := strconv.ParseUint(f[6], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		exp = append(exp, expected{uint32(tid), f[2], f[3], addr, size, old, sc.Text()})
	}
	return exp, other
}

func hexArg(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		t.Fatalf("bad hex %q", s)
	}
	return v
}

// runtimeText is the runtime's executable mappings, from every MAPS chunk:
// libvptrace.so's and its Go half's, libvptrace-go.so, loaded when the
// process first needs an aggregator (none when the runtime is linked into
// the program).
func runtimeText(c *chunks) [][2]uint64 {
	var text [][2]uint64
	for _, ms := range c.maps {
		for _, m := range ms.Maps {
			if (strings.HasSuffix(m.Path, "/libvptrace.so") || strings.HasSuffix(m.Path, "/libvptrace-go.so")) &&
				m.Prot&trace.ProtExec != 0 && !slices.Contains(text, [2]uint64{m.Start, m.End}) {
				text = append(text, [2]uint64{m.Start, m.End})
			}
		}
	}
	return text
}

// checkAllocs compares the expected events with the trace's: each in
// order per thread, with its site in the function named; the events the
// trace has besides may only come from outside the program's text (libc
// allocating on its behalf, the dynamic loader), never from the runtime's
// own code, and only on the program's threads (tids: the main thread and
// those of the expectations).
func checkAllocs(t *testing.T, c *chunks, syms *symbols, exp []expected, tids map[uint32]bool, tolerate ...string) {
	t.Helper()
	errs := 0
	report := func(format string, args ...any) {
		if errs++; errs <= 20 {
			t.Errorf(format, args...)
		}
	}
	for _, e := range exp {
		tids[e.tid] = true
	}
	byTID := map[uint32][]allocEvent{}
	for _, e := range c.events {
		byTID[e.tid] = append(byTID[e.tid], e)
		if !tids[e.tid] {
			report("event %d %s at %#x (site %#x) on thread %d, not the program's", e.Seq, e.Kind, e.Addr, e.Site, e.tid)
		}
	}
	rt := runtimeText(c)
	matched := map[uint64]bool{}
	next := map[uint32]int{}
	for _, x := range exp {
		evs := byTID[x.tid]
		i := next[x.tid]
		for i < len(evs) {
			e := evs[i]
			if e.Kind.String() == x.kind && e.Addr == x.addr && e.Size == x.size && e.Old == x.old {
				break
			}
			i++
		}
		if i == len(evs) {
			report("missing (or out of order): %s", x.line)
			continue
		}
		e := evs[i]
		next[x.tid] = i + 1
		matched[e.Seq] = true
		f, ok := syms.funcs[x.fn]
		if !ok {
			t.Fatalf("no function %s", x.fn)
		}
		if e.Site < f[0] || e.Site >= f[1] {
			report("%s: site %#x not in %s [%#x, %#x)", x.line, e.Site, x.fn, f[0], f[1])
		}
	}
	for _, e := range c.events {
		if matched[e.Seq] {
			continue
		}
		if syms.inText(e.Site) && !slices.ContainsFunc(tolerate, func(fn string) bool {
			f := syms.funcs[fn]
			return e.Site >= f[0] && e.Site < f[1]
		}) {
			report("unexpected event %d on thread %d: %s at %#x size %d old %#x, site %#x in the program", e.Seq, e.tid, e.Kind, e.Addr, e.Size, e.Old, e.Site)
		}
		for _, r := range rt {
			if e.Site >= r[0] && e.Site < r[1] {
				report("event %d %s at %#x: site %#x in the runtime's code", e.Seq, e.Kind, e.Addr, e.Site)
			}
		}
	}
	if errs > 20 {
		t.Errorf("... %d errors in all", errs)
	}
}

// allocRun runs scenario args of the program and checks its allocation
// events; returns the run and the chunks.
func allocRun(t *testing.T, bin string, env []string, args ...string) (*run, *chunks, *symbols) {
	t.Helper()
	return allocRunTolerating(t, bin, env, nil, args...)
}

// allocRunTolerating is allocRun where the functions tolerate may make
// events the program does not expect.
func allocRunTolerating(t *testing.T, bin string, env, tolerate []string, args ...string) (*run, *chunks, *symbols) {
	t.Helper()
	r := runBin(t, bin, env, args...)
	exp, other := outLines(t, r.stdout, "A")
	if len(other["B"]) != 1 {
		t.Fatalf("no B line:\n%s", r.stdout)
	}
	syms := loadSymbols(t, bin, hexArg(t, other["B"][0][0]))
	c := readChunks(t, r.trace)
	pid := c.pid(t, r.trace)
	checkAllocs(t, c, syms, exp, map[uint32]bool{pid: true}, tolerate...)
	return r, c, syms
}

func (c *chunks) pid(t *testing.T, path string) uint32 {
	t.Helper()
	tr, err := trace.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Truncated || tr.Damaged != 0 {
		t.Errorf("%s: truncated %v, damaged %d", path, tr.Truncated, tr.Damaged)
	}
	return tr.Header.PID
}

func TestAllocKinds(t *testing.T) {
	for _, variant := range []string{"so", "archive"} {
		t.Run(variant, func(t *testing.T) {
			bin := allocBin(t, "allocs.c", variant)
			r, c, _ := allocRun(t, bin, nil, "kinds")
			if r.stderr != "" {
				t.Errorf("stderr: %s", r.stderr)
			}
			_, other := outLines(t, r.stdout, "A")
			for _, p := range other["P"] {
				addr := hexArg(t, p[0])
				found := false
				for _, e := range c.events {
					if e.Kind == trace.AllocMmap && e.Addr == addr {
						found = true
						if e.Flags&trace.AllocFile == 0 || e.Path != p[1] || e.Prot != 1 {
							t.Errorf("mmap at %#x: flags %d path %q prot %d, want a file %q", addr, e.Flags, e.Path, e.Prot, p[1])
						}
					}
				}
				if !found {
					t.Errorf("no mmap at %#x", addr)
				}
			}
			for _, e := range c.events {
				if e.Kind == trace.AllocMmap && e.Flags&trace.AllocFile == 0 && e.Prot != 3 && e.Size == 8192 {
					t.Errorf("anonymous mmap %+v: prot %d, want 3", e, e.Prot)
				}
			}
			if variant == "so" {
				// the dynamic loader allocated the TLS of the Go
				// runtime's first thread on the main thread: not the
				// program's, not recorded (nothing else here comes
				// from the loader)
				for _, m := range c.maps[0].Maps {
					if strings.Contains(m.Path, "/ld-linux") && m.Prot&trace.ProtExec != 0 {
						for _, e := range c.events {
							if e.Site >= m.Start && e.Site < m.End {
								t.Errorf("event %d %s at %#x, size %d: site %#x in the dynamic loader", e.Seq, e.Kind, e.Addr, e.Size, e.Site)
							}
						}
					}
				}
			}
			if len(c.maps) < 2 || c.maps[0].Why != trace.MapsStart || c.maps[len(c.maps)-1].Why != trace.MapsExit {
				t.Errorf("MAPS chunks: want START first and EXIT last, got %d", len(c.maps))
			}
			if c.end == nil || c.end.Flags&trace.EndClean == 0 {
				t.Errorf("no clean END")
			}
		})
	}
}

// TestAllocThreads: four threads' events are theirs; each thread's
// THREAD chunk holds its stack and TLS block; a thread's last records are
// flagged FINAL; the Go runtime's threads record nothing (checkAllocs).
func TestAllocThreads(t *testing.T) {
	for _, variant := range []string{"so", "archive"} {
		t.Run(variant, func(t *testing.T) {
			bin := allocBin(t, "allocs.c", variant)
			r, c, _ := allocRun(t, bin, nil, "threads")
			_, other := outLines(t, r.stdout, "A")
			if len(other["T"]) != 5 {
				t.Fatalf("T lines: %v", other["T"])
			}
			for _, l := range other["T"] {
				tid, _ := strconv.ParseUint(l[0], 10, 32)
				stack, tls := hexArg(t, l[1]), hexArg(t, l[2])
				var th *trace.ThreadStart
				for _, x := range c.threads {
					if x.TID == uint32(tid) {
						th = x
					}
				}
				if th == nil {
					t.Errorf("thread %d: no THREAD chunk", tid)
					continue
				}
				if !th.Stack.Contains(stack) {
					t.Errorf("thread %d: stack %#x-%#x lacks %#x", tid, th.Stack.Lo, th.Stack.Hi, stack)
				}
				in := false
				for _, x := range th.TLS {
					in = in || x.Contains(tls)
				}
				if !in {
					t.Errorf("thread %d: TLS %v lacks %#x", tid, th.TLS, tls)
				}
				if c.pidOf(r) != uint32(tid) {
					last := -1
					for i, a := range c.allocs {
						if a.TID == uint32(tid) {
							last = i
						}
					}
					if last < 0 || c.allocs[last].Flags&1 == 0 {
						t.Errorf("thread %d: its last ALLOCS chunk is not FINAL", tid)
					}
				}
			}
		})
	}
}

func (c *chunks) pidOf(r *run) uint32 {
	tr, err := trace.Load(r.trace)
	if err != nil {
		return 0
	}
	return tr.Header.PID
}

// TestAllocBeforeMain: an allocation in a constructor, before the trace
// file exists, is written when it opens.
func TestAllocBeforeMain(t *testing.T) {
	bin := allocBin(t, "allocs.c", "so")
	allocRun(t, bin, []string{"ALLOCS_CTOR=1"}, "ctor")
}

// TestAllocMany: more records than a buffer holds.
func TestAllocMany(t *testing.T) {
	bin := allocBin(t, "allocs.c", "so")
	_, c, _ := allocRun(t, bin, nil, "many")
	if len(c.allocs) < 2 {
		t.Errorf("%d ALLOCS chunks for 80000 events", len(c.allocs))
	}
}

// TestAllocFork: a fork child's trace has the child's allocations, not
// the parent's before the fork; the parent's has none of the child's.
func TestAllocFork(t *testing.T) {
	bin := allocBin(t, "allocs.c", "so")
	r, _, syms := allocRun(t, bin, nil, "fork")
	_, other := outLines(t, r.stdout, "A")
	if len(other["C"]) != 1 {
		t.Fatalf("no C line")
	}
	child, _ := strconv.Atoi(other["C"][0][0])
	cpath := pidName(r.trace, child)
	cc := readChunks(t, cpath)
	fexp, _ := outLines(t, r.stdout, "F")
	if len(fexp) != 2 {
		t.Fatalf("F lines: %v", fexp)
	}
	checkAllocs(t, cc, syms, fexp, map[uint32]bool{uint32(child): true})
	if len(cc.maps) == 0 || cc.maps[0].Why != trace.MapsStart {
		t.Errorf("the child's trace has no MAPS START")
	}
}

// TestAllocExec: before an exec the image's allocations go to its file;
// the new image's to a file of its own, which starts with its mappings.
func TestAllocExec(t *testing.T) {
	bin := allocBin(t, "allocs.c", "so")
	r, c, _ := allocRun(t, bin, nil, "exec")
	if c.end == nil || c.end.Flags&trace.EndExec == 0 {
		t.Errorf("END %+v: want EXEC", c.end)
	}
	xexp, other := outLines(t, r.stdout, "X")
	if len(xexp) != 2 || len(other["BX"]) != 1 {
		t.Fatalf("X lines %v, BX %v", xexp, other["BX"])
	}
	next := pidName(r.trace, int(c.pidOf(r)))
	xc := readChunks(t, next)
	syms := loadSymbols(t, bin, hexArg(t, other["BX"][0][0]))
	checkAllocs(t, xc, syms, xexp, map[uint32]bool{c.pidOf(r): true})
	if len(xc.maps) == 0 || xc.maps[0].Why != trace.MapsStart {
		t.Errorf("the exec'd image's trace has no MAPS START")
	}
}

// TestAllocReuse: freeing a block that covers whole pages moves the
// recent-page cache epoch on (a page read before is recorded again after)
// and cuts the aggregates there (the page's two events in two intervals).
func TestAllocReuse(t *testing.T) {
	bin := allocBin(t, "allocs.c", "so")
	r, c, _ := allocRun(t, bin, nil, "reuse")
	_, other := outLines(t, r.stdout, "A")
	page := hexArg(t, other["R"][0][0])
	var times []uint64
	aggs := 0
	for _, a := range c.aggs {
		for _, p := range a.Pages {
			if p.Page == page {
				aggs++
				for k := uint64(0); k < p.Events; k++ {
					times = append(times, p.First)
				}
			}
		}
	}
	for _, raw := range c.raws {
		for _, e := range raw.Events {
			if e.Site != 0 && e.Page1 == page+1 {
				times = append(times, e.Time)
			}
		}
	}
	if len(times) != 2 {
		t.Fatalf("page %#x: %d events, want 2 (before and after the release)", page<<12, len(times))
	}
	if len(c.raws) == 0 && aggs != 2 {
		t.Errorf("page %#x in %d aggregates, want 2 (cut at the release)", page<<12, aggs)
	}
}

// TestAllocDlopen: a MAPS chunk after a dlopen has the library, one after
// its dlclose not.
func TestAllocDlopen(t *testing.T) {
	bin := allocBin(t, "allocs.c", "so")
	lib := filepath.Join(libDir, "libtiny.so")
	src := filepath.Join(libDir, "tiny.c")
	if err := os.WriteFile(src, []byte("int tiny_value = 42;\nint tiny(void) { return tiny_value; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	_, c, _ := allocRun(t, bin, nil, "dlopen", lib)
	has := func(m *trace.Maps) bool {
		for _, x := range m.Maps {
			if x.Path == lib {
				return true
			}
		}
		return false
	}
	var whys []uint32
	for _, m := range c.maps {
		whys = append(whys, m.Why)
		switch m.Why {
		case trace.MapsDlopen:
			if !has(m) {
				t.Errorf("MAPS DLOPEN without %s", lib)
			}
		case trace.MapsDlclose, trace.MapsStart, trace.MapsExit:
			if has(m) {
				t.Errorf("MAPS %d with %s", m.Why, lib)
			}
		}
	}
	want := []uint32{trace.MapsStart, trace.MapsDlopen, trace.MapsDlclose, trace.MapsExit}
	if !slices.Equal(whys, want) {
		t.Errorf("MAPS chunks %v, want %v", whys, want)
	}
}

// TestAllocSignals: a signal handler's mmap and munmap, interrupting the
// thread's own allocations: nothing deadlocks, the trace is whole, and
// each of the handler's calls is recorded or counted lost (or, when it
// interrupted an allocator call in progress, neither: it looks like that
// allocator's own).
func TestAllocSignals(t *testing.T) {
	bin := allocBin(t, "allocs.c", "so")
	r := runBin(t, bin, nil, "signals")
	_, other := outLines(t, r.stdout, "A")
	syms := loadSymbols(t, bin, hexArg(t, other["B"][0][0]))
	c := readChunks(t, r.trace)
	pid := c.pid(t, r.trace)
	handled, _ := strconv.ParseUint(other["S"][0][0], 10, 64)
	calls, _ := strconv.ParseUint(other["S"][0][1], 10, 64)
	calls *= 2 // (malloc and free)
	h, loop := syms.funcs["handler"], syms.funcs["f_loop"]
	var recorded, looped uint64
	for _, e := range c.events {
		switch {
		case e.Site >= h[0] && e.Site < h[1]:
			recorded++
		case e.Site >= loop[0] && e.Site < loop[1]:
			looped++
		}
	}
	lost := c.lost(pid)
	t.Logf("handler calls %d: %d recorded, %d lost; the loop's %d of %d recorded", 2*handled, recorded, lost, looped, calls)
	if handled < 50 || recorded == 0 || recorded+lost > 2*handled {
		t.Errorf("handler calls %d: %d recorded, %d lost", 2*handled, recorded, lost)
	}
	if looped+lost < calls-lost || looped > calls {
		t.Errorf("the loop's %d calls: %d recorded", calls, looped)
	}
}

// TestAllocStress: waves of threads allocate while another flushes every
// millisecond and the clock thread takes everyone's records every 2 ms;
// each thread's records are all there, once (readChunks: no seq twice),
// in chunks that decode.
func TestAllocStress(t *testing.T) {
	bin := allocBin(t, "allocs.c", "so")
	r := runBin(t, bin, []string{"VPTRACE_INTERVAL_MS=2"}, "stress")
	_, other := outLines(t, r.stdout, "A")
	syms := loadSymbols(t, bin, hexArg(t, other["B"][0][0]))
	c := readChunks(t, r.trace)
	got := c.eventsIn(syms.funcs["f_stress"])
	if len(other["W"]) != 24 {
		t.Fatalf("W lines: %d", len(other["W"]))
	}
	for _, w := range other["W"] {
		tid, _ := strconv.ParseUint(w[0], 10, 32)
		want, _ := strconv.Atoi(w[1])
		// (a TID reused by a later wave's thread counts twice)
		if got[uint32(tid)] < want || got[uint32(tid)]%want != 0 {
			t.Errorf("thread %d: %d events, want %d (or a multiple: a reused tid)", tid, got[uint32(tid)], want)
		}
		if l := c.lost(uint32(tid)); l != 0 {
			t.Errorf("thread %d: %d lost", tid, l)
		}
	}
}

// TestAllocSeqSwitch: the seq counter, taken without a lock while the
// main thread alone allocates, becomes shared as threads start while the
// main thread allocates as fast as it can: every event is there, no seq
// twice (readChunks), in ten processes.
func TestAllocSeqSwitch(t *testing.T) {
	bin := allocBin(t, "allocs.c", "so")
	for i := 0; i < 10; i++ {
		r := runBin(t, bin, nil, "seqswitch")
		_, other := outLines(t, r.stdout, "A")
		syms := loadSymbols(t, bin, hexArg(t, other["B"][0][0]))
		c := readChunks(t, r.trace)
		got := c.eventsIn(syms.funcs["f_solo"])
		if len(other["W"]) != 5 {
			t.Fatalf("W lines: %d", len(other["W"]))
		}
		for _, w := range other["W"] {
			tid, _ := strconv.ParseUint(w[0], 10, 32)
			want, _ := strconv.Atoi(w[1])
			if got[uint32(tid)] != want {
				t.Errorf("run %d, thread %d: %d events, want %d", i, tid, got[uint32(tid)], want)
			}
		}
		if t.Failed() {
			break
		}
	}
}

// TestAllocOff: VPTRACE_ALLOCS=0 records nothing.
func TestAllocOff(t *testing.T) {
	bin := allocBin(t, "allocs.c", "so")
	r := runBin(t, bin, []string{"VPTRACE_ALLOCS=0"}, "kinds")
	c := readChunks(t, r.trace)
	if len(c.allocs) != 0 {
		t.Errorf("%d ALLOCS chunks with VPTRACE_ALLOCS=0", len(c.allocs))
	}
	if c.end == nil {
		t.Errorf("no END")
	}
}

// TestAllocStatic: a -static program links (libc.a's malloc wins) and
// runs; the trace says allocation tracking is off.
func TestAllocStatic(t *testing.T) {
	bin := allocBin(t, "allocs.c", "static")
	r := runBin(t, bin, nil, "kinds")
	c := readChunks(t, r.trace)
	if len(c.allocs) != 0 {
		t.Errorf("%d ALLOCS chunks in a static program", len(c.allocs))
	}
	found := false
	for _, n := range c.notes {
		found = found || (n.Kind == trace.NoteWarning && strings.HasPrefix(n.Text, "allocation tracking is off"))
	}
	if !found {
		t.Errorf("no NOTE WARNING: allocation tracking is off")
	}
	if c.end == nil || r.stderr != "" {
		t.Errorf("end %v, stderr %q", c.end, r.stderr)
	}
}

// TestAllocCxx: every operator new and delete, from C++ (g++).
func TestAllocCxx(t *testing.T) {
	for _, variant := range []string{"so", "archive"} {
		t.Run(variant, func(t *testing.T) {
			bin := allocBin(t, "allocs_cxx.cc", variant)
			// (f_too_big's catch frees the exception: libstdc++'s
			// __cxa_end_catch ends in tail calls down to free)
			r, _, _ := allocRunTolerating(t, bin, nil, []string{"f_too_big"})
			if r.stderr != "" {
				t.Errorf("stderr: %s", r.stderr)
			}
		})
	}
}

// TestAllocValgrind: memcheck finds nothing in a program whose allocator
// is the runtime's (then libc's underneath, which valgrind replaces), and
// the events are recorded all the same.
func TestAllocValgrind(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("no valgrind")
	}
	bin := allocBin(t, "allocs.c", "so")
	for _, sc := range []string{"kinds", "threads"} {
		dir := t.TempDir()
		out := filepath.Join(dir, "v.vpt")
		cmd := exec.Command("valgrind", "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite",
			"--suppressions=vptrace.supp", "-q", bin, sc)
		cmd.Env = append(os.Environ(), "VPTRACE_OUT="+out, "ALLOCS_NO_PVALLOC=1")
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		if err := cmd.Run(); err != nil {
			t.Errorf("valgrind %s: %v\n%s", sc, err, tailStr(se.String(), 6000))
			continue
		}
		exp, other := outLines(t, so.String(), "A")
		syms := loadSymbols(t, bin, hexArg(t, other["B"][0][0]))
		c := readChunks(t, out)
		checkAllocs(t, c, syms, exp, map[uint32]bool{c.pid(t, out): true})
	}
}

// eventsIn counts, per thread, the events whose site lies in the
// function's address range f ([start, end)).
func (c *chunks) eventsIn(f [2]uint64) map[uint32]int {
	got := map[uint32]int{}
	for _, e := range c.events {
		if e.Site >= f[0] && e.Site < f[1] {
			got[e.tid]++
		}
	}
	return got
}

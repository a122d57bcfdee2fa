package e2e

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBlockcount: the blockcount preset's counts are exact, per block and
// per thread. testdata/src/blockcount.c runs work() t+1 times in thread t
// (4 threads); it is compiled with gcc and clang at -O0, -O2 and -O3 (and
// -fPIC, where the counters are initial-exec TLS), rewritten with
// blockcount, linked with the runtime and run: it must print what the
// plain program prints, and `hijack report --blocks --csv` must give
//   - for every block, summed over threads, exactly the number of times
//     valgrind's callgrind executed the block's first instruction in the
//     plain program (--dump-instr: the oracle), and every block callgrind
//     saw executed must be listed;
//   - per worker thread, for every block of work()'s call tree, k times
//     what the thread that called work() once counted, where k is how
//     often the thread entered work().
func TestBlockcount(t *testing.T) {
	needHijack(t)
	if cfg.fake {
		t.Skip("the copy-through stand-in rewriter does not count")
	}
	vg := needTool(t, "valgrind", "valgrind")
	rt := vptRuntimeDir(t)
	src := filepath.Join(cfg.root, "testdata", "src", "blockcount.c")
	type bcCase struct {
		cc    string
		flags []string
	}
	var cases []bcCase
	for _, cc := range []string{"gcc", "clang"} {
		for _, opt := range []string{"-O0", "-O2", "-O3"} {
			cases = append(cases, bcCase{cc, []string{opt}})
		}
		cases = append(cases, bcCase{cc, []string{"-O2", "-fPIC"}})
	}
	args := []string{"60", "40"}
	for _, c := range cases {
		c := c
		t.Run(c.cc+strings.Join(c.flags, ""), func(t *testing.T) {
			t.Parallel()
			needTool(t, c.cc, c.cc)
			dir := workDir(t)
			obj := compile(t, c.cc, append([]string{"-pthread"}, c.flags...), src)
			plain := filepath.Join(dir, "plain")
			link(t, c.cc, plain, []string{obj}, "-no-pie", "-pthread")
			inst := filepath.Join(dir, "inst.o")
			r := okRun(t, spec{Dir: dir, Timeout: 5 * time.Minute}, cfg.hijack, "--preset", "blockcount", obj, inst)
			if len(r.Stderr) > 0 {
				t.Errorf("hijack warned:\n%s", r.Stderr)
			}
			prog := filepath.Join(dir, "inst")
			link(t, c.cc, prog, []string{inst}, "-no-pie", "-pthread", "-L"+rt, "-lvptrace", "-Wl,-rpath,"+rt)
			want := okRun(t, spec{Dir: dir, Timeout: 5 * time.Minute}, plain, args...)
			trace := filepath.Join(dir, "bc.vpt")
			got := okRun(t, spec{Dir: dir, Timeout: 5 * time.Minute, Env: []string{"VPTRACE_OUT=" + trace}}, prog, args...)
			if !bytes.Equal(got.Stdout, want.Stdout) {
				t.Fatalf("instrumented program printed %q, plain %q (artifacts in %s)", got.Stdout, want.Stdout, rel(dir))
			}
			rep := okRun(t, spec{Dir: dir, Timeout: 5 * time.Minute}, cfg.hijack, "report", "--blocks", "--csv", trace)
			counts := parseBlockCSV(t, rep.Stdout)

			// The oracle: callgrind's execution count of each block's
			// first instruction, in the plain program.
			cg := filepath.Join(dir, "callgrind.out")
			okRun(t, spec{Dir: dir, Timeout: 10 * time.Minute}, vg, append([]string{"-q", "--tool=callgrind", "--dump-instr=yes", "--callgrind-out-file=" + cg, plain}, args...)...)
			exec := parseCallgrind(t, cg)
			syms := funcSymbols(t, dir, plain)
			blocks := analyzeBlocks(t, dir, obj)
			checked := 0
			for fn, starts := range blocks {
				base, ok := syms[fn]
				if !ok {
					continue // a name the link does not keep unique
				}
				for _, off := range starts {
					k := blockKey{fn, off}
					sum := uint64(0)
					for _, n := range counts[k] {
						sum += n
					}
					if want := exec[base+off]; sum != want {
						t.Errorf("%s+%#x: counted %d times over all threads, callgrind executed it %d times", fn, off, sum, want)
					}
					checked++
				}
			}
			for k := range counts {
				if _, ok := blocks[k.fn]; !ok {
					t.Errorf("report lists a block of %s, which the object does not have", k.fn)
				}
			}
			if checked < 20 {
				t.Fatalf("only %d blocks checked against callgrind", checked)
			}

			// Per thread: thread t ran work()'s tree t+1 times.
			mult := map[string]uint64{} // thread -> times it entered work()
			for th, n := range counts[blockKey{"work", 0}] {
				mult[th] = n
			}
			var one string
			seen := map[uint64]bool{}
			for th, n := range mult {
				seen[n] = true
				if n == 1 {
					one = th
				}
			}
			if len(mult) != 4 || !seen[1] || !seen[2] || !seen[3] || !seen[4] {
				t.Fatalf("threads entering work(): %v; want 4 threads entering it 1, 2, 3 and 4 times", mult)
			}
			for k, per := range counts {
				switch k.fn {
				case "work", "inner", "down", "sumv", "classify", "fib":
				default:
					continue
				}
				for th, m := range mult {
					if per[th] != m*per[one] {
						t.Errorf("%s+%#x: thread %s (entered work() %d times) counted %d, the thread that entered once %d", k.fn, k.off, th, m, per[th], per[one])
					}
				}
			}
			// A thread still inside spin()'s loop when the process
			// exits: its blocks count completed runs, at most one
			// run short, never half a run's garbage.
			spinTrace := filepath.Join(dir, "spin.vpt")
			okRun(t, spec{Dir: dir, Timeout: time.Minute, Env: []string{"VPTRACE_OUT=" + spinTrace}}, prog, "spin")
			spin := parseBlockCSV(t, okRun(t, spec{Dir: dir, Timeout: time.Minute}, cfg.hijack, "report", "--blocks", "--csv", spinTrace).Stdout)
			isSpin := func(fn string) bool { return fn == "spin" || strings.HasPrefix(fn, "spin.") } // gcc clones it: spin.constprop.0
			var entries uint64
			for k, per := range spin {
				if isSpin(k.fn) && k.off == 0 {
					for _, n := range per {
						entries += n
					}
				}
			}
			if entries == 0 {
				t.Fatalf("spin() never counted as entered")
			}
			const trip = 1 << 16
			for k, per := range spin {
				if !isSpin(k.fn) || k.off == 0 {
					continue
				}
				for th, n := range per {
					if n > (trip+1)*entries || (n > entries && n < trip*(entries-1)) {
						t.Errorf("spin+%#x: thread %s counted %d with spin() entered %d times (%d iterations a call)", k.off, th, n, entries, trip)
					}
				}
			}
			t.Logf("%d blocks checked against callgrind, 4 threads for the 1:2:3:4 ratio; spin() entered %d times before exit", checked, entries)
		})
	}
}

// okRun runs name args; the test fails unless it exits 0.
func okRun(t testing.TB, s spec, name string, args ...string) result {
	t.Helper()
	r, err := run(s, name, args...)
	if err != nil || r.Exit != 0 || r.TimedOut {
		t.Fatalf("%s: %v %s\n%s", cmdline(name, args...), err, r.status(), tail(r.Stderr, 3000))
	}
	return r
}

// blockKey names a block: its function and offset in it.
type blockKey struct {
	fn  string
	off uint64
}

// parseBlockCSV reads `hijack report --blocks --csv`: per block, the count
// of each thread.
func parseBlockCSV(t *testing.T, out []byte) map[blockKey]map[string]uint64 {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("report --blocks --csv: %v:\n%s", err, tail(out, 2000))
	}
	if h := strings.Join(rows[0], ","); h != "thread,function,offset,count,loop_depth,score" {
		t.Fatalf("report --blocks --csv header %q", h)
	}
	m := map[blockKey]map[string]uint64{}
	for _, row := range rows[1:] {
		off, err1 := strconv.ParseUint(row[2], 0, 64)
		n, err2 := strconv.ParseUint(row[3], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("report --blocks --csv row %q", row)
		}
		k := blockKey{row[1], off}
		if m[k] == nil {
			m[k] = map[string]uint64{}
		}
		m[k][row[0]] += n
	}
	return m
}

// parseCallgrind returns, per instruction address, how often callgrind
// executed it (the Ir of its self-cost lines; the inclusive cost line
// after a calls= line is not the instruction's own).
func parseCallgrind(t *testing.T, path string) map[uint64]uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	exec := map[uint64]uint64{}
	var addr uint64
	skip := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		c := line[0]
		if strings.HasPrefix(line, "calls=") {
			skip = true
			continue
		}
		if !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '*') {
			continue
		}
		fields := strings.Fields(line)
		switch a := fields[0]; {
		case a == "*":
		case a[0] == '+' || a[0] == '-':
			d, err := strconv.ParseInt(a, 0, 64)
			if err != nil {
				t.Fatalf("callgrind line %q: %v", line, err)
			}
			addr = uint64(int64(addr) + d)
		default:
			v, err := strconv.ParseUint(a, 0, 64)
			if err != nil {
				t.Fatalf("callgrind line %q: %v", line, err)
			}
			addr = v
		}
		if skip {
			skip = false
			continue
		}
		// positions: instr line; then the events (Ir)
		if len(fields) >= 3 {
			n, err := strconv.ParseUint(fields[2], 10, 64)
			if err != nil {
				t.Fatalf("callgrind line %q: %v", line, err)
			}
			exec[addr] += n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return exec
}

// funcSymbols returns the address of each function symbol of a program
// whose name is unique in it.
func funcSymbols(t *testing.T, dir, prog string) map[string]uint64 {
	t.Helper()
	r := okRun(t, spec{Dir: dir, Timeout: time.Minute}, "nm", "--defined-only", prog)
	syms := map[string]uint64{}
	dup := map[string]bool{}
	for _, line := range strings.Split(string(r.Stdout), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || (f[1] != "t" && f[1] != "T") {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			continue
		}
		if _, ok := syms[f[2]]; ok {
			dup[f[2]] = true
		}
		syms[f[2]] = a
	}
	for n := range dup {
		delete(syms, n)
	}
	return syms
}

// analyzeBlocks returns the offsets of every function's blocks from the
// function's start, from `hijack analyze --json` (which gives section
// offsets; the first block is the entry).
func analyzeBlocks(t *testing.T, dir, obj string) map[string][]uint64 {
	t.Helper()
	r := okRun(t, spec{Dir: dir, Timeout: time.Minute}, cfg.hijack, "analyze", "--json", obj)
	var fns []struct {
		Name   string `json:"name"`
		Blocks []struct {
			Start uint64 `json:"start"`
			End   uint64 `json:"end"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(r.Stdout, &fns); err != nil {
		t.Fatalf("analyze --json: %v", err)
	}
	m := map[string][]uint64{}
	for _, fn := range fns {
		for _, b := range fn.Blocks {
			if b.End > b.Start {
				m[fn.Name] = append(m[fn.Name], b.Start-fn.Blocks[0].Start)
			}
		}
	}
	if len(m) == 0 {
		t.Fatal(fmt.Errorf("analyze --json: no blocks"))
	}
	return m
}

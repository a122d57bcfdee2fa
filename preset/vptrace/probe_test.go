package vptrace_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"hijack/internal/testutil"
	"hijack/vptrace/trace"
)

// probeCompare matches a cache probe's compare of its key with an entry,
// cmp K,(C,X) (probe.go); C is the table's register.
var probeCompare = regexp.MustCompile(`\tcmp +%r\w+,(?:0x8)?\((%r\w+),%r\w+,1\)`)

// hoistedProbes counts the probes in objdump's disassembly dis (their
// first compare, after the and that forms the set's offset) whose table
// register the instructions just before do not load from the thread's
// state (mov %fs:0x70(C),C; lea; and; cmp): probes in spilled loops that
// hold the table's address (spill.go).
func hoistedProbes(dis []byte) int {
	lines := strings.Split(string(dis), "\n")
	n := 0
	for i := 3; i < len(lines); i++ {
		m := probeCompare.FindStringSubmatch(lines[i])
		if m == nil || !strings.Contains(lines[i-1], "and    $0x3fff0,") {
			continue
		}
		if !strings.Contains(lines[i-3], fmt.Sprintf("%%fs:0x70(%s),%s", m[1], m[1])) {
			n++
		}
	}
	return n
}

// disassembly returns objdump -d's disassembly of obj, without raw bytes.
func disassembly(t *testing.T, obj string) []byte {
	t.Helper()
	out, err := exec.Command("objdump", "-d", "--no-show-raw-insn", obj).Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runTraced runs the program exe with VPTRACE_OUT beside it and env, and
// returns what it printed and the trace's path.
func runTraced(t *testing.T, exe string, env ...string) ([]byte, string) {
	t.Helper()
	vpt := exe + ".vpt"
	// (a mis-rewritten loop may never end: fail in a minute, not at the
	// test binary's timeout)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(append(os.Environ(), "VPTRACE_OUT="+vpt), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", exe, err, out)
	}
	return out, vpt
}

// printedKinds returns the pages a driver printed ("page 0x... KINDS"),
// by page number.
func printedKinds(out []byte) map[uint64]string {
	want := map[uint64]string{}
	for _, line := range strings.Split(string(out), "\n") {
		var p uint64
		var kinds string
		if _, err := fmt.Sscanf(line, "page 0x%x %s", &p, &kinds); err == nil {
			want[p>>12] = kinds
		}
	}
	return want
}

// kindsOf says which kinds of access a traced page had: "R", "W", "RW".
func kindsOf(pg *trace.Page) string {
	k := ""
	if pg.Reads > 0 {
		k += "R"
	}
	if pg.Writes > 0 {
		k += "W"
	}
	return k
}

// tracedKinds returns the kinds (kindsOf) of every page the threads have,
// by page number (a later thread's where two have a page).
func tracedKinds(threads []*trace.Thread) map[uint64]string {
	got := map[uint64]string{}
	for _, th := range threads {
		for p, pg := range th.Pages {
			got[p] = kindsOf(pg)
		}
	}
	return got
}

// wrongKinds compares, page by page, the kinds a driver printed (want) with
// the trace's (got; "" for a page in neither) and says where they differ.
func wrongKinds(pages []uint64, want, got map[uint64]string) []string {
	var wrong []string
	for _, p := range pages {
		if got[p] != want[p] {
			wrong = append(wrong, fmt.Sprintf("%s: %q, want %q", hex(p), got[p], want[p]))
		}
	}
	return wrong
}

// TestProbeKinds runs loops of random reads, writes and read-modify-writes
// (testdata/kinds.c) whose probes find the cache's address in a register
// of their loop (a new thread: its first event is in such a loop), over
// pages whose entries in the thread's cache have other kinds by then. The
// trace must have every page of the table with the kinds the driver says:
// a probe that took an entry of the other kind for a hit would leave a
// page without a kind it had; one that missed an entry of both kinds only
// costs a call (the stub finds the entry). With initial-exec and indirect
// slots (whose loops are spilled for the slot base), in a shared library,
// and with local-exec slots, whose loops here have dead registers enough
// (not spilled: the probes load the table themselves).
func TestProbeKinds(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	rt := runtimeArchive(t)
	for _, c := range []string{"-O1/initial-exec", "-O2/initial-exec", "-O2/indirect", "-O3/indirect", "-O2/indirect/shared", "-O2/local-exec"} {
		t.Run(c, func(t *testing.T) {
			c, shared := strings.CutSuffix(c, "/shared")
			opt, tls, _ := strings.Cut(c, "/")
			dir := t.TempDir()
			drv := testutil.Compile(t, dir, "gcc", "testdata/kinds_main.c", "-O2")
			exe := filepath.Join(dir, "app")
			var inst string
			if shared {
				inst = instrument(t, testutil.Compile(t, dir, "gcc", "testdata/kinds.c", opt, "-fPIC"), "tls="+tls)
				so := filepath.Join(dir, "libkinds.so")
				testutil.Link(t, "gcc", so, "-shared", inst, "-L"+runtimeDir, "-lvptrace", "-Wl,-rpath,"+runtimeDir)
				testutil.Link(t, "gcc", exe, drv, so, "-Wl,-rpath,"+dir, "-lpthread")
			} else {
				inst = instrument(t, testutil.Compile(t, dir, "gcc", "testdata/kinds.c", opt), "tls="+tls)
				testutil.Link(t, "gcc", exe, drv, inst, rt, "-lpthread")
			}
			hoisted, least := hoistedProbes(disassembly(t, inst)), 3 // one in each of rd, wr and rmw
			if tls == "local-exec" {
				least = 0
			}
			if (least == 0) != (hoisted == 0) || hoisted < least {
				t.Fatalf("%d probe compares through a loop's table register, want %d or more (0 for local-exec)", hoisted, least)
			}
			// (one interval: no page is recorded again for the epoch)
			out, vpt := runTraced(t, exe, "VPTRACE_INTERVAL_MS=100000")
			want := printedKinds(out)
			if len(want) != 160 {
				t.Fatalf("the driver printed %d pages, want 160:\n%s", len(want), out)
			}
			tr, err := trace.Load(vpt)
			if err != nil {
				t.Fatal(err)
			}
			// the worker thread: the one with the table's pages
			var th *trace.Thread
			for _, x := range tr.Threads {
				for p := range want {
					if x.Pages[p] != nil {
						th = x
					}
				}
			}
			if th == nil {
				t.Fatal("no thread of the trace has a page of the table")
			}
			if wrong := wrongKinds(slices.Sorted(maps.Keys(want)), want, tracedKinds([]*trace.Thread{th})); len(wrong) > 0 {
				t.Errorf("%d of %d pages with the wrong kinds: %v", len(wrong), len(want), head(wrong))
			}
		})
	}
}

// TestProbeEpochs runs random reads over 64 pages (kinds.c's rd, through
// its cache probes: the slot mostly misses) for 300 ms with the cache
// forgetting every 20 ms: every page must be recorded again in most
// intervals. The probes add the epoch from the object's own word
// (abi.FlagEpoch), which the runtime raises at each interval: a word left
// behind would make the probes hit the pages' entries of the first
// interval forever, one event a page. Through a loop's table register
// (initial-exec and indirect: spilled loops) and without (local-exec).
func TestProbeEpochs(t *testing.T) {
	testutil.Need(t, "gcc")
	rt := runtimeArchive(t)
	for _, tls := range []string{"initial-exec", "indirect", "local-exec"} {
		t.Run(tls, func(t *testing.T) {
			dir := t.TempDir()
			drv := testutil.Compile(t, dir, "gcc", "testdata/epochs_main.c", "-O2")
			inst := instrument(t, testutil.Compile(t, dir, "gcc", "testdata/kinds.c", "-O2"), "tls="+tls)
			if dis := string(disassembly(t, inst)); strings.Contains(dis, "vpt_probe_hot") {
				t.Errorf("the probes still read the runtime's hot line")
			}
			exe := filepath.Join(dir, "app")
			testutil.Link(t, "gcc", exe, drv, inst, rt, "-lpthread")
			out, vpt := runTraced(t, exe, "VPTRACE_INTERVAL_MS=20")
			want := printedKinds(out)
			var ms, rounds, sum int64
			if _, err := fmt.Sscanf(string(out[strings.LastIndex(string(out), "ms "):]), "ms %d rounds %d sum %d", &ms, &rounds, &sum); err != nil || len(want) != 64 {
				t.Fatalf("the driver printed %d pages (want 64), %v:\n%s", len(want), err, out)
			}
			tr, err := trace.Load(vpt)
			if err != nil {
				t.Fatal(err)
			}
			// a third of the intervals at least: a loaded machine may
			// stretch the clock thread's ticks
			least := uint64(ms / 20 / 3)
			var few []string
			for p := range want {
				var events uint64
				for _, th := range tr.Threads {
					if pg := th.Pages[p]; pg != nil {
						events += pg.Events
					}
				}
				if events < least {
					few = append(few, fmt.Sprintf("%s: %d", hex(p), events))
				}
			}
			if least < 4 || len(few) > 0 {
				t.Errorf("%d ms (%d rounds), %d intervals: %d of 64 pages recorded fewer than %d times: %v", ms, rounds, ms/20, len(few), least, head(few))
			}
		})
	}
}

// TestStraddle runs reads and writes whose bytes cross a page boundary
// (testdata/straddle.c: accessors called twice on the same address, a
// gather in a loop, a walk in a loop that steps its position, one in a
// loop whose position wraps at a bound, a record's key and value at
// offsets the data chooses, the value read where the key matches, and
// the other way round):
// the trace must have both pages of every crossing
// access with its kind, and no page of the buffer the accesses did not
// touch. The second page is recorded through the stub at every crossing,
// the first unless the site's slot has it.
func TestStraddle(t *testing.T) {
	testutil.Need(t, "gcc")
	rt := runtimeArchive(t)
	for _, c := range []string{"-O1/local-exec", "-O2/local-exec", "-O2/indirect", "-O2/exact"} {
		t.Run(c, func(t *testing.T) {
			opt, how, _ := strings.Cut(c, "/")
			setting := "tls=" + how
			if how == "exact" {
				setting = "exact=true"
			}
			dir := t.TempDir()
			inst := instrument(t, testutil.Compile(t, dir, "gcc", "testdata/straddle.c", opt), setting)
			if how != "exact" {
				// get8 and walk8 check their 8 bytes by address
				// against a page base (4096-8: cmp $0xff8), wrap2 its
				// 2 (cmp $0xffe), gather, whose offsets its loop
				// loads, by page number.
				limit := regexp.MustCompile(`cmp    (\$0xff[0-9a-f]),%`)
				for fn, want := range map[string]string{"get8": "$0xff8", "walk8": "$0xff8", "wrap2": "$0xffe", "gather": ""} {
					lines := disasm(t, inst, fn)
					got := ""
					for _, l := range lines {
						if m := limit.FindStringSubmatch(l); m != nil {
							got = m[1]
						}
					}
					if got != want {
						t.Errorf("%s: checks by address against %q, want %q:\n%s", fn, got, want, strings.Join(lines, "\n"))
					}
				}
				// field's value compares the page of its last byte
				// (lea 0xf) with its key's slot first, field2's key
				// that of its first (lea (%r..)) with its value's
				for fn, lea := range map[string]string{"field": "lea    0xf(%", "field2": "lea    (%"} {
					lines := disasm(t, inst, fn)
					end := false
					for k := 0; k+2 < len(lines); k++ {
						end = end || strings.Contains(lines[k], lea) && strings.Contains(lines[k+1], "shr    $0xc,%") &&
							strings.Contains(lines[k+2], "cmp ")
					}
					if !end {
						t.Errorf("%s: no compare of one end's page with the partner's slot:\n%s", fn, strings.Join(lines, "\n"))
					}
				}
			}
			span, want, got, out := runDriver(t, dir, "testdata/straddle_main.c", inst, rt)
			if len(span) == 0 || len(want) < 40 {
				t.Fatalf("the driver printed %d pages of a buffer of %d:\n%s", len(want), len(span), out)
			}
			if wrong := wrongKinds(span, want, got); len(wrong) > 0 {
				t.Errorf("%d of %d pages wrong: %v", len(wrong), len(span), head(wrong))
			}
		})
	}
}

// runDriver links the instrumented object inst with a driver (the C file
// src, compiled -O2) and the runtime rt in dir, runs the program traced,
// and returns what the driver printed: the pages of the extents it names
// ("span 0xADDR PAGES", every page of each), the kinds of the pages it
// touched ("page 0x... KINDS"; printedKinds) and its output; and the
// kinds of the trace's pages (tracedKinds). wrongKinds over the span
// then finds pages missing, extra or of other kinds.
func runDriver(t *testing.T, dir, src, inst, rt string) (span []uint64, want, got map[uint64]string, out []byte) {
	t.Helper()
	drv := testutil.Compile(t, dir, "gcc", src, "-O2")
	exe := filepath.Join(dir, "app")
	testutil.Link(t, "gcc", exe, drv, inst, rt, "-lpthread")
	out, vpt := runTraced(t, exe)
	for _, line := range strings.Split(string(out), "\n") {
		var at, n uint64
		if _, err := fmt.Sscanf(line, "span 0x%x %d", &at, &n); err == nil {
			for p := at >> 12; p < at>>12+n; p++ {
				span = append(span, p)
			}
		}
	}
	tr, err := trace.Load(vpt)
	if err != nil {
		t.Fatal(err)
	}
	return span, printedKinds(out), tracedKinds(tr.Threads), out
}

package vptrace_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"hijack/internal/testutil"
	"hijack/vptrace/abi"
	"hijack/vptrace/trace"
)

// TestSecondSlots runs accessors that trade two pages back and forth at
// each of their sites (testdata/seconds.c: sites outside loops, which get
// a second last-page slot): the object declares more slots than sites,
// the parent's trace holds every page the accessors touched, and so does
// a fork child's where its slots are zeroed in the child (tls indirect).
// With tls indirect the runtime maps each thread's slot array: one sized
// by the sites alone would be a page short of the second slots.
func TestSecondSlots(t *testing.T) {
	testutil.Need(t, "gcc")
	rt := runtimeArchive(t)
	for _, tls := range []string{"local-exec", "initial-exec", "indirect/shared"} {
		t.Run(tls, func(t *testing.T) {
			tls, shared := strings.CutSuffix(tls, "/shared")
			dir := t.TempDir()
			drv := testutil.Compile(t, dir, "gcc", "testdata/seconds_main.c", "-O2")
			exe := filepath.Join(dir, "app")
			var inst string
			if shared {
				inst = instrument(t, testutil.Compile(t, dir, "gcc", "testdata/seconds.c", "-O2", "-fPIC"), "tls="+tls)
				so := filepath.Join(dir, "libseconds.so")
				testutil.Link(t, "gcc", so, "-shared", inst, "-L"+runtimeDir, "-lvptrace", "-Wl,-rpath,"+runtimeDir)
				testutil.Link(t, "gcc", exe, drv, so, "-Wl,-rpath,"+dir)
			} else {
				inst = instrument(t, testutil.Compile(t, dir, "gcc", "testdata/seconds.c", "-O2"), "tls="+tls)
				testutil.Link(t, "gcc", exe, drv, inst, rt, "-lpthread")
			}
			d := descriptor(t, inst)
			if d.Flags&abi.FlagSlots == 0 || d.NSlots != 2*d.NSites || d.NSites < 600 {
				t.Fatalf("descriptor: %d sites, flags %#x, %d slots; want 600 sites or more, each with a second slot", d.NSites, d.Flags, d.NSlots)
			}
			vpt := filepath.Join(dir, "app.vpt")
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), "VPTRACE_OUT="+vpt)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v (the child's sum is wrong, or it crashed)\n%s", err, out)
			}
			want := map[uint64]bool{}
			child := 0
			for _, line := range strings.Split(string(out), "\n") {
				var p uint64
				if _, err := fmt.Sscanf(line, "page 0x%x", &p); err == nil {
					want[p>>12] = true
				}
				fmt.Sscanf(line, "child %d", &child)
			}
			missing := func(file string) []string {
				tr, err := trace.Load(file)
				if err != nil {
					t.Fatal(err)
				}
				got := map[uint64]bool{}
				for _, th := range tr.Threads {
					for p := range th.Pages {
						got[p] = true
					}
				}
				var miss []string
				for p := range want {
					if !got[p] {
						miss = append(miss, hex(p))
					}
				}
				return miss
			}
			if m := missing(vpt); len(m) > 0 {
				t.Errorf("the parent's trace misses %d of %d pages: %v", len(m), len(want), head(m))
			}
			// (local-exec and initial-exec slots are copied into the
			// child as they are: ABI.md, "Fork")
			if shared {
				if m := missing(filepath.Join(dir, fmt.Sprintf("app.%d.vpt", child))); len(m) > 0 {
					t.Errorf("the fork child's trace misses %d of %d pages: %v", len(m), len(want), head(m))
				}
			}
		})
	}
}

// TestSecondSlotRule checks which sites get a second slot, from the slots
// the instrumented code of each function of testdata/tables.c compares
// pages with (tls local-exec): a site outside loops, and a look-up in a
// loop whose index its definition bounds to a table of up to two pages;
// not a look-up by an unbounded index.
func TestSecondSlotRule(t *testing.T) {
	eachCompiler(t, "testdata/tables.c", func(t *testing.T, inst string) {
		for _, c := range []struct {
			fn    string
			slots int
		}{
			{"accessor", 2}, // no loop
			{"bytes", 2},    // tab[x[i]], x bytes: 256 entries of 8 bytes
			{"shifted", 2},  // tab[x[i] >> 53]: 2048 ints
			{"masked", 2},   // tab[x[i] & 1023]: 1024 longs
			{"words", 1},    // tab[x[i]], x 32-bit
			{"wide", 1},     // tab[x[i] >> 40]: 2^24 ints
			{"halved", 1},   // tab[x[i] >> 1]: 2^63 longs (the byte count overflows)
		} {
			if got := comparedSlots(t, disasm(t, inst, c.fn)); len(got) != c.slots {
				t.Errorf("%s: compares with slots %#x, want %d slots", c.fn, got, c.slots)
			}
		}
	})
}

// foldedMoves counts the second-slot moves made through a register the
// cache probe pushed (`mov SLOT,%r; mov %r,SECOND`, then the new page into
// SLOT) in objdump's disassembly, and the moves made memory to memory
// through the stack (`pop` into memory).
func foldedMoves(dis []byte) (folded, stacked int) {
	lines := strings.Split(string(dis), "\n")
	for i := 1; i+1 < len(lines); i++ {
		from, to := slotToReg.FindStringSubmatch(lines[i]), regToSlot.FindStringSubmatch(lines[i+1])
		if from != nil && to != nil && from[2] == to[1] && strings.Contains(lines[i-1], "\tpush ") {
			folded++
		}
		if popToMem.MatchString(lines[i]) {
			stacked++
		}
	}
	return folded, stacked
}

// selfReloads counts, in a function's objdump -dr lines, the calls of a
// stub vpt_slow_R just after R was loaded through itself from a slot: the
// slots' offset from the GOT into R (initial-exec: mov %fs:OFF(R),R next;
// indirect: mov %fs:(R),R, the array, then mov OFF(R),R), then at most a
// shift and pops before the call.
func selfReloads(lines []string) int {
	n := 0
	for i := range lines {
		m := slowCall.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		r := m[1]
		for j := i - 1; j >= max(0, i-6); j-- {
			if strings.Contains(lines[j], "R_X86_64_GOTTPOFF\t__vpt_slots_") {
				if j > 0 && strings.Contains(lines[j-1], "(%rip),%"+r+" ") && strings.Contains(lines[j+1], "(%"+r+"),%"+r) {
					n++
				}
				break
			}
		}
	}
	return n
}

// slowCall matches the relocation of a call of a stub vpt_slow_R.
var slowCall = regexp.MustCompile(`R_X86_64_GOTPCRELX\tvpt_slow_(r\w+)-0x4`)

// foldedMoves' patterns: a load of a memory word into a register, a store
// of a register into a memory word, a pop into memory.
var (
	slotToReg = regexp.MustCompile(`\tmov +(\S*\(\S+\)|%fs:\S+),(%r\w+)$`)
	regToSlot = regexp.MustCompile(`\tmov +(%r\w+),(\S*\(\S+\)|%fs:\S+)$`)
	popToMem  = regexp.MustCompile(`\tpop +(\S*\(|%fs:)`)
)

// TestSecondSlotFold runs a function without loops whose every general
// register holds a value at its sites (testdata/starved.c), on three pages
// in turn: each of its sites misses both its last-page slots at every call,
// moves the slot's page to the second slot through a register the cache
// probe pushes, and probes. The results and the stores must be those of
// the function not instrumented (a register the move took and did not
// give back changes them), and the trace must have every page with its
// kinds (a slot written with a page not recorded would lose one).
func TestSecondSlotFold(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	rt := runtimeArchive(t)
	for _, c := range []string{"-O2/local-exec", "-O2/initial-exec", "-O1/indirect", "-O3/indirect"} {
		t.Run(c, func(t *testing.T) {
			opt, tls, _ := strings.Cut(c, "/")
			dir := t.TempDir()
			drv := testutil.Compile(t, dir, "gcc", "testdata/starved_main.c", "-O2")
			inst := instrument(t, testutil.Compile(t, dir, "gcc", "testdata/starved.c", opt), "tls="+tls)
			exe := filepath.Join(dir, "app")
			testutil.Link(t, "gcc", exe, drv, inst, rt, "-lpthread")
			if folded, stacked := foldedMoves(disassembly(t, inst)); folded < 3 || stacked > 0 {
				t.Fatalf("%d second-slot moves through a pushed register (want 3 or more), %d through the stack (want none)", folded, stacked)
			}
			// The probes take the page's register as their third and
			// reload the page from the slot on a miss: initial-exec and
			// indirect through that register itself (snippet.go, probeS).
			if n := selfReloads(disasm(t, inst, "starved")); tls != "local-exec" && n < 3 {
				t.Errorf("%d probe misses reload the page through its own register, want 3 or more", n)
			}
			out, vpt := runTraced(t, exe, "VPTRACE_INTERVAL_MS=100000")
			want := printedKinds(out)
			if len(want) != 9 {
				t.Fatalf("the driver printed %d pages, want 9:\n%s", len(want), out)
			}
			tr, err := trace.Load(vpt)
			if err != nil {
				t.Fatal(err)
			}
			if wrong := wrongKinds(slices.Sorted(maps.Keys(want)), want, tracedKinds(tr.Threads)); len(wrong) > 0 {
				t.Errorf("%d of %d pages with the wrong kinds: %v", len(wrong), len(want), wrong)
			}
		})
	}
}

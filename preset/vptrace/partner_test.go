package vptrace_test

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"hijack/internal/testutil"
)

// TestPartners checks whom the sites of gtu (testdata/sweeps.c: bzip2's
// unrolled suffix compare) compare their page with first, from the
// instrumented object's disassembly (objdump -dr; with tls local-exec the
// slots are TLS words that R_X86_64_TPOFF32 relocations against
// __vpt_slots_* name). Each step
// computes its indices afresh from the arguments, so every later block[i1]
// access should partner the first one and every later block[i2] access the
// second: not the nearest access through the same base (the other
// suffix's: the first block[i2] access has no partner at all), nor a later step of its own suffix (a site that matched its
// partner leaves its own slot stale). TestSweepsExact runs gtu across page
// boundaries: the pages are what they were.
func TestPartners(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	for _, opt := range []string{"-O2", "-O3"} {
		t.Run(opt, func(t *testing.T) {
			dir := t.TempDir()
			inst := instrument(t, testutil.Compile(t, dir, "gcc", "testdata/sweeps.c", opt), "tls=local-exec")
			sites := slotCompares(t, disasm(t, inst, "gtu"))
			if len(sites) < 8 {
				t.Fatalf("gtu: %d sites with slot compares, want at least 8 (two per step)", len(sites))
			}
			// A site's own slot comes after its partner's, if any; a
			// second slot (gtu has no loop) after its own. The first
			// block[i2] access has no partner: the block[i1] access
			// before it goes through the same base with another index,
			// and is on another page mostly (a compare that would miss).
			own := func(k int) int64 { return sites[k][0] }
			if slices.Contains(sites[1], own(0)) {
				t.Errorf("gtu site 1 compares with slots %#x, among them site 0's own %#x: want no partner (another index)", sites[1], own(0))
			}
			for k := 2; k < len(sites); k++ {
				if n := len(sites[k]); n < 2 || n > 3 || sites[k][0] != own(k%2) || slices.Contains(sites[k][1:], own(k%2)) {
					t.Errorf("gtu site %d compares with slots %#x, want its partner %#x (site %d) first, then its own (and its second)", k, sites[k], own(k%2), k%2)
				}
			}
		})
	}
}

// disasm returns the lines of function fn in objdump -dr's disassembly of
// obj (instructions and relocations).
func disasm(t *testing.T, obj, fn string) []string {
	t.Helper()
	out, err := exec.Command("objdump", "-dr", "--no-show-raw-insn", obj).Output()
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(out), "<"+fn+">:\n")
	if !ok {
		t.Fatalf("%s: no function %s", obj, fn)
	}
	body, _, _ = strings.Cut(body, "\n\n")
	return strings.Split(body, "\n")
}

// comparedSlots returns the addends of the slot words a function's
// inserted code compares pages with (disasm lines, tls local-exec), each
// once, in order.
func comparedSlots(t *testing.T, lines []string) []int64 {
	t.Helper()
	var slots []int64
	cmp := false
	for _, line := range lines {
		if add, ok := slotAddend(t, line, cmp); ok && !slices.Contains(slots, add) {
			slots = append(slots, add)
		}
		cmp = isSlotCompare(line)
	}
	return slots
}

// slotAddend returns the addend of the slot word a relocation line of
// objdump -dr names, when it follows a compare (cmp: the previous line
// was one, isSlotCompare).
func slotAddend(t *testing.T, line string, cmp bool) (int64, bool) {
	t.Helper()
	f := strings.Fields(line)
	if !cmp || len(f) < 3 || !strings.HasPrefix(f[1], "R_X86_64_TPOFF32") || !strings.HasPrefix(f[2], "__vpt_slots_") {
		return 0, false
	}
	_, a, ok := strings.Cut(f[2], "+0x")
	if !ok {
		return 0, true
	}
	v, err := strconv.ParseInt(a, 16, 64)
	if err != nil {
		t.Fatalf("relocation %q: %v", line, err)
	}
	return v, true
}

// isSlotCompare reports whether an objdump line is a compare with a
// TLS word (a slot, with tls local-exec): a cmp, or the sub of a site
// that checks two slots with one branch (ABI.md "Two slots, one branch").
func isSlotCompare(line string) bool {
	f := strings.Fields(line)
	return len(f) >= 2 && (f[1] == "cmp" || f[1] == "sub") && strings.Contains(line, "%fs:")
}

// slotCompares returns, for each access in a function's lines (disasm),
// the addends of the slot words its inserted code compares the page with,
// in order (the last is the site's own slot).
func slotCompares(t *testing.T, lines []string) [][]int64 {
	t.Helper()
	var sites [][]int64
	var cur []int64
	cmp := false
	for _, line := range lines {
		if add, ok := slotAddend(t, line, cmp); ok {
			cur = append(cur, add)
			continue
		}
		cmp = isSlotCompare(line)
		f := strings.Fields(line)
		// the access itself: a byte load from the block, after its checks
		if len(f) >= 3 && f[1] == "movzbl" && strings.HasPrefix(f[2], "(%") && cur != nil {
			sites = append(sites, cur)
			cur = nil
		}
	}
	return sites
}

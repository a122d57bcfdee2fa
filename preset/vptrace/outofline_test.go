package vptrace_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"hijack/internal/testutil"
)

// probesAndReturns returns, per function of an objdump -d listing, the
// offsets of the cache probes' set masks (and $0x3fff0) and of the last
// ret.
func probesAndReturns(dis []byte) (probes map[string][]uint64, lastRet map[string]uint64) {
	probes, lastRet = make(map[string][]uint64), make(map[string]uint64)
	fn := ""
	sc := bufio.NewScanner(bytes.NewReader(dis))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasSuffix(line, ">:") {
			fn = line[strings.Index(line, "<")+1 : len(line)-2]
			continue
		}
		addr, insn, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		off, err := strconv.ParseUint(strings.TrimSpace(addr), 16, 64)
		if err != nil {
			continue
		}
		switch f := strings.Fields(insn); {
		case len(f) == 0:
		case f[0] == "ret":
			lastRet[fn] = off
		case f[0] == "and" && strings.HasPrefix(f[1], "$0x3fff0,"):
			probes[fn] = append(probes[fn], off)
		}
	}
	return probes, lastRet
}

// TestOutOfLine: a site's code after a slot miss goes after its
// function's last instruction (lcg: every probe past the last ret), but a
// scattered site's cache probe stays inline (chase: one before it); both
// instrumented programs print what the original prints.
func TestOutOfLine(t *testing.T) {
	testutil.Need(t, "gcc", "objdump")
	rt := runtimeArchive(t)
	for _, opt := range []string{"-O1", "-O2", "-O3"} {
		t.Run(opt, func(t *testing.T) {
			dir := t.TempDir()
			drv := testutil.Compile(t, dir, "gcc", "testdata/outofline_main.c", "-O2")
			orig := testutil.Compile(t, dir, "gcc", "testdata/outofline.c", opt)
			inst := instrument(t, orig)
			probes, lastRet := probesAndReturns(disassembly(t, inst))
			if len(probes["lcg"]) == 0 || len(probes["chase"]) == 0 {
				t.Fatalf("cache probes: lcg %d, chase %d (want some in each)", len(probes["lcg"]), len(probes["chase"]))
			}
			for _, p := range probes["lcg"] {
				if p < lastRet["lcg"] {
					t.Errorf("lcg: a cache probe at %#x, inline (before the last ret at %#x)", p, lastRet["lcg"])
				}
			}
			if p := probes["chase"][0]; p > lastRet["chase"] {
				t.Errorf("chase: the first cache probe at %#x, out of line (after the last ret at %#x)", p, lastRet["chase"])
			}
			plain, exe := filepath.Join(dir, "plain"), filepath.Join(dir, "app")
			testutil.Link(t, "gcc", plain, drv, orig) // (no runtime: it would write a trace here)
			testutil.Link(t, "gcc", exe, drv, inst, rt, "-lpthread")
			want, err := exec.Command(plain).Output()
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := runTraced(t, exe); !bytes.Equal(got, want) {
				t.Errorf("instrumented: %q, original: %q", got, want)
			}
		})
	}
}

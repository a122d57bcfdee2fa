package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// gdb must see the same call stack in rewritten code as in the original:
// the program crashes (SIGSEGV, or abort()) several frames deep and the
// backtraces must list the same function names in the same order. gdb must
// also be able to stop at a breakpoint on a rewritten function and `finish`
// it with the same return value. Backtraces need correct .eh_frame (CFI),
// symbol values and sizes; line numbers are logged but not required to
// match (they also depend on .debug_line).

var gdbConfigs = []struct {
	name  string
	flags []string
}{
	{"O0", []string{"-O0", "-g"}},
	{"O2", []string{"-O2", "-g"}},
}

// the frames the crash must show, innermost first, in the original build
var gdbWantFrames = []string{"crash_here", "inspect", "descend", "descend", "walk", "run", "main"}

var (
	gdbFrame   = regexp.MustCompile(`(?m)^#(\d+)\s+(?:0x[0-9a-f]+ in )?([A-Za-z_][\w:.<>~]*)\s*\(.*?\)(?:\s+(?:at|from)\s+(\S+))?`)
	gdbValue   = regexp.MustCompile(`(?m)^Value returned is \$\d+ = (.*)$`)
	gdbBreakAt = regexp.MustCompile(`(?m)^Breakpoint 1, (?:0x[0-9a-f]+ in )?([A-Za-z_]\w*) `)
)

type gdbFrameInfo struct{ fn, where string }

func parseBacktrace(out string) []gdbFrameInfo {
	var fs []gdbFrameInfo
	for _, m := range gdbFrame.FindAllStringSubmatch(out, -1) {
		fs = append(fs, gdbFrameInfo{fn: m[2], where: m[3]})
	}
	return fs
}

func frameNames(fs []gdbFrameInfo) []string {
	var s []string
	for _, f := range fs {
		s = append(s, f.fn)
	}
	return s
}

func runGdb(t *testing.T, gdb, dir string, cmds []string, prog string, args ...string) result {
	t.Helper()
	a := []string{"-batch", "-nx", "-iex", "set debuginfod enabled off", "-iex", "set auto-load safe-path /"}
	for _, c := range cmds {
		a = append(a, "-ex", c)
	}
	a = append(a, "--args", prog)
	a = append(a, args...)
	r := mustRun(t, spec{Dir: dir, Timeout: 2 * time.Minute}, gdb, a...)
	if r.TimedOut {
		t.Fatalf("gdb timed out: %s", cmdline(gdb, a...))
	}
	return r
}

func TestGdb(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	gdb := needTool(t, "gdb", "gdb")
	srcs := []string{testdata("gdb", "main.c"), testdata("gdb", "deep.c")}
	for _, c := range gdbConfigs {
		c := c
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var objs []string
			for _, s := range srcs {
				objs = append(objs, compile(t, "gcc", c.flags, s))
			}
			dir := workDir(t)
			orig, outs := rewriteAll(t, cfg.rules, objs, dir)
			origBin := filepath.Join(dir, "prog.orig")
			newBin := filepath.Join(dir, "prog.rewritten")
			link(t, "gcc", origBin, orig)
			link(t, "gcc", newBin, outs, linkRewritten()...)

			for _, mode := range []string{"segv", "abort"} {
				cmds := []string{"run", "bt"}
				want := runGdb(t, gdb, dir, cmds, origBin, mode)
				got := runGdb(t, gdb, dir, cmds, newBin, mode)
				wf, gf := parseBacktrace(string(want.Stdout)), parseBacktrace(string(got.Stdout))
				wn, gn := frameNames(wf), frameNames(gf)
				if !containsSeq(wn, gdbWantFrames) {
					t.Fatalf("%s: the original's backtrace lacks %v (test problem):\n%s", mode, gdbWantFrames, want.Stdout)
				}
				if strings.Join(wn, " ") != strings.Join(gn, " ") {
					writeFile(t, filepath.Join(dir, mode+".orig.gdb"), want.Stdout)
					writeFile(t, filepath.Join(dir, mode+".rewritten.gdb"), got.Stdout)
					t.Errorf("%s: backtrace differs\n  original:  %s\n  rewritten: %s\nrewritten gdb output:\n%s\nartifacts kept in %s",
						mode, strings.Join(wn, " <- "), strings.Join(gn, " <- "), tail(got.Stdout, 3000), rel(dir))
					continue
				}
				for i := range wf {
					if wf[i].where != gf[i].where {
						t.Logf("%s: frame #%d %s is at %s in the original, %s rewritten", mode, i, wf[i].fn, wf[i].where, gf[i].where)
					}
				}
			}

			// break at a function in a rewritten object, then finish it
			cmds := []string{"break inspect", "run", "bt", "finish"}
			want := runGdb(t, gdb, dir, cmds, origBin, "ok")
			got := runGdb(t, gdb, dir, cmds, newBin, "ok")
			summary := func(r result) (string, error) {
				out := string(r.Stdout)
				b := gdbBreakAt.FindStringSubmatch(out)
				v := gdbValue.FindStringSubmatch(out)
				if b == nil || v == nil {
					return "", fmt.Errorf("no breakpoint stop or no returned value")
				}
				return fmt.Sprintf("stopped in %s; stack %s; finish returned %s", b[1], strings.Join(frameNames(parseBacktrace(out)), " <- "), v[1]), nil
			}
			ws, err := summary(want)
			if err != nil || !strings.HasPrefix(ws, "stopped in inspect;") {
				t.Fatalf("break/finish on the original: %v %q (test problem):\n%s", err, ws, want.Stdout)
			}
			gs, err := summary(got)
			if err != nil || gs != ws {
				writeFile(t, filepath.Join(dir, "break.orig.gdb"), want.Stdout)
				writeFile(t, filepath.Join(dir, "break.rewritten.gdb"), got.Stdout)
				t.Errorf("break/finish differs\n  original:  %s\n  rewritten: %s %v\nrewritten gdb output:\n%s\nartifacts kept in %s",
					ws, gs, err, tail(got.Stdout, 3000), rel(dir))
			}
		})
	}
}

// containsSeq reports whether want appears in s as a contiguous run.
func containsSeq(s, want []string) bool {
	for i := 0; i+len(want) <= len(s); i++ {
		ok := true
		for j := range want {
			if s[i+j] != want[j] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

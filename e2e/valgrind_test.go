package e2e

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// Valgrind: rewritten programs run under memcheck must report no errors
// (invalid reads or writes, uses of uninitialised values, bad frees) and
// print what the originals print. Instrumentation that scribbles on the
// stack or reads registers it did not save tends to show up here first.

var valgrindMsg = regexp.MustCompile(`(?m)^==\d+== `)

func TestValgrind(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	vg := needTool(t, "valgrind", "valgrind")
	progs := []struct {
		name string
		cc   string
		srcs []string
		args []string
	}{
		{"demo", "gcc", []string{"demo/main.c", "demo/hashtab.c", "demo/text.c"}, []string{"-n", "5", testdata("demo", "input.txt")}},
		{"cxx", "g++", []string{"cxx/main.cpp", "cxx/thrower.cpp", "cxx/shapes.cpp"}, nil},
	}
	for _, p := range progs {
		p := p
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			flags := []string{"-O2", "-g"}
			if p.cc == "g++" {
				flags = append(flags, "-std=c++17")
			}
			var objs []string
			for _, s := range p.srcs {
				objs = append(objs, compile(t, p.cc, flags, testdata(s)))
			}
			dir := workDir(t)
			orig, outs := rewriteAll(t, cfg.rules, objs, dir)
			origBin, newBin := filepath.Join(dir, "prog.orig"), filepath.Join(dir, "prog.rewritten")
			link(t, p.cc, origBin, orig)
			link(t, p.cc, newBin, outs, linkRewritten()...)
			args := func(bin string) []string {
				return append(append([]string{"-q", "--fair-sched=yes", "--error-exitcode=99", "--leak-check=no"}, runtimeSuppressions(t)...), append([]string{bin}, p.args...)...)
			}
			s := spec{Dir: dir, CPU: 2 * time.Minute, Timeout: 10 * time.Minute}
			want := mustRun(t, s, vg, args(origBin)...)
			if want.Exit != 0 {
				t.Fatalf("the original fails under valgrind (%s):\n%s", want.status(), tail(want.Stderr, 3000))
			}
			got := mustRun(t, s, vg, args(newBin)...)
			if got.Exit == 99 || valgrindMsg.Match(got.Stderr) && !valgrindMsg.Match(want.Stderr) {
				writeFile(t, filepath.Join(dir, "valgrind.rewritten.err"), got.Stderr)
				t.Errorf("valgrind reports errors in the rewritten program:\n%s\nartifacts kept in %s", tail(got.Stderr, 4000), rel(dir))
				return
			}
			compareRuns(t, dir, p.name+" under valgrind", want, got)
		})
	}
}

// runtimeSuppressions: when the rewritten programs link the vptrace
// runtime (HIJACK_LDLIBS names libvptrace.a or .so), its valgrind
// suppressions (vptrace.supp beside it, installed by make build): the
// runtime's Go part switches stacks, which memcheck reports as errors in
// Go code (runtime.adjustframe in copystack, ...), at random.
func runtimeSuppressions(t *testing.T) []string {
	t.Helper()
	for _, l := range cfg.ldlibs {
		if b := filepath.Base(l); b == "libvptrace.a" || b == "libvptrace.so" {
			supp := needFile(t, filepath.Join(filepath.Dir(l), "vptrace.supp"), "the runtime's valgrind suppressions: make build")
			return []string{"--suppressions=" + supp}
		}
	}
	return nil
}

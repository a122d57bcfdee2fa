package e2e

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// C++ exceptions: thrown in one rewritten translation unit, caught several
// frames up in another, with RAII destructors, catch by base class,
// rethrow, nested try, exception_ptr, noexcept functions and vector growth.
// Unwinding reads .eh_frame and .gcc_except_table, so this fails when the
// rewriter does not carry the unwind tables along with the moved code.

var cxxConfigs = []struct {
	name  string
	cxx   string
	flags []string
}{
	{"gxx-O0", "g++", []string{"-O0"}},
	{"gxx-O2", "g++", []string{"-O2"}},
	{"clangxx-O2", "clang++", []string{"-O2"}},
}

func TestCxxExceptions(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	srcs, _ := filepath.Glob(testdata("cxx", "*.cpp"))
	if len(srcs) < 3 {
		t.Fatalf("want the C++ sources in %s", testdata("cxx"))
	}
	for _, c := range cxxConfigs {
		c := c
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			needTool(t, c.cxx, map[string]string{"g++": "g++", "clang++": "clang"}[c.cxx])
			flags := append([]string{"-std=c++17", "-g"}, c.flags...)
			var objs []string
			for _, s := range srcs {
				objs = append(objs, compile(t, c.cxx, flags, s))
			}
			dir := workDir(t)
			orig, outs := rewriteAll(t, cfg.rules, objs, dir)
			origBin := filepath.Join(dir, "prog.orig")
			newBin := filepath.Join(dir, "prog.rewritten")
			link(t, c.cxx, origBin, orig)
			link(t, c.cxx, newBin, outs, linkRewritten()...)
			s := spec{Dir: dir, CPU: 30 * time.Second, Timeout: 5 * time.Minute}
			want := mustRun(t, s, origBin)
			if want.Exit != 0 || !bytes.Contains(want.Stdout, []byte("all checks passed")) {
				t.Fatalf("the original program fails its own checks (%s):\n%s", want.status(), tail(want.Stdout, 2000))
			}
			got := mustRun(t, s, newBin)
			if compareRuns(t, dir, c.name, want, got) {
				return
			}
			if strings.Contains(string(got.Stdout), "std::terminate called") || got.Signal == "aborted" {
				t.Log("the rewritten program reached std::terminate: an exception found no handler (check .eh_frame / .gcc_except_table)")
			}
		})
	}
}

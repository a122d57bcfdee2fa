package e2e

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Indirect jumps (issue 10): the programs of testdata/src that reproduce
// two silent miscompiles, and the jump-table forms, rewritten with the
// rules under test and run against the originals. Under `make e2e` the
// rules are pad's; `make e2e-clobber` (clobber destroys whatever liveness
// calls dead) and `make e2e-vptrace` run them again: a dispatch given the
// wrong table, or a tail call taken for a dispatch, changes what they
// print.
//
//   - dispatch_hoisted.c: two switches whose table bases gcc hoists before
//     the loop (pcre2's find_minlength, gcc -O2 -fPIC);
//   - dispatch_tailcall.c: a switch table then an indirect tail call
//     through a table of function pointers (xz's lzma_properties_decode,
//     clang -O2): prints 11109 first;
//   - jumptables.c: hoisted bases, split sparse switches, several tables
//     per function, a byte's 256 values, bases across calls, nested
//     switches.
//
// And libstdc++.a, rewritten whole, linked into testdata/src/
// libstdcxx_mix.cpp and the C++ exceptions program: its virtual tail
// calls (jmp *0x10(%rax)) are unresolved jumps taken as tail calls, its
// .cold parts jumped into with anything live.
//
// cfg's unit tests (cfg/jumptable_test.go) check the tables themselves.
func TestDispatch(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	progs := []struct {
		src  string
		want string // the original must print this first
	}{
		{"dispatch_hoisted.c", "minlen 81\n"},
		{"dispatch_tailcall.c", "11109 "},
		{"jumptables.c", "two_clusters "},
	}
	builds := []struct {
		cc    string
		flags []string
	}{
		{"gcc", []string{"-O2", "-fPIC"}},
		{"gcc", []string{"-O3", "-fno-pie"}},
		{"gcc", []string{"-O0"}},
		{"clang", []string{"-O2"}},
		{"clang", []string{"-O2", "-fPIC"}},
		{"clang", []string{"-O0"}},
	}
	t.Run("libstdcxx", func(t *testing.T) {
		t.Parallel()
		needTool(t, "g++", "g++")
		out, err := exec.Command("g++", "-print-file-name=libstdc++.a").Output()
		lib := strings.TrimSpace(string(out))
		if err != nil || !filepath.IsAbs(lib) {
			missing(t, "g++ -print-file-name=libstdc++.a: %v %q (libstdc++-12-dev)", err, lib)
		}
		needFile(t, lib, "libstdc++-12-dev")
		srcs, _ := filepath.Glob(testdata("cxx", "*.cpp"))
		dir := workDir(t)
		rw := filepath.Join(dir, "libstdc++.a")
		if err := rewrite(cfg.rules, lib, rw); err != nil {
			t.Fatal(err)
		}
		for _, prog := range []struct {
			name string
			srcs []string
			want string
		}{
			{"mix", []string{filepath.Join(cfg.root, "testdata", "src", "libstdcxx_mix.cpp")}, ""},
			{"cxx", srcs, "all checks passed"},
		} {
			var objs []string
			for _, src := range prog.srcs {
				objs = append(objs, compile(t, "g++", []string{"-std=c++17", "-O2"}, src))
			}
			// gcc links no libstdc++ of its own: the archive given is the
			// one used.
			origBin, newBin := filepath.Join(dir, prog.name+".orig"), filepath.Join(dir, prog.name+".rewritten")
			link(t, "gcc", origBin, append(slices.Clone(objs), lib), "-lm")
			link(t, "gcc", newBin, append(slices.Clone(objs), rw), linkRewritten("-lm")...)
			s := spec{Dir: dir, CPU: 30 * time.Second, Timeout: 2 * time.Minute}
			want := mustRun(t, s, origBin)
			if want.Exit != 0 || !strings.Contains(string(want.Stdout), prog.want) {
				t.Fatalf("%s: the original fails (%s):\n%s", prog.name, want.status(), tail(want.Stdout, 2000))
			}
			compareRuns(t, dir, "libstdc++ "+prog.name, want, mustRun(t, s, newBin))
		}
	})
	for _, p := range progs {
		for _, b := range builds {
			p, b := p, b
			name := strings.TrimSuffix(p.src, ".c") + "/" + b.cc + strings.Join(b.flags, "")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				needTool(t, b.cc, map[string]string{"gcc": "gcc", "clang": "clang"}[b.cc])
				obj := compile(t, b.cc, append([]string{"-g"}, b.flags...), filepath.Join(cfg.root, "testdata", "src", p.src))
				dir := workDir(t)
				orig, outs := rewriteAll(t, cfg.rules, []string{obj}, dir)
				var ld []string
				if b.flags[len(b.flags)-1] == "-fno-pie" {
					ld = append(ld, "-no-pie")
				}
				origBin, newBin := filepath.Join(dir, "prog.orig"), filepath.Join(dir, "prog.rewritten")
				link(t, b.cc, origBin, orig, ld...)
				link(t, b.cc, newBin, outs, linkRewritten(ld...)...)
				s := spec{Dir: dir, CPU: 30 * time.Second, Timeout: 2 * time.Minute}
				want := mustRun(t, s, origBin)
				if want.Exit != 0 || !strings.HasPrefix(string(want.Stdout), p.want) {
					t.Fatalf("the original prints %q (%s), want %q first", tail(want.Stdout, 500), want.status(), p.want)
				}
				got := mustRun(t, s, newBin)
				compareRuns(t, dir, name, want, got)
			})
		}
	}
}

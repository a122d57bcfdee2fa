package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// Debian's static libraries: every member is rewritten, a new archive is
// built, and programs linked against the original and the rewritten archive
// must behave the same. TestArchive uses drivers from e2e/testdata;
// TestUpstream builds the libraries' own test programs from the Debian
// source packages (fetched by scripts/deps.sh into .cache/debsrc).
//
// Lua's own test suite (lua-5.4.x-tests) is not part of Debian's lua5.4
// source package, so only the standalone interpreter lua.c is used.

const multiarchLib = "/usr/lib/x86_64-linux-gnu"

type debLib struct {
	archive string   // file name in multiarchLib
	pkg     string   // Debian package providing it
	src     string   // Debian source package (directory under .cache/debsrc)
	cflags  []string // for programs using it
	ldlibs  []string // what linking it needs besides the archive
}

var debLibs = map[string]debLib{
	"zlib":   {archive: "libz.a", pkg: "zlib1g-dev", src: "zlib"},
	"lua":    {archive: "liblua5.4.a", pkg: "liblua5.4-dev", src: "lua5.4", cflags: []string{"-I/usr/include/lua5.4"}, ldlibs: []string{"-lm", "-ldl"}},
	"sqlite": {archive: "libsqlite3.a", pkg: "libsqlite3-dev", src: "sqlite3", ldlibs: []string{"-lm", "-ldl", "-lpthread"}},
}

func needArchive(t testing.TB, lib debLib) string {
	t.Helper()
	return needFile(t, filepath.Join(multiarchLib, lib.archive), "Debian package "+lib.pkg+"; run `make deps`")
}

func needDebSource(t testing.TB, lib debLib) string {
	t.Helper()
	dir := filepath.Join(cfg.cache, "debsrc", lib.src)
	return needFile(t, dir, "Debian source package "+lib.src+"; run `make deps` (scripts/debsrc.sh)")
}

// runCase is one invocation of a program built against both archives.
type runCase struct {
	name   string
	args   []string
	stdin  []byte
	stderr bool          // compare stderr too
	cpu    time.Duration // CPU limit (default 60s)
	// check, if set, validates the original's result (that the case is
	// meaningful); a failure here is a problem of the test, not of hijack.
	check func(r result) error
}

// archiveDiff links objs against the original archive and against the
// rewritten one, runs every case in separate directories (setup prepares
// each) and compares the results.
// It returns the work directory and the two programs.
func archiveDiff(t *testing.T, lib debLib, cc string, objs []string, setup func(t *testing.T, dir string), cases []runCase) (dir, origBin, newBin string) {
	archive := needArchive(t, lib)
	newArchive := rewrittenArchive(t, cfg.rules, archive)
	dir = workDir(t)
	origBin = filepath.Join(dir, "prog.orig")
	newBin = filepath.Join(dir, "prog.rewritten")
	link(t, cc, origBin, append(append([]string{}, objs...), archive), lib.ldlibs...)
	link(t, cc, newBin, append(append([]string{}, objs...), newArchive), linkRewritten(lib.ldlibs...)...)
	for i, c := range cases {
		cpu := c.cpu
		if cpu == 0 {
			cpu = time.Minute
		}
		var res [2]result
		for k, bin := range []string{origBin, newBin} {
			rd := filepath.Join(dir, fmt.Sprintf("run%02d-%s", i, []string{"orig", "rewritten"}[k]))
			if err := os.MkdirAll(rd, 0o755); err != nil {
				t.Fatal(err)
			}
			if setup != nil {
				setup(t, rd)
			}
			// run both as ./prog: programs print their argv[0]
			if err := os.Symlink(bin, filepath.Join(rd, "prog")); err != nil {
				t.Fatal(err)
			}
			res[k] = mustRun(t, spec{Dir: rd, Stdin: c.stdin, CPU: cpu, Timeout: 10 * time.Minute}, "./prog", c.args...)
			if c.stderr {
				res[k].Stdout = append(append(res[k].Stdout, "\n--- stderr ---\n"...), res[k].Stderr...)
			}
		}
		if c.check != nil {
			if err := c.check(res[0]); err != nil {
				t.Errorf("%s: the original build does not pass its own check: %v\n%s", c.name, err, tail(res[0].Stdout, 1500))
				continue
			}
		}
		compareRuns(t, dir, c.name, res[0], res[1])
	}
	return dir, origBin, newBin
}

func expectExit0(r result) error {
	if r.TimedOut || r.Exit != 0 {
		return fmt.Errorf("%s; stderr: %s", r.status(), tail(r.Stderr, 500))
	}
	return nil
}

func TestArchive(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	t.Run("zlib", func(t *testing.T) {
		t.Parallel()
		lib := debLibs["zlib"]
		obj := compile(t, "gcc", []string{"-O1", "-g"}, testdata("zlib", "driver.c"))
		archiveDiff(t, lib, "gcc", []string{obj}, nil, []runCase{
			{name: "zlib driver", check: expectExit0},
		})
	})
	t.Run("lua", func(t *testing.T) {
		t.Parallel()
		lib := debLibs["lua"]
		obj := compile(t, "gcc", append([]string{"-O1", "-g"}, lib.cflags...), testdata("lua", "driver.c"))
		scripts, _ := filepath.Glob(testdata("lua", "scripts", "*.lua"))
		if len(scripts) == 0 {
			t.Fatal("no Lua scripts in testdata/lua/scripts")
		}
		archiveDiff(t, lib, "gcc", []string{obj}, nil, []runCase{
			{name: "lua driver", args: scripts, check: expectExit0},
		})
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		lib := debLibs["sqlite"]
		obj := compile(t, "gcc", []string{"-O1", "-g"}, testdata("sqlite", "driver.c"))
		archiveDiff(t, lib, "gcc", []string{obj}, nil, []runCase{
			{name: "sqlite driver", args: []string{"test.db"}, check: expectExit0},
		})
	})
}

func TestUpstream(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)

	t.Run("zlib-example", func(t *testing.T) {
		t.Parallel()
		lib := debLibs["zlib"]
		src := needFile(t, filepath.Join(needDebSource(t, lib), "test", "example.c"), "zlib sources")
		obj := compile(t, "gcc", []string{"-O1", "-g", "-w"}, src)
		archiveDiff(t, lib, "gcc", []string{obj}, nil, []runCase{
			{name: "example", args: []string{"foo.gz"}, stderr: true, check: expectExit0},
		})
	})

	t.Run("zlib-infcover", func(t *testing.T) {
		t.Parallel()
		lib := debLibs["zlib"]
		srcDir := needDebSource(t, lib)
		src := needFile(t, filepath.Join(srcDir, "test", "infcover.c"), "zlib sources")
		// infcover tests inflate's internals: it needs the private headers
		obj := compile(t, "gcc", []string{"-O1", "-g", "-w", "-I" + srcDir}, src)
		archiveDiff(t, lib, "gcc", []string{obj}, nil, []runCase{
			{name: "infcover", stderr: true, check: expectExit0},
		})
	})

	t.Run("zlib-minigzip", func(t *testing.T) {
		t.Parallel()
		lib := debLibs["zlib"]
		src := needFile(t, filepath.Join(needDebSource(t, lib), "test", "minigzip.c"), "zlib sources")
		obj := compile(t, "gcc", []string{"-O1", "-g", "-w"}, src)
		inputs := minigzipInputs(t)
		var cases []runCase
		var names []string
		for name := range inputs {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			data := inputs[name]
			for _, opt := range []string{"-6", "-1", "-9", "-f", "-h", "-r"} {
				data := data
				cases = append(cases, runCase{
					name: "minigzip " + opt + " < " + name, args: []string{opt}, stdin: data,
					check: func(r result) error { return expectGzip(r, data) },
				})
			}
		}
		dir, a, b := archiveDiff(t, lib, "gcc", []string{obj}, nil, cases)

		// cross-check: what one build compresses the other decompresses
		for _, name := range names {
			data := inputs[name]
			for _, pair := range [][2]string{{a, b}, {b, a}} {
				gz := mustRun(t, spec{Dir: dir, Stdin: data, CPU: time.Minute}, pair[0], "-9")
				back := mustRun(t, spec{Dir: dir, Stdin: gz.Stdout, CPU: time.Minute}, pair[1], "-d")
				if back.Exit != 0 || !bytes.Equal(back.Stdout, data) {
					t.Errorf("%s: %s compressed, %s decompressed: %s, %d of %d bytes back (artifacts in %s)",
						name, filepath.Base(pair[0]), filepath.Base(pair[1]), back.status(), len(back.Stdout), len(data), rel(dir))
				}
			}
		}
	})

	t.Run("lua-standalone", func(t *testing.T) {
		t.Parallel()
		lib := debLibs["lua"]
		src := needFile(t, filepath.Join(needDebSource(t, lib), "src", "lua.c"), "lua5.4 sources")
		obj := compile(t, "gcc", append([]string{"-O1", "-g", "-DLUA_USE_LINUX"}, lib.cflags...), src)
		scripts, _ := filepath.Glob(testdata("lua", "scripts", "*.lua"))
		var cases []runCase
		for _, s := range scripts {
			data, err := os.ReadFile(s)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(data, []byte("e2e.")) {
				continue // needs the driver's C functions
			}
			cases = append(cases, runCase{name: "lua " + filepath.Base(s), args: []string{s}, stderr: true, check: expectExit0})
		}
		cases = append(cases,
			runCase{name: "lua -e", args: []string{"-e", `local t = {} for i = 1, 1e5 do t[i] = i % 7 end local s = 0 for _, v in ipairs(t) do s = s + v end print(s, #t, _VERSION)`}, check: expectExit0},
			runCase{name: "lua stdin with args", args: []string{"-", "alpha", "beta"}, stdin: []byte("print(#arg, arg[1], arg[2], ...)\nfor w in io.lines() do end\n"), check: expectExit0},
			runCase{name: "lua runtime error", args: []string{"-e", "local function f() error('boom') end f()"}, stderr: true},
			runCase{name: "lua syntax error", args: []string{"-e", "x = = 1"}, stderr: true},
			runCase{name: "lua warnings", args: []string{"-W", "-e", "warn('@on') warn('hello ', 'warn') print('after')"}, stderr: true},
			runCase{name: "lua os.exit", args: []string{"-e", "io.write('bye') os.exit(7)"}},
		)
		archiveDiff(t, lib, "gcc", []string{obj}, nil, cases)
	})

	t.Run("sqlite-shell", func(t *testing.T) {
		t.Parallel()
		lib := debLibs["sqlite"]
		srcDir := needDebSource(t, lib)
		shell := sqliteShellSource(t, srcDir)
		obj := compile(t, "gcc", []string{"-O1", "-g", "-w"}, shell)
		script, err := os.ReadFile(testdata("sqlite", "shell.sql"))
		if err != nil {
			t.Fatal(err)
		}
		setup := func(t *testing.T, dir string) {
			var b strings.Builder
			b.WriteString("id,label,amount\n")
			for i := 1; i <= 500; i++ {
				fmt.Fprintf(&b, "%d,\"label %d, quoted\",%d.%02d\n", i, i*7%101, i*13%1000, i%100)
			}
			writeFile(t, filepath.Join(dir, "data.csv"), []byte(b.String()))
		}
		archiveDiff(t, lib, "gcc", []string{obj}, setup, []runCase{
			{name: "sqlite3 shell script", args: []string{"test.db"}, stdin: script, stderr: true,
				check: func(r result) error {
					if !bytes.Contains(r.Stdout, []byte("== done")) {
						return fmt.Errorf("the script did not run to the end (%s)", r.status())
					}
					return nil
				}},
			{name: "sqlite3 shell -json -cmd", args: []string{"-json", "-cmd", ".timeout 100", ":memory:",
				"SELECT 1 AS one, 'two' AS two, 3.5 AS three; SELECT sqlite_version() = sqlite_source_id() AS same;"}, check: expectExit0},
		})
	})
}

func expectGzip(r result, data []byte) error {
	if err := expectExit0(r); err != nil {
		return err
	}
	if len(r.Stdout) < 18 || r.Stdout[0] != 0x1f || r.Stdout[1] != 0x8b {
		return fmt.Errorf("output is not gzip (%d bytes)", len(r.Stdout))
	}
	return nil
}

// minigzipInputs returns deterministic inputs of varied compressibility.
func minigzipInputs(t *testing.T) map[string][]byte {
	var text bytes.Buffer
	for _, g := range []string{"zlib/*.c", "lua/*.c", "lua/scripts/*.lua", "sqlite/*", "cxx/*", "demo/*"} {
		files, _ := filepath.Glob(testdata(g))
		for _, f := range files {
			d, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			text.Write(d)
		}
	}
	random := make([]byte, 300_000)
	x := uint64(0x2545F4914F6CDD1D)
	for i := range random {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		random[i] = byte(x >> 32)
	}
	runs := make([]byte, 0, 500_000)
	for i := 0; len(runs) < 500_000; i++ {
		runs = append(runs, bytes.Repeat([]byte{byte(i % 5)}, 1+i*7%400)...)
	}
	return map[string][]byte{
		"empty":  {},
		"text":   text.Bytes(),
		"random": random,
		"zeros":  make([]byte, 1<<20),
		"runs":   runs,
	}
}

var (
	typedefName      = regexp.MustCompile(`^typedef .*\b([a-zA-Z0-9_]+);`)
	windirentInclude = regexp.MustCompile(`^# *include "test_windirent.h"`)
)

// sqliteShellSource builds shell.c from src/shell.c.in as the source tree's
// tool/mkshellc.tcl does (a port, so tclsh is not needed), caching it.
func sqliteShellSource(t *testing.T, srcDir string) string {
	in, err := os.ReadFile(filepath.Join(srcDir, "src", "shell.c.in"))
	if err != nil {
		missing(t, "sqlite3 sources have no src/shell.c.in: %v", err)
	}
	out := filepath.Join(cfg.cache, "e2e", "sqlite-shell", hashStrings(srcDir, string(in))[:12], "shell.c")
	if _, err := os.Stat(out); err == nil {
		return out
	}
	seen := map[string]bool{}
	omitRedundantTypedefs := func(line string) string {
		if m := typedefName.FindStringSubmatch(line); m != nil {
			if seen[m[1]] {
				return "/* " + strings.NewReplacer("/*", "//", "*/", "//").Replace(line) + " */"
			}
			seen[m[1]] = true
		}
		return line
	}
	var b strings.Builder
	b.WriteString("/* DO NOT EDIT! Generated from src/shell.c.in by the hijack e2e suite (a port of tool/mkshellc.tcl). */\n")
	lines := strings.Split(string(in), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for _, line := range lines {
		line = omitRedundantTypedefs(line)
		if strings.HasPrefix(line, "INCLUDE ") {
			f := strings.Fields(line)[1]
			fmt.Fprintf(&b, "/************************* Begin %s ******************/\n", f)
			data, err := os.ReadFile(filepath.Join(srcDir, "src", f))
			if err != nil {
				t.Fatalf("shell.c.in includes %s: %v", f, err)
			}
			for _, l := range strings.Split(string(data), "\n") {
				l = omitRedundantTypedefs(l)
				if strings.HasPrefix(l, `#include "sqlite`) || windirentInclude.MatchString(l) {
					l = "/* " + l + " */"
				}
				l = strings.ReplaceAll(l, "__declspec(dllexport)", "")
				b.WriteString(l + "\n")
			}
			fmt.Fprintf(&b, "/************************* End %s ********************/\n", f)
			continue
		}
		b.WriteString(line + "\n")
	}
	writeFile(t, out+".tmp", []byte(b.String()))
	if err := os.Rename(out+".tmp", out); err != nil {
		t.Fatal(err)
	}
	return out
}

package e2e

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hijack cc as a drop-in compiler: what a build asks of CC besides
// compiling (configure, CMake and Meson probes) passes through with the
// compiler's own output and status; compile and compile-and-link commands
// leave the files the plain compiler leaves, in the same places, with
// every object rewritten; and real autotools (with libtool), CMake and
// Meson projects configure, build and pass their tests through it.

// ccFiles are the sources the command tests compile.
var ccFiles = map[string]string{
	"a.c":     "#include <stdio.h>\nint g(int);\nint main(void) { int s = 0; for (int i = 0; i < 10; i++) s += g(i); printf(\"%d\\n\", s); return 0; }\n",
	"b.c":     "int g(int x) { switch (x & 3) { case 0: return x; case 1: return x * 3; case 2: return -x; } return 7; }\n",
	"c.c":     "int h(int x) { return x + 1; }\n",
	"a.txt":   "int k(int x) { return x * 5; }\n",
	"bad.c":   "int main(void) { return nope; }\n",
	"h.h":     "int g(int);\n",
	"x.s":     "\t.text\n\t.globl xs\n\t.type xs, @function\nxs:\n\tleaq 1(%rdi), %rax\n\tret\n\t.size xs, .-xs\n\t.section .note.GNU-stack,\"\",@progbits\n",
	"y.S":     "#define RET ret\n\t.text\n\t.globl ys\n\t.type ys, @function\nys:\n\tmovl %edi, %eax\n\tRET\n\t.size ys, .-ys\n\t.section .note.GNU-stack,\"\",@progbits\n",
	"z.sx":    "#define ONE 1\n\t.text\n\t.globl zs\n\t.type zs, @function\nzs:\n\tmovl $ONE, %eax\n\tret\n\t.size zs, .-zs\n\t.section .note.GNU-stack,\"\",@progbits\n",
	"p.i":     "# 1 \"p.c\"\nint p(int x) { return x << 2; }\n",
	"f.f":     "      program f\n      end\n",
	"k.cc":    "int kcc(int x) { return x + 2; }\n",
	"l.cpp":   "#include <vector>\nint lcpp(int n) { std::vector<int> v(n, 1); int s = 0; for (int x : v) s += x; return s; }\n",
	"m.cxx":   "int mcxx(int x) { return x * 2; }\n",
	"n.C":     "int nC(int x) { return x - 2; }\n",
	"o.c++":   "int oc(int x) { return x | 1; }\n",
	"q.ii":    "# 1 \"q.cc\"\nint qii(int x) { return x ^ 3; }\n",
	"inc/i.h": "#define I 1\n",
	"sub/d.c": "int d(int x) { return x - 4; }\n",
	// sizeof 'a' is 4 in C, 1 in C++: which language compiled it
	"lang.c": "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", (int)sizeof 'a'); return 0; }\n",
	"nop.c":  "int nop;\n",
	// response files: nested, quoted, with -flto inside
	"args.rsp":    "-O2 @more.rsp -o 'my app'\n",
	"more.rsp":    "-flto a.c \"b.c\"\n",
	"empty.specs": "",
}

// ccSetup writes the sources and the directories the commands use into dir.
func ccSetup(t *testing.T, dir string) {
	for name, text := range ccFiles {
		writeFile(t, filepath.Join(dir, name), []byte(text))
	}
	for _, d := range []string{"out", "obj", "deps", ".libs", "outdir"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
}

// tempName matches the compilers' temporary file names, which differ from
// run to run.
var tempName = regexp.MustCompile(`/tmp/(cc[A-Za-z0-9]{6}|[A-Za-z0-9_.+-]+-[0-9a-f]{6})\.[a-z]+|/tmp/hijack-cc-[0-9]+`)

// ccMask masks the temporary names in a compiler's output.
func ccMask(s string) string {
	return tempName.ReplaceAllString(s, "/tmp/TEMP")
}

// ccStderr is a compiler's stderr with hijack's own lines removed.
func ccStderr(s string) string {
	var keep []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "hijack: ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// hijackCC is the hijack cc command for a compiler, with the pad preset.
func hijackCC(cc string, args ...string) []string {
	return append([]string{"cc", "-p", "pad", "--", cc}, args...)
}

// rewrittenObject reports whether path is a relocatable object hijack
// rewrote (it carries the .note.hijack section).
func rewrittenObject(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return f.Section(".note.hijack") != nil, nil
}

// ccSameFiles checks that the plain command and hijack cc, run in the
// directories plain and wrapped, left the same files, and dependency
// files (.d) with the same contents.
func ccSameFiles(t *testing.T, name, plain, wrapped string) {
	t.Helper()
	files := listFiles(plain)
	if a, b := strings.Join(files, " "), strings.Join(listFiles(wrapped), " "); a != b {
		t.Errorf("%s: files differ:\n  plain:   %s\n  wrapped: %s", name, a, b)
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".d") {
			continue
		}
		a, _ := os.ReadFile(filepath.Join(plain, f))
		b, _ := os.ReadFile(filepath.Join(wrapped, f))
		if string(a) != string(b) {
			t.Errorf("%s: %s differs:\n  plain:   %q\n  wrapped: %q", name, f, a, b)
		}
	}
}

// listFiles returns the regular files under dir, relative, sorted.
func listFiles(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			r, _ := filepath.Rel(dir, p)
			out = append(out, r)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

var ccCompilers = map[string][]string{"c": {"gcc", "clang"}, "c++": {"g++", "clang++"}}

func ccNeed(t *testing.T, cc string) {
	needTool(t, cc, map[string]string{"gcc": "gcc", "g++": "g++", "clang": "clang", "clang++": "clang"}[cc])
}

// Probes and queries: byte-identical stdout, stderr and exit status, and
// no file written that the compiler did not write.
func TestCCPassThrough(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	if cfg.fake {
		t.Skip("the copy-through stand-in has no cc mode")
	}
	cases := []struct {
		args  []string
		stdin string
		temps bool // the output names temporary files: masked
	}{
		{args: []string{}},
		{args: []string{"-E", "a.c"}},
		{args: []string{"-E", "-dM", "-x", "c", "-"}},
		{args: []string{"-E", "-x", "c++", "-"}, stdin: "#include <cstddef>\nstd::size_t n;\n"},
		{args: []string{"-M", "a.c"}},
		{args: []string{"-MM", "-MT", "t", "-MQ", "q$", "a.c"}},
		{args: []string{"-E", "-MD", "-MF", "deps/e.d", "a.c", "-o", "out/a.i"}},
		{args: []string{"-x", "assembler", "-E", "x.s"}},
		{args: []string{"-x", "assembler-with-cpp", "-E", "y.S"}},
		{args: []string{"-x", "none", "-E", "z.sx"}},
		{args: []string{"-S", "b.c", "-o", "-"}},
		{args: []string{"-fsyntax-only", "a.c"}},
		{args: []string{"-fsyntax-only", "bad.c"}},
		{args: []string{"-fsyntax-only", "-x", "c", "-"}, stdin: "int main(void) { return oops; }\n"},
		{args: []string{"--version"}},
		{args: []string{"-v"}},
		{args: []string{"-###"}},
		{args: []string{"-###", "-c", "a.c"}, temps: true},
		{args: []string{"-dumpmachine"}},
		{args: []string{"-dumpversion"}},
		{args: []string{"-dumpfullversion"}},
		{args: []string{"-print-search-dirs"}},
		{args: []string{"-print-prog-name=ld"}},
		{args: []string{"-print-file-name=libc.so"}},
		{args: []string{"-print-libgcc-file-name"}},
		{args: []string{"-print-multiarch"}},
		{args: []string{"-Wl,--version"}, temps: true},
		{args: []string{"-Xlinker", "--version"}, temps: true},
		{args: []string{"-Q", "--help=warnings"}},
		{args: []string{"--help"}},
		{args: []string{"-x", "c"}},
		{args: []string{"-c", "bad.c"}},
		{args: []string{"bad.c", "-o", "out/bad"}},
		{args: []string{"-c", "nosuch.c"}},
		{args: []string{"-c", "a.c", "b.c", "-o", "out/ab.o"}},
		{args: []string{"-c", "a.c", "-o", "outdir"}},
		{args: []string{"-c", "f.f"}},
		{args: []string{"-"}},
	}
	for _, cc := range ccCompilers["c"] {
		cc := cc
		t.Run(cc, func(t *testing.T) {
			t.Parallel()
			ccNeed(t, cc)
			work := workDir(t)
			for i, tc := range cases {
				name := cmdline(cc, tc.args...)
				plain, wrapped := filepath.Join(work, fmt.Sprint(i), "plain"), filepath.Join(work, fmt.Sprint(i), "wrapped")
				ccSetup(t, plain)
				ccSetup(t, wrapped)
				s := spec{Dir: plain, Stdin: []byte(tc.stdin), Timeout: time.Minute}
				want := mustRun(t, s, cc, tc.args...)
				s.Dir = wrapped
				got := mustRun(t, s, cfg.hijack, hijackCC(cc, tc.args...)...)
				if got.Exit != want.Exit {
					t.Errorf("%s: hijack cc %s, the compiler %s\n%s", name, got.status(), want.status(), tail(got.Stderr, 1000))
				}
				// (clang -### names the working directory)
				wantOut, gotOut := strings.ReplaceAll(string(want.Stdout), plain, "DIR"), strings.ReplaceAll(string(got.Stdout), wrapped, "DIR")
				wantErr, gotErr := strings.ReplaceAll(string(want.Stderr), plain, "DIR"), strings.ReplaceAll(string(got.Stderr), wrapped, "DIR")
				if tc.temps {
					wantOut, gotOut = ccMask(wantOut), ccMask(gotOut)
					wantErr, gotErr = ccMask(wantErr), ccMask(gotErr)
				}
				if len(tc.args) > 0 && tc.args[len(tc.args)-1] == "f.f" {
					// the one case hijack adds a line to: Fortran is
					// compiled but not rewritten
					if !strings.Contains(gotErr, "hijack: f.f: warning: Fortran is compiled but not rewritten") {
						t.Errorf("%s: no warning that Fortran is not rewritten:\n%s", name, gotErr)
					}
					gotErr = ccStderr(gotErr)
				}
				if gotOut != wantOut {
					t.Errorf("%s: stdout differs:\n%s", name, firstDiff(wantOut, gotOut))
				}
				if gotErr != wantErr {
					t.Errorf("%s: stderr differs:\n%s", name, firstDiff(wantErr, gotErr))
				}
				ccSameFiles(t, name, plain, wrapped)
			}
		})
	}
}

// firstDiff shows where two texts first differ, by line.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; ; i++ {
		var x, y string
		if i < len(w) {
			x = w[i]
		}
		if i < len(g) {
			y = g[i]
		}
		if x != y || i >= len(w) || i >= len(g) {
			return fmt.Sprintf("line %d: the compiler: %q\n         hijack cc: %q", i+1, x, y)
		}
	}
}

// ccCase is a compile or compile-and-link command that hijack cc runs
// and the plain compiler runs in another directory with the same files.
type ccCase struct {
	name    string
	cxx     bool // C++: g++ and clang++
	args    string
	stdin   string
	gccOnly bool     // (clang's profile runtime is not in Debian's clang package)
	clang   bool     // clang's options
	run     string   // a program the command builds: both are run and compared
	plain   []string // objects the command writes that hijack cc must not rewrite
}

var ccCases = []ccCase{
	{name: "several sources", args: "-c a.c b.c c.c"},
	{name: "a source in another directory", args: "-c sub/d.c b.c"},
	{name: "-o in another directory", args: "-c sub/d.c -o out/d.o"},
	{name: "-MD", args: "-c -MD a.c"},
	{name: "-MF -MT -MQ", args: "-c -MMD -MF deps/a.dep -MT t -MQ q$ a.c -o obj/a.o"},
	{name: "coverage", args: "-c --coverage a.c -o obj/a.o"},
	{name: "split DWARF", args: "-c -g -gsplit-dwarf b.c -o obj/b.o"},
	{name: "-save-temps", args: "-c -save-temps a.c b.c"},
	{name: "-save-temps=obj", args: "-c -save-temps=obj a.c -o obj/a.o"},
	{name: "driver options", args: "-c -pipe -B ./ --sysroot=/ -Wl,-z,now -Xlinker --no-undefined -include inc/i.h -isystem inc -Wa,--noexecstack -fstack-protector-strong b.c -o obj/b.o"},
	{name: "gcc options", gccOnly: true, args: "-c -specs=empty.specs --param max-inline-insns-single=10 -fprofile-arcs -ftest-coverage b.c"},
	{name: "libtool PIC object", args: "-c b.c -fPIC -DPIC -o .libs/b.o"},
	{name: "assembly", args: "-c x.s y.S z.sx"},
	{name: "preprocessed", args: "-c p.i"},
	{name: "C++ suffixes", cxx: true, args: "-c k.cc l.cpp m.cxx n.C o.c++ q.ii"},
	{name: "-x", args: "-c -x c a.txt -x none b.c"},
	{name: "precompiled header", args: "-c -x c-header h.h -o h.h.gch"},
	{name: "stdin", args: "-c -x c -", stdin: ccFiles["b.c"]},
	{name: "link", args: "a.c b.c -o app", run: "app"},
	{name: "link -MD", args: "-MD a.c b.c -o out/app", run: "out/app"},
	{name: "link -MMD without -o", args: "-MMD a.c b.c", run: "a.out"},
	{name: "link -save-temps", args: "-save-temps a.c b.c -o out/app", run: "out/app"},
	{name: "link -save-temps=obj", args: "-save-temps=obj a.c b.c -o out/app", run: "out/app"},
	{name: "link -save-temps=cwd", args: "-save-temps=cwd -MD a.c b.c -o out/app.exe", run: "out/app.exe"},
	{name: "link coverage", gccOnly: true, args: "--coverage a.c b.c -o out/app", run: "out/app"},
	{name: "link coverage -dumpdir", gccOnly: true, args: "--coverage -save-temps -dumpdir out/x- a.c b.c -o out/app", run: "out/app"},
	{name: "link split DWARF", args: "-g -gsplit-dwarf a.c b.c -o out/app", run: "out/app"},
	{name: "link-only options", args: "a.c b.c -o out/app -Wl,-O1 -Xlinker --as-needed -L. -lm -rdynamic -pie -static-libgcc -Wl,-z,now", run: "out/app"},
	{name: "clang's link-only options", clang: true, args: "a.c b.c -o out/app --rtlib=libgcc -unwindlib=libgcc -fuse-ld=bfd", run: "out/app"},
	{name: "shared", args: "-shared -fPIC b.c c.c -o out/libbc.so"},
	{name: "static", args: "-static a.c b.c -o out/app", run: "out/app"},
	{name: "relocatable -r", args: "-r b.c c.c -o out/bc.o"},
	{name: "relocatable -Wl,-r", args: "-nostdlib -Wl,-r b.c c.c -o out/bc.o"},
	{name: "response files", args: "@args.rsp", run: "my app"},
	{name: "-x in a link", args: "-x c a.txt -x none a.c b.c -o out/app", run: "out/app"},
	{name: "-flto", args: "-O2 -flto a.c b.c -o out/app", run: "out/app"},
	{name: "stdin link", args: "-x c - b.c -o out/app", stdin: ccFiles["a.c"], run: "out/app"},
	{name: "g++ compiles .c as C++ but under -x", cxx: true, args: "-x c nop.c lang.c -o out/app", run: "out/app"},
	{name: "g++ compiles .c as C after -x none", cxx: true, args: "-x c++ nop.c -x none lang.c -o out/app", run: "out/app"},
	{name: "C++ shared", cxx: true, args: "-shared -fPIC k.cc l.cpp -o out/libkl.so"},
}

// Compile and compile-and-link commands: the same exit status, messages
// and files as the plain compiler (dependency files, -save-temps files,
// coverage notes and data, .dwo files in the same places, the dependency
// files and the programs' DWARF naming the same files), every object the
// command compiles rewritten, and programs that behave the same.
func TestCCCommands(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	if cfg.fake {
		t.Skip("the copy-through stand-in has no cc mode")
	}
	for _, lang := range []string{"c", "c++"} {
		for _, cc := range ccCompilers[lang] {
			cc, cxx := cc, lang == "c++"
			t.Run(cc, func(t *testing.T) {
				t.Parallel()
				ccNeed(t, cc)
				work := workDir(t)
				for i, tc := range ccCases {
					if tc.cxx != cxx || tc.gccOnly && !strings.HasPrefix(cc, "g") || tc.clang && !strings.HasPrefix(cc, "clang") {
						continue
					}
					dir := filepath.Join(work, fmt.Sprint(i))
					checkCCCase(t, cc, tc, filepath.Join(dir, "plain"), filepath.Join(dir, "wrapped"))
				}
			})
		}
	}
}

func checkCCCase(t *testing.T, cc string, tc ccCase, plain, wrapped string) {
	t.Helper()
	ccSetup(t, plain)
	ccSetup(t, wrapped)
	args := strings.Fields(tc.args)
	name := tc.name + ": " + cmdline(cc, args...)
	before := map[string]bool{}
	for _, f := range listFiles(plain) {
		before[f] = true
	}
	s := spec{Dir: plain, Stdin: []byte(tc.stdin), Timeout: 2 * time.Minute}
	want := mustRun(t, s, cc, args...)
	s.Dir = wrapped
	got := mustRun(t, s, cfg.hijack, hijackCC(cc, args...)...)
	if got.Exit != want.Exit {
		t.Errorf("%s: hijack cc %s, the compiler %s\n%s", name, got.status(), want.status(), tail(got.Stderr, 2000))
		return
	}
	if w, g := ccMask(string(want.Stderr)), ccMask(ccStderr(string(got.Stderr))); w != g {
		t.Errorf("%s: stderr differs:\n%s", name, firstDiff(w, g))
	}
	if strings.Contains(tc.args, "-flto") && strings.Count(string(got.Stderr), "dropped") != 1 {
		t.Errorf("%s: want one warning that -flto is dropped, got:\n%s", name, got.Stderr)
	}
	sameFiles := func(when string) bool {
		a, b := strings.Join(listFiles(plain), " "), strings.Join(listFiles(wrapped), " ")
		if a != b {
			t.Errorf("%s: %s, the files differ:\n  the compiler: %s\n  hijack cc:    %s", name, when, a, b)
		}
		return a == b
	}
	if !sameFiles("after the command") {
		return
	}
	for _, f := range listFiles(wrapped) {
		if before[f] {
			continue
		}
		path := filepath.Join(wrapped, f)
		switch filepath.Ext(f) {
		case ".o":
			ok, err := rewrittenObject(path)
			if want := !contains(tc.plain, f); err != nil || ok != want {
				t.Errorf("%s: %s: rewritten %v (%v), want %v", name, f, ok, err, want)
			}
		case ".s":
			if strings.Contains(tc.args, "coverage") {
				break // the coverage stamp differs from one compile to the next
			}
			fallthrough
		case ".d", ".dep", ".i", ".ii":
			// the same content: dependency files name the same target
			// and files; -save-temps files are the same compiler's
			// (coverage: the assembly names the .gcda file by its
			// absolute path)
			a, _ := os.ReadFile(filepath.Join(plain, f))
			b, _ := os.ReadFile(path)
			a = bytes.ReplaceAll(a, []byte(plain), []byte(wrapped))
			if !bytes.Equal(a, b) {
				t.Errorf("%s: %s differs:\n%s", name, f, firstDiff(string(a), string(b)))
			}
		}
	}
	if tc.run == "" {
		return
	}
	// -gsplit-dwarf: the program names the same .dwo files
	if strings.Contains(tc.args, "-gsplit-dwarf") {
		a, b := dwoNames(t, filepath.Join(plain, tc.run)), dwoNames(t, filepath.Join(wrapped, tc.run))
		if a != b || a == "" {
			t.Errorf("%s: DW_AT_dwo_name: the compiler's program %q, hijack cc's %q", name, a, b)
		}
	}
	s = spec{Timeout: time.Minute}
	s.Dir = plain
	a := mustRun(t, s, filepath.Join(plain, tc.run))
	s.Dir = wrapped
	b := mustRun(t, s, filepath.Join(wrapped, tc.run))
	if a.Exit != b.Exit || !bytes.Equal(a.Stdout, b.Stdout) {
		t.Errorf("%s: %s: the compiler's %s %q, hijack cc's %s %q", name, tc.run, a.status(), a.Stdout, b.status(), b.Stdout)
	}
	sameFiles("after running " + tc.run) // coverage data
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// dwoNames lists the DW_AT_dwo_name values of a program's skeleton units.
func dwoNames(t *testing.T, prog string) string {
	r := mustRun(t, spec{Timeout: time.Minute}, "readelf", "--debug-dump=info", prog)
	var names []string
	for _, l := range strings.Split(string(r.Stdout), "\n") {
		if strings.Contains(l, "DW_AT_dwo_name") {
			names = append(names, l[strings.LastIndex(l, ": ")+2:])
		}
	}
	return strings.Join(names, " ")
}

// ccLinks makes the hijack-cc-COMPILER links (argv[0] names hijack cc
// recognises) in dir/bin and returns that directory.
func ccLinks(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, cc := range []string{"gcc", "g++", "clang", "clang++"} {
		if err := os.Symlink(cfg.hijack, filepath.Join(bin, "hijack-cc-"+cc)); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// ccProject copies a build-system test project (testdata/cc/NAME and the
// sources it builds) into dir/src and returns that directory.
func ccProject(t *testing.T, dir, name string) string {
	t.Helper()
	src := filepath.Join(dir, "src")
	var files []string
	for _, pat := range []string{testdata("cc", name, "*"), testdata("cc", "*.[ch]"), testdata("cc", "*.cpp")} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		copyFile(t, f, filepath.Join(src, filepath.Base(f)))
	}
	return src
}

// ccBuildStep runs one step of a project's build and fails the test,
// showing the end of its output and of the log files named, when it fails.
func ccBuildStep(t *testing.T, s spec, logs []string, name string, args ...string) bool {
	t.Helper()
	if s.Timeout == 0 {
		s.Timeout = 5 * time.Minute
	}
	r := mustRun(t, s, name, args...)
	if r.Exit == 0 {
		return true
	}
	msg := fmt.Sprintf("in %s: %s: %s\n%s%s", rel(s.Dir), cmdline(name, args...), r.status(), tail(r.Stdout, 3000), tail(r.Stderr, 3000))
	for _, l := range logs {
		if b, err := os.ReadFile(filepath.Join(s.Dir, l)); err == nil {
			msg += fmt.Sprintf("\n--- %s:\n%s", l, tail(b, 3000))
		}
	}
	t.Error(msg)
	return false
}

// checkBuildObjects checks that every object under dir was rewritten and
// that the objects named (paths relative to dir) are among them.
func checkBuildObjects(t *testing.T, dir string, want ...string) {
	t.Helper()
	found := map[string]bool{}
	for _, f := range listFiles(dir) {
		if filepath.Ext(f) != ".o" {
			continue
		}
		found[f] = true
		if ok, err := rewrittenObject(filepath.Join(dir, f)); err != nil || !ok {
			t.Errorf("%s: not rewritten by hijack cc (no .note.hijack; %v)", rel(filepath.Join(dir, f)), err)
		}
	}
	for _, f := range want {
		if !found[f] {
			t.Errorf("%s: no such object after the build (objects: %v)", rel(filepath.Join(dir, f)), found)
		}
	}
}

// ccBuild is one way a build-system test builds its project: the
// compilers, set as CC/CXX either as a "hijack cc --rules R -- COMPILER"
// command or as a hijack-cc-COMPILER link (rules from the environment).
type ccBuild struct {
	cc, cxx string
	link    bool     // the argv[0] links, with HIJACK_CC_RULES
	opts    []string // build-system options
	vptrace bool     // the vptrace rules (T=0), the runtime linked, instead of cfg.rules
}

// rules is the rules file of a build.
func (b ccBuild) rules() string {
	if b.vptrace {
		return filepath.Join(cfg.root, "testdata", "rules", "vptrace.yaml")
	}
	return cfg.rules
}

// compilers returns CC and CXX for b, and the environment they need.
func (b ccBuild) compilers(bin string) (cc, cxx string, env []string) {
	if b.link {
		return filepath.Join(bin, "hijack-cc-"+b.cc), filepath.Join(bin, "hijack-cc-"+b.cxx), []string{"HIJACK_CC_RULES=" + b.rules()}
	}
	wrap := func(c string) string { return cmdline(cfg.hijack, "cc", "--rules", b.rules(), "--", c) }
	return wrap(b.cc), wrap(b.cxx), nil
}

func (b ccBuild) name() string {
	n := b.cc
	if b.link {
		n += "-link"
	}
	if b.vptrace {
		n += "-vptrace"
	}
	return n
}

// ccBuildTest runs a build-system test's builds in parallel, each in its
// own build directory.
func ccBuildTest(t *testing.T, project string, builds []ccBuild, tools map[string]string, build func(t *testing.T, b ccBuild, src, dir, bin string)) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	if cfg.fake {
		t.Skip("the copy-through stand-in has no cc mode")
	}
	for tool, pkg := range tools {
		needTool(t, tool, pkg)
	}
	work := workDir(t)
	src := ccProject(t, work, project)
	bin := ccLinks(t, work)
	if project == "autotools" {
		// generated once, built in separate directories (VPATH builds)
		os.MkdirAll(filepath.Join(src, "m4"), 0o755)
		if !ccBuildStep(t, spec{Dir: src}, nil, "autoreconf", "-fi") {
			return
		}
	}
	for _, b := range builds {
		b := b
		t.Run(b.name(), func(t *testing.T) {
			t.Parallel()
			ccNeed(t, b.cc)
			ccNeed(t, b.cxx)
			if b.vptrace && os.Getenv("HIJACK_RUNTIME") == "" {
				needFile(t, filepath.Join(filepath.Dir(cfg.hijack), "libvptrace.so"), "the vptrace runtime: make build")
			}
			dir := filepath.Join(work, "build-"+b.name())
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			build(t, b, src, dir, bin)
		})
	}
}

// An autotools project with a libtool library (shared and static: libtool
// compiles each source twice, the PIC object in .libs/) configures, builds
// and passes make check with hijack cc as CC.
func TestCCAutotools(t *testing.T) {
	builds := []ccBuild{{cc: "gcc", cxx: "g++"}, {cc: "clang", cxx: "clang++", link: true}, {cc: "gcc", cxx: "g++", link: true, vptrace: true}}
	tools := map[string]string{"autoreconf": "autoconf", "automake": "automake", "libtoolize": "libtool", "make": "make"}
	ccBuildTest(t, "autotools", builds, tools, func(t *testing.T, b ccBuild, src, dir, bin string) {
		cc, _, env := b.compilers(bin)
		s := spec{Dir: dir, Env: append(env, "VPTRACE_OUT="+filepath.Join(dir, "vpt", "%p.vpt"))}
		if !ccBuildStep(t, s, []string{"config.log"}, filepath.Join(src, "configure"), "CC="+cc) ||
			!ccBuildStep(t, s, []string{"test-suite.log"}, "make", "-j2", "check") {
			return
		}
		checkBuildObjects(t, dir, "tally.o", ".libs/tally.o", "tally_test.o")
		if b.vptrace {
			// the library depends on the shared runtime; the test ran traced
			r := mustRun(t, spec{}, "readelf", "-d", filepath.Join(dir, ".libs", "libtally.so"))
			if !bytes.Contains(r.Stdout, []byte("[libvptrace.so]")) {
				t.Errorf("libtally.so does not depend on libvptrace.so:\n%s", r.Stdout)
			}
			if traces, _ := filepath.Glob(filepath.Join(dir, "vpt", "*.vpt")); len(traces) == 0 {
				t.Errorf("make check wrote no trace into %s", rel(filepath.Join(dir, "vpt")))
			}
		}
	})
}

// A CMake project (C and C++, a shared library, ctest): with the Makefile
// generator, and with Ninja and response files forced on.
func TestCCCMake(t *testing.T) {
	builds := []ccBuild{
		{cc: "gcc", cxx: "g++", link: true},
		{cc: "clang", cxx: "clang++", link: true, opts: []string{"-G", "Ninja", "-DCMAKE_NINJA_FORCE_RESPONSE_FILE=ON"}},
	}
	tools := map[string]string{"cmake": "cmake", "ctest": "cmake", "ninja": "ninja-build", "make": "make"}
	ccBuildTest(t, "cmake", builds, tools, func(t *testing.T, b ccBuild, src, dir, bin string) {
		cc, cxx, env := b.compilers(bin)
		s := spec{Dir: dir, Env: append(env, "CC="+cc, "CXX="+cxx)}
		logs := []string{"CMakeFiles/CMakeError.log"}
		if !ccBuildStep(t, s, logs, "cmake", append([]string{"-S", src, "-B", "."}, b.opts...)...) ||
			!ccBuildStep(t, s, nil, "cmake", "--build", ".") ||
			!ccBuildStep(t, s, nil, "ctest", "--output-on-failure") {
			return
		}
		checkBuildObjects(t, dir, "CMakeFiles/tally.dir/tally.c.o", "CMakeFiles/tally.dir/words.cpp.o",
			"CMakeFiles/tally_test.dir/tally_test.c.o", "CMakeFiles/words_test.dir/words_test.cpp.o")
	})
}

// A Meson project (C and C++, a shared library, meson test): CC as a
// command with -flto on (b_lto: dropped by hijack cc), and the links.
func TestCCMeson(t *testing.T) {
	builds := []ccBuild{
		{cc: "gcc", cxx: "g++", opts: []string{"-Db_lto=true"}},
		{cc: "clang", cxx: "clang++", link: true},
	}
	tools := map[string]string{"meson": "meson", "ninja": "ninja-build"}
	ccBuildTest(t, "meson", builds, tools, func(t *testing.T, b ccBuild, src, dir, bin string) {
		cc, cxx, env := b.compilers(bin)
		s := spec{Dir: dir, Env: append(env, "CC="+cc, "CXX="+cxx)}
		if !ccBuildStep(t, s, []string{"meson-logs/meson-log.txt"}, "meson", append([]string{"setup", ".", src}, b.opts...)...) ||
			!ccBuildStep(t, s, nil, "ninja") ||
			!ccBuildStep(t, s, []string{"meson-logs/testlog.txt"}, "meson", "test") {
			return
		}
		checkBuildObjects(t, dir, "libtally.so.p/tally.c.o", "libtally.so.p/words.cpp.o",
			"tally_test.p/tally_test.c.o", "words_test.p/words_test.cpp.o")
		if contains(b.opts, "-Db_lto=true") {
			// the build did give the compiler -flto, which hijack cc dropped
			if ninja, err := os.ReadFile(filepath.Join(dir, "build.ninja")); err != nil || !bytes.Contains(ninja, []byte("-flto")) {
				t.Errorf("b_lto=true: no -flto in build.ninja (%v)", err)
			}
		}
	})
}

// Configure-style probes whose output is /dev/null: the compiler and
// hijack cc write into a character device with /dev/null's numbers, made
// in the test's directories (the real one is never a test's target),
// which stays a device; the same status, messages and files.
func TestCCDevNull(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	if cfg.fake {
		t.Skip("the copy-through stand-in has no cc mode")
	}
	cases := []struct{ args, stdin string }{
		{args: "-c a.c -o null"},
		{args: "-c -x c - -o null", stdin: ccFiles["b.c"]},
		{args: "-O2 -c b.c -onull"},
		{args: "-E a.c -o null"},
		{args: "-S b.c -o null"},
		{args: "a.c b.c -o null"},
		{args: "-x c - -o null", stdin: ccFiles["a.c"] + ccFiles["b.c"]},
		{args: "-Werror -c bad.c -o null"},
		// Dependency files are named after the output, and name it.
		{args: "-c a.c -MD -o null"},
		{args: "-c b.c -MMD -MF deps.d -o null"},
		{args: "-c a.c -MD -MT obj/a.o -o null"},
	}
	for _, cc := range ccCompilers["c"] {
		cc := cc
		t.Run(cc, func(t *testing.T) {
			t.Parallel()
			ccNeed(t, cc)
			work := workDir(t)
			for i, tc := range cases {
				args := strings.Fields(tc.args)
				name := cmdline(cc, args...)
				plain, wrapped := filepath.Join(work, fmt.Sprint(i), "plain"), filepath.Join(work, fmt.Sprint(i), "wrapped")
				for _, d := range []string{plain, wrapped} {
					ccSetup(t, d)
					if err := syscall.Mknod(filepath.Join(d, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
						t.Skipf("cannot make a character device (%v): not root?", err)
					}
				}
				s := spec{Dir: plain, Stdin: []byte(tc.stdin), Timeout: time.Minute}
				want := mustRun(t, s, cc, args...)
				s.Dir = wrapped
				got := mustRun(t, s, cfg.hijack, hijackCC(cc, args...)...)
				if got.Exit != want.Exit {
					t.Errorf("%s: hijack cc %s, the compiler %s\n%s", name, got.status(), want.status(), tail(got.Stderr, 1000))
				}
				if w, g := ccMask(string(want.Stderr)), ccMask(ccStderr(string(got.Stderr))); w != g {
					t.Errorf("%s: stderr differs:\n%s", name, firstDiff(w, g))
				}
				if fi, err := os.Lstat(filepath.Join(wrapped, "null")); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
					t.Errorf("%s: the device is gone or replaced (%v)", name, err)
				}
				ccSameFiles(t, name, plain, wrapped)
			}
		})
	}
}

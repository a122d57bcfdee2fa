package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"hijack/internal/testutil"
)

// fakeCC stands for the compiler in TestCCCommandLines: it records each
// command line hijack cc runs (response files followed by what they
// hold: @FILE{...}) and, for a compile (-c), writes a real object where the
// compiler would: the -o file, or SRC.o for each source.
type fakeCC struct {
	t     *testing.T
	w     *ccWrapper
	obj   []byte // the object every compile "produces"
	runs  []string
	clang bool // .sx is a linker input
}

var rspName = regexp.MustCompile(`args-[0-9]+\.rsp`)

func (f *fakeCC) run(name string, args []string) int {
	var shown []string
	for _, a := range args {
		if strings.HasPrefix(a, "@") {
			inner, _, err := expandResponseFiles([]string{a})
			if err != nil {
				f.t.Errorf("%s: %v", a, err)
			}
			a += "{" + strings.Join(inner, " ") + "}"
		}
		shown = append(shown, a)
	}
	line := strings.Join(append([]string{name}, shown...), " ")
	if f.w.tmp != "" {
		line = strings.ReplaceAll(line, f.w.tmp, "$TMP")
	}
	f.runs = append(f.runs, rspName.ReplaceAllString(line, "args.rsp"))

	all, _, _ := expandResponseFiles(args)
	compile, out := false, ""
	var srcs []string
	for i := 0; i < len(all); i++ {
		switch a := all[i]; {
		case a == "-c":
			compile = true
		case a == "-o" && i+1 < len(all):
			i++
			out = all[i]
		case strings.HasPrefix(a, "-o"):
			out = a[2:]
		case a == "-x" || a == "-MF" || a == "-MT":
			i++
		case strings.HasPrefix(a, "-"):
		case filepath.Ext(a) == ".sx" && f.clang:
		case strings.Contains(".c .s .S .sx .cc .f", filepath.Ext(a)):
			srcs = append(srcs, strings.TrimSuffix(filepath.Base(a), filepath.Ext(a))+".o")
		}
	}
	if !compile {
		return 0
	}
	outs := srcs
	if out != "" {
		outs = []string{out}
	}
	for _, o := range outs {
		if err := os.WriteFile(o, f.obj, 0o644); err != nil {
			f.t.Errorf("fake compiler: %v", err)
			return 1
		}
	}
	return 0
}

// TestCCCommandLines runs hijack cc over the command lines builds give a
// compiler (configure, CMake and Meson probes, libtool, make) with a
// stand-in compiler, and checks which pass straight through, which
// hijack cc changes and how (the exact command lines the compiler gets),
// and which objects it rewrites.
func TestCCCommandLines(t *testing.T) {
	testutil.Need(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "real.c")
	os.WriteFile(src, []byte("int f(int x) { switch (x) { case 0: return 3; case 1: return 9; case 2: return 1; case 3: return 7; } return x; }\n"), 0o644)
	if out, err := exec.Command("gcc", "-O2", "-c", src, "-o", filepath.Join(dir, "real.o")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
	}
	obj, err := os.ReadFile(filepath.Join(dir, "real.o"))
	if err != nil {
		t.Fatal(err)
	}
	rf, _ := loadRules(io.Discard, "cc", "", "pad", nil)
	if rf == nil {
		t.Fatal("no pad preset")
	}

	const pass = "" // want: the command line as given, once
	tests := []struct {
		name      string
		cc        string // default gcc
		args      string
		files     map[string]string // written before (the response files)
		want      []string          // the compiler's command lines ("": as given)
		rewritten []string          // objects rewritten
		plain     []string          // objects the compiler wrote, left alone
		warn      string            // a warning hijack cc prints
	}{
		// probes and queries: straight through
		{name: "-E", args: "-E a.c", want: []string{pass}},
		{name: "-E stdin", args: "-E -x c -", want: []string{pass}},
		{name: "-E -o", args: "-E a.c -o a.i", want: []string{pass}},
		{name: "-M", args: "-M a.c", want: []string{pass}},
		{name: "-MM -MT", args: "-MM -MT x.o a.c", want: []string{pass}},
		{name: "-E -MD -MF", args: "-E -MD -MF a.d a.c", want: []string{pass}},
		{name: "-x assembler -E", args: "-x assembler -E x.s", want: []string{pass}},
		{name: "-S", args: "-S a.c -o -", want: []string{pass}},
		{name: "-fsyntax-only", args: "-fsyntax-only a.c", want: []string{pass}},
		{name: "--version", args: "--version", want: []string{pass}},
		{name: "-v", args: "-v", want: []string{pass}},
		{name: "-###", args: "-### -c a.c", want: []string{pass}},
		{name: "-dumpmachine", args: "-dumpmachine", want: []string{pass}},
		{name: "-dumpversion", args: "-dumpversion", want: []string{pass}},
		{name: "-dumpfullversion", args: "-dumpfullversion", want: []string{pass}},
		{name: "-print-search-dirs", args: "-print-search-dirs", want: []string{pass}},
		{name: "-print-prog-name", args: "-print-prog-name=ld", want: []string{pass}},
		{name: "-print-file-name", args: "-print-file-name=libc.so", want: []string{pass}},
		{name: "--print-file-name", args: "--print-file-name libgcc.a", want: []string{pass}},
		{name: "-print-libgcc-file-name", args: "-O2 -print-libgcc-file-name", want: []string{pass}},
		{name: "-print-multiarch", args: "-print-multiarch", want: []string{pass}},
		{name: "--help=", args: "-Q --help=warnings", want: []string{pass}},
		{name: "no input", args: "-x c", want: []string{pass}},
		{name: "-Wl,--version", args: "-Wl,--version", want: []string{pass}},
		{name: "objects only", args: "a.o b.o -o app -lm", want: []string{pass}},
		{name: "-emit-llvm", cc: "clang", args: "-emit-llvm -c a.c", want: []string{pass}},

		// compiling: the command as given, then each object rewritten
		{name: "-c", args: "-O2 -c a.c", want: []string{pass}, rewritten: []string{"a.o"}},
		{name: "-v -c", args: "-v -c a.c", want: []string{pass}, rewritten: []string{"a.o"}},
		{name: "-c -o", args: "-c a.c -o obj/a.o", want: []string{pass}, rewritten: []string{"obj/a.o"}},
		{name: "-c -oFILE", args: "-c a.c -oobj/a.o", want: []string{pass}, rewritten: []string{"obj/a.o"}},
		{name: "several sources", args: "-c a.c b.c x.s", want: []string{pass}, rewritten: []string{"a.o", "b.o", "x.o"}},
		{name: "a source in another directory", args: "-c sub/a.c b.c", want: []string{pass}, rewritten: []string{"a.o", "b.o"}},
		{name: "-MD -MF", args: "-c -MD -MF deps/a.d -MT a.o a.c", want: []string{pass}, rewritten: []string{"a.o"}},
		{name: "configure conftest", args: "-g -O2 -c conftest.c", want: []string{pass}, rewritten: []string{"conftest.o"}},
		{name: "-x c stdin", args: "-x c -c - -o conftest.o", want: []string{pass}, rewritten: []string{"conftest.o"}},
		{name: "-x assembler", args: "-x assembler -c a.txt -o a.o", want: []string{pass}, rewritten: []string{"a.o"}},
		{name: "libtool PIC", args: "-c a.c -fPIC -DPIC -o .libs/a.o", want: []string{pass}, rewritten: []string{".libs/a.o"}},
		{name: "libtool non-PIC", args: "-c a.c -o a.o >/dev/null 2>&1", want: []string{pass}, rewritten: []string{"a.o"}},
		{name: "-save-temps", args: "-c -save-temps a.c", want: []string{pass}, rewritten: []string{"a.o"}},
		{name: "coverage", args: "-c --coverage a.c -o obj/a.o", want: []string{pass}, rewritten: []string{"obj/a.o"}},
		{name: "Fortran", args: "-c f.f", want: []string{pass}, plain: []string{"f.o"}, warn: "f.f: warning: Fortran is compiled but not rewritten"},
		{name: "header", args: "-c -x c-header h.h -o h.gch", want: []string{pass}},
		{name: "clang .sx", cc: "clang", args: "-c a.c z.sx", want: []string{pass}, rewritten: []string{"a.o"}},
		{name: "gcc .sx", args: "-c a.c z.sx", want: []string{pass}, rewritten: []string{"a.o", "z.o"}},
		{name: "-c several -o", args: "-c a.c b.c -o ab.o", want: []string{pass}},
		{name: "-flto -c", args: "-O2 -flto=auto -ffat-lto-objects -c a.c", want: []string{"gcc -O2 -c a.c"},
			rewritten: []string{"a.o"}, warn: "cc: warning: -flto=auto -ffat-lto-objects dropped"},
		{name: "response file", args: "@r.rsp", files: map[string]string{"r.rsp": "-c a.c -o 'obj/a.o'"},
			want: []string{"gcc @r.rsp{-c a.c -o obj/a.o}"}, rewritten: []string{"obj/a.o"}},
		{name: "-flto in a response file", args: "@r.rsp", files: map[string]string{"r.rsp": "-O2 @s.rsp", "s.rsp": "-flto -c a.c"},
			want: []string{"gcc @$TMP/args.rsp{-O2 -c a.c}"}, rewritten: []string{"a.o"}, warn: "cc: warning: -flto dropped"},

		// compiling and linking: each source compiled apart, then linked
		{name: "link", args: "-O2 a.c b.c -o app -lm", want: []string{
			"gcc -O2 -c a.c -o $TMP/0-a.o", "gcc -O2 -c b.c -o $TMP/1-b.o", "gcc -O2 $TMP/0-a.o $TMP/1-b.o -o app -lm"}},
		{name: "link objects and sources", args: "a.o b.c -o app", want: []string{
			"gcc -c b.c -o $TMP/0-b.o", "gcc a.o $TMP/0-b.o -o app"}},
		{name: "-flto link", args: "-O2 -flto a.c -o app", want: []string{
			"gcc -O2 -c a.c -o $TMP/0-a.o", "gcc -O2 $TMP/0-a.o -o app"}, warn: "cc: warning: -flto dropped"},
		{name: "-flto objects", args: "-flto a.o b.o -o app", want: []string{"gcc a.o b.o -o app"}, warn: "cc: warning: -flto dropped"},
		{name: "-shared", args: "-shared -fPIC a.c b.c -Wl,-soname,liba.so.1 -o liba.so", want: []string{
			"gcc -fPIC -c a.c -o $TMP/0-a.o", "gcc -fPIC -c b.c -o $TMP/1-b.o",
			"gcc -shared -fPIC $TMP/0-a.o $TMP/1-b.o -Wl,-soname,liba.so.1 -o liba.so"}},
		{name: "-static", args: "-static a.c -o app", want: []string{
			"gcc -c a.c -o $TMP/0-a.o", "gcc -static $TMP/0-a.o -o app"}},
		{name: "-r", args: "-r a.c b.c -o ab.o", want: []string{
			"gcc -c a.c -o $TMP/0-a.o", "gcc -c b.c -o $TMP/1-b.o", "gcc -r $TMP/0-a.o $TMP/1-b.o -o ab.o"}},
		{name: "stdin link", args: "-x c - -o conftest", want: []string{
			"gcc -x c -c - -o $TMP/0--.o", "gcc -x c -x none $TMP/0--.o -o conftest"}},
		{name: "-x then -x none", args: "-x c a.txt -x none b.c -o app", want: []string{
			"gcc -x c -c a.txt -o $TMP/0-a.o", "gcc -c b.c -o $TMP/1-b.o", "gcc -x c -x none $TMP/0-a.o -x none $TMP/1-b.o -o app"}},
		{name: "-MD link", args: "-MD a.c -o app", want: []string{
			"gcc -MD -MF app.d -MQ app -c a.c -o $TMP/0-a.o", "gcc -MD $TMP/0-a.o -o app"}},
		{name: "ccache", cc: "ccache", args: "gcc -c a.c", want: []string{pass}, rewritten: []string{"a.o"}},
		{name: "ccache link", cc: "ccache", args: "gcc -O2 a.c -o app", want: []string{
			"ccache gcc -O2 -c a.c -o $TMP/0-a.o", "ccache gcc -O2 $TMP/0-a.o -o app"}},
		{name: "ccache options", cc: "ccache", args: "-s", want: []string{pass}},
		{name: "g++ .c under -x c", cc: "g++", args: "-x c a.c b.c -o app", want: []string{
			"g++ -x c -c a.c -o $TMP/0-a.o", "g++ -x c++ -c b.c -o $TMP/1-b.o", "g++ -x c -x none $TMP/0-a.o $TMP/1-b.o -o app"}},
		{name: "g++ .c after -x none", cc: "g++", args: "-x c++ a.c -x none b.c -o app", want: []string{
			"g++ -x c++ -c a.c -o $TMP/0-a.o", "g++ -x none -c b.c -o $TMP/1-b.o", "g++ -x c++ -x none $TMP/0-a.o -x none $TMP/1-b.o -o app"}},
		{name: "g++ .i under -x c", cc: "g++", args: "-x c a.c b.i -o app", want: []string{
			"g++ -x c -c a.c -o $TMP/0-a.o", "g++ -x c++-cpp-output -c b.i -o $TMP/1-b.o", "g++ -x c -x none $TMP/0-a.o $TMP/1-b.o -o app"}},
		{name: "g++ without -x", cc: "g++", args: "a.c b.c -o app", want: []string{
			"g++ -c a.c -o $TMP/0-a.o", "g++ -c b.c -o $TMP/1-b.o", "g++ $TMP/0-a.o $TMP/1-b.o -o app"}},
		{name: "g++ header then .c", cc: "g++", args: "-x c-header h.h b.c -c", want: []string{pass}, rewritten: []string{"b.o"}},
		{name: "clang++ .c under -x c", cc: "clang++", args: "-x c a.c b.c -o app", want: []string{
			"clang++ -x c -c a.c -o $TMP/0-a.o", "clang++ -x c -c b.c -o $TMP/1-b.o", "clang++ -x c -x none $TMP/0-a.o $TMP/1-b.o -o app"}},
		{name: "response file link", args: "@r.rsp", files: map[string]string{"r.rsp": "a.c -o app"}, want: []string{
			"gcc @$TMP/args.rsp{-c a.c -o $TMP/0-a.o}", "gcc @$TMP/args.rsp{$TMP/0-a.o -o app}"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			t.Chdir(work)
			for _, d := range []string{"obj", "deps", ".libs"} {
				os.Mkdir(d, 0o755)
			}
			for name, text := range tc.files {
				os.WriteFile(name, []byte(text), 0o644)
			}
			cc := tc.cc
			if cc == "" {
				cc = "gcc"
			}
			var stderr bytes.Buffer
			w := &ccWrapper{rf: rf, stdout: io.Discard, stderr: &stderr}
			f := &fakeCC{t: t, w: w, obj: obj, clang: strings.HasPrefix(cc, "clang")}
			w.runner, w.family = f.run, "gcc"
			if f.clang {
				w.family = "clang"
			}
			args := strings.Fields(tc.args)
			st := w.run(append([]string{cc}, args...))
			w.removeTemp()
			if st != 0 {
				t.Fatalf("status %d: %s", st, stderr.String())
			}
			want := append([]string(nil), tc.want...)
			for i, l := range want {
				if l == pass {
					want[i] = strings.Join(append([]string{cc}, args...), " ")
				}
			}
			if !reflect.DeepEqual(f.runs, want) {
				t.Errorf("the compiler ran:\n  %s\nwant:\n  %s", strings.Join(f.runs, "\n  "), strings.Join(want, "\n  "))
			}
			for _, o := range tc.rewritten {
				if !hasHijackNote(t, o) {
					t.Errorf("%s: not rewritten", o)
				}
			}
			for _, o := range tc.plain {
				if hasHijackNote(t, o) {
					t.Errorf("%s: rewritten, want it left alone", o)
				}
			}
			// nothing else rewritten: every object is in one list
			objs, _ := filepath.Glob("*.o")
			more, _ := filepath.Glob("*/*.o")
			for _, o := range append(objs, more...) {
				if !contains(tc.rewritten, o) && !contains(tc.plain, o) && hasHijackNote(t, o) {
					t.Errorf("%s: rewritten, but not by this command's rules", o)
				}
			}
			if tc.warn != "" && !strings.Contains(stderr.String(), "hijack: "+tc.warn) {
				t.Errorf("no warning %q: stderr:\n%s", tc.warn, stderr.String())
			}
			if tc.warn == "" && stderr.Len() > 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
			if strings.Contains(tc.warn, "dropped") && strings.Count(stderr.String(), "dropped") != 1 {
				t.Errorf("want the LTO note once: %s", stderr.String())
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// hasHijackNote reports whether an object carries hijack's .note.hijack.
func hasHijackNote(t *testing.T, path string) bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return false
	}
	defer f.Close()
	return f.Section(".note.hijack") != nil
}

// An output that is not a regular file (configure's -o /dev/null, a
// fifo): the compiler writes a temporary object, hijack rewrites it and
// writes it into the output, which stays what it was: a fifo, and a
// character device of the test's own (/dev/null's numbers) when the test
// may make one.
func TestCCSpecialOutput(t *testing.T) {
	testutil.Need(t, "gcc")
	rf, _ := loadRules(io.Discard, "cc", "", "pad", nil)
	t.Chdir(t.TempDir())
	os.WriteFile("a.c", []byte("int a(int x) { return x * 3; }\n"), 0o644)
	for i, args := range []string{"-c a.c -o OUT", "-O2 -x c -c a.c -oOUT", "-c -x c - -o OUT"} {
		for _, kind := range []string{"fifo", "null"} {
			name := fmt.Sprintf("%s%d", kind, i)
			var got chan []byte
			if kind == "fifo" {
				if err := syscall.Mkfifo(name, 0o644); err != nil {
					t.Fatal(err)
				}
				got = make(chan []byte, 1)
				go func() {
					b, _ := os.ReadFile(name)
					got <- b
				}()
			} else if err := syscall.Mknod(name, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
				t.Logf("cannot make a character device here (%v): skipped", err)
				continue
			}
			argv := append([]string{"gcc"}, strings.Fields(strings.ReplaceAll(args, "OUT", name))...)
			if strings.Contains(args, " - ") {
				stdin, err := os.Open("a.c")
				if err != nil {
					t.Fatal(err)
				}
				defer stdin.Close()
				old := os.Stdin
				os.Stdin = stdin
				defer func() { os.Stdin = old }()
			}
			var stderr bytes.Buffer
			w := &ccWrapper{rf: rf, stdout: io.Discard, stderr: &stderr}
			st := w.run(argv)
			w.removeTemp()
			if st != 0 {
				t.Fatalf("%v: status %d: %s", argv, st, stderr.String())
			}
			if got != nil {
				b := <-got
				if !bytes.HasPrefix(b, []byte("\x7fELF")) || !bytes.Contains(b, []byte(".note.hijack")) {
					t.Errorf("%v: the fifo got %d bytes, no rewritten object", argv, len(b))
				}
			}
			fi, err := os.Lstat(name)
			if err != nil || fi.Mode().IsRegular() {
				t.Errorf("%v: %s was replaced: %v", argv, name, err)
			}
			if left, _ := filepath.Glob(".hijack-*"); len(left) > 0 {
				t.Errorf("%v: left %v", argv, left)
			}
		}
	}
}

// A link to hijack named hijack-cc-COMPILER is hijack cc -- COMPILER.
func TestCCArgsLink(t *testing.T) {
	tests := []struct{ argv, want []string }{
		{[]string{"/usr/bin/hijack", "cc", "-p", "pad", "--", "gcc", "-c", "a.c"}, []string{"cc", "-p", "pad", "--", "gcc", "-c", "a.c"}},
		{[]string{"hijack", "--version"}, []string{"--version"}},
		{[]string{"/x/bin/hijack-cc-gcc", "-c", "a.c"}, []string{"cc", "--", "gcc", "-c", "a.c"}},
		{[]string{"hijack-cc-clang++", "--version"}, []string{"cc", "--", "clang++", "--version"}},
		{[]string{"./hijack-cc-x86_64-linux-gnu-gcc-12"}, []string{"cc", "--", "x86_64-linux-gnu-gcc-12"}},
		{[]string{"hijack-cc-"}, []string{}},
		{[]string{"my-hijack-cc-gcc", "dump", "a.o"}, []string{"dump", "a.o"}},
		{nil, nil},
	}
	for _, tc := range tests {
		if got := ccArgs(tc.argv); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ccArgs(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

// Rules from the environment: what a hijack-cc-COMPILER link (which has
// no options) and hijack cc without -r or -p use.
func TestCCRulesFromEnv(t *testing.T) {
	testutil.Need(t, "gcc")
	abs, err := filepath.Abs("../../testdata/rules/pad.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rules, preset string
		args          []string
		status        int
		stderr        string
	}{
		{args: []string{"cc", "--", "gcc", "--version"}, status: exitUsage, stderr: "no rules"},
		{preset: "pad", args: []string{"cc", "--", "gcc", "--version"}, status: exitOK},
		{rules: abs, args: []string{"cc", "--", "gcc", "--version"}, status: exitOK},
		{rules: "pad.yaml", args: []string{"cc", "--", "gcc", "--version"}, status: exitUsage, stderr: "want an absolute path"},
		{rules: abs, preset: "pad", args: []string{"cc", "--", "gcc", "--version"}, status: exitUsage, stderr: "both set"},
		{preset: "nosuch", args: []string{"cc", "-p", "pad", "--", "gcc", "--version"}, status: exitOK},
		{preset: "pad", args: ccArgs([]string{"/bin/hijack-cc-gcc", "-dumpmachine"}), status: exitOK},
	}
	for _, tc := range tests {
		t.Setenv("HIJACK_CC_RULES", tc.rules)
		t.Setenv("HIJACK_CC_PRESET", tc.preset)
		var stdout, stderr bytes.Buffer
		st := run(tc.args, &stdout, &stderr)
		if st != tc.status || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("HIJACK_CC_RULES=%q HIJACK_CC_PRESET=%q hijack %q: status %d, stderr %q; want %d, %q",
				tc.rules, tc.preset, tc.args, st, stderr.String(), tc.status, tc.stderr)
		}
		if st == exitOK && stdout.Len() == 0 {
			t.Errorf("hijack %q: no output from the compiler", tc.args)
		}
	}
}

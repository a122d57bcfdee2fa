package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"hijack/preset"
	"hijack/preset/all"
	"hijack/rewrite"
	"hijack/rules"
)

const ccUsage = `Usage: hijack cc [-r RULES | -p PRESET [--param K=V]...] [-q] [--] COMPILER ARGS...
       hijack-cc-COMPILER ARGS...   (a link to hijack: rules from the environment)

Compiler-wrapper mode: runs COMPILER ARGS and rewrites every object it
produces, so that an existing build is instrumented by setting CC:

  make CC="hijack cc -r rules.yaml -- gcc" CXX="hijack cc -r rules.yaml -- g++"
  ./configure CC="hijack cc --preset=pad -- gcc"
  CC="hijack cc --rules=$PWD/rules.yaml -- gcc" meson setup build

  - compiling (-c): each object the compiler writes is rewritten in place,
    where the compiler put it (coverage data, libtool's .libs/foo.o);
  - compiling and linking in one command (cc -O2 a.c b.c -o app): sources are
    compiled one by one with -c into a temporary directory, rewritten, and
    linked; dependency files (-MD), -save-temps files, coverage notes and
    split DWARF (.dwo) get the names the plain command gives them;
  - linking: when the rules use a preset with a runtime (vptrace), the
    runtime is added: programs and shared libraries depend on the shared
    runtime (libvptrace.so, as needed, with an rpath to its directory), so
    that a process has one runtime whatever it loads; -static programs get
    the archive (libvptrace.a and -lpthread); a relocatable link (-r) gets
    nothing. Both are found next to the hijack binary, or in
    $HIJACK_RUNTIME (their directory);
  - anything else passes through untouched, with the compiler's own output
    and exit status: -E, -S, -M, -MM, -fsyntax-only, --version, -v, -###,
    -dumpmachine, -dumpversion, -print-*, --help, -emit-llvm, and commands
    with no input file (-Wl,--version).
C, C++, Objective-C, assembly (.s, .S, .sx) and preprocessed (.i, .ii)
sources are rewritten; other languages (Fortran, Go, Ada) are compiled but
not rewritten, with a warning; precompiled headers are left alone. Objects
the command only reads (given as inputs) are not rewritten again.
Response files (@FILE) are read to find the sources and the output, and
passed on as they are unless hijack changes the command (-flto dropped,
sources compiled apart): then the compiler gets a response file of
hijack's own. -flto and its variants are dropped, said once per command:
link-time optimisation would replace the rewritten code. A launcher
before the compiler (hijack cc -- ccache gcc ...; ccache, distcc,
sccache, icecc) runs each command hijack cc runs.

A single executable for CC (CMake wants one): a symbolic link (or copy) of
hijack named hijack-cc-COMPILER runs "hijack cc -- COMPILER ARGS...", with
the rules from the environment, which the build must keep at build time:

  ln -s $(command -v hijack) /somewhere/hijack-cc-gcc
  export HIJACK_CC_RULES=/abs/rules.yaml     # or HIJACK_CC_PRESET=pad
  CC=/somewhere/hijack-cc-gcc cmake -B build && cmake --build build

libtool takes -p and -q in CC for gcc's options of those names and
repeats them on its link lines: where libtool links, write --preset=NAME,
--rules=FILE and --quiet, or use such a link.

HIJACK_CC_RULES (an absolute path: build tools run the compiler in other
directories) or HIJACK_CC_PRESET apply to "hijack cc" too when it has no
-r or -p. Every error of hijack cc is one line starting "hijack: "; when
the compiler fails, its messages and exit status are what the build sees.
`

// ccLinkPrefix names the links of the hijack binary that are compiler
// wrappers: hijack-cc-gcc runs as "hijack cc -- gcc".
const ccLinkPrefix = "hijack-cc-"

// ccArgs turns the command line of hijack invoked as hijack-cc-COMPILER
// into the one of hijack cc; other command lines are returned as they are.
func ccArgs(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	compiler, ok := strings.CutPrefix(filepath.Base(argv[0]), ccLinkPrefix)
	if !ok || compiler == "" {
		return argv[1:]
	}
	return append([]string{"cc", "--", compiler}, argv[1:]...)
}

func cmdCC(args []string, stdout, stderr io.Writer) int {
	// hijack's own options come first; the compiler command starts at the
	// first argument that is not one of them (or after --).
	var own, cmd []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			cmd = args[i+1:]
			break
		}
		if !strings.HasPrefix(a, "-") {
			cmd = args[i:]
			break
		}
		own = append(own, a)
		if (a == "-r" || a == "--rules" || a == "-rules" || a == "-p" || a == "--preset" || a == "-preset" || a == "--param" || a == "-param") && i+1 < len(args) {
			i++
			own = append(own, args[i])
		}
	}
	fs := pflag.NewFlagSet("cc", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rulesPath := fs.StringP("rules", "r", "", "rules file")
	presetName := fs.StringP("preset", "p", "", "preset")
	params := fs.StringArray("param", nil, "preset parameter")
	quiet := fs.BoolP("quiet", "q", false, "no warnings")
	help := fs.BoolP("help", "h", false, "help")
	if err := fs.Parse(fixSingleDash(own)); err != nil {
		return usageError(stderr, "cc", "%v", err)
	}
	if *help {
		fmt.Fprint(stdout, ccUsage)
		return exitOK
	}
	if len(cmd) == 0 {
		return usageError(stderr, "cc", "no compiler command (hijack cc -r RULES -- gcc ARGS...)")
	}
	if *rulesPath == "" && *presetName == "" {
		// hijack-cc-COMPILER, or hijack cc in a build that set the
		// environment: no option can be given on the command line.
		*rulesPath, *presetName = os.Getenv("HIJACK_CC_RULES"), os.Getenv("HIJACK_CC_PRESET")
		switch {
		case *rulesPath == "" && *presetName == "":
			return usageError(stderr, "cc", "no rules: give -r RULES or -p PRESET, or set HIJACK_CC_RULES=/abs/rules.yaml or HIJACK_CC_PRESET=NAME")
		case *rulesPath != "" && *presetName != "":
			return usageError(stderr, "cc", "HIJACK_CC_RULES and HIJACK_CC_PRESET are both set: set one")
		case *rulesPath != "" && !filepath.IsAbs(*rulesPath):
			return usageError(stderr, "cc", "HIJACK_CC_RULES=%s: want an absolute path (build tools run the compiler in other directories)", *rulesPath)
		}
	}
	rf, status := loadRules(stderr, "cc", *rulesPath, *presetName, *params)
	if rf == nil {
		return status
	}
	w := &ccWrapper{rf: rf, quiet: *quiet, stdout: stdout, stderr: stderr}
	defer removeOnSignal(&w.temps)()
	defer w.removeTemp()
	return w.run(cmd)
}

type ccWrapper struct {
	rf             *rules.File
	quiet          bool
	stdout, stderr io.Writer
	temps          tempDirs
	tmp            string // this command's temporary directory, once made
	rsp            bool   // the command line had response files
	family         string // "gcc" or "clang" once isClang asked the compiler
	launcher       string // ccache, distcc...: runs the compiler command
	// runner runs the compiler instead of exec (tests record the commands)
	runner func(name string, args []string) int
}

// warn prints a warning unless -q was given.
func (w *ccWrapper) warn(name, msg string) {
	if !w.quiet {
		fmt.Fprintf(w.stderr, "hijack: %s: warning: %s\n", name, oneLine(msg))
	}
}

// tempDir returns the command's temporary directory, made on first use
// (most commands need none) and removed when the command ends.
func (w *ccWrapper) tempDir() (string, error) {
	if w.tmp != "" {
		return w.tmp, nil
	}
	dir, err := w.temps.make()
	if err != nil {
		return "", fmt.Errorf("cannot create a temporary directory: %v", errors.Unwrap(err))
	}
	w.tmp = dir
	return dir, nil
}

func (w *ccWrapper) removeTemp() {
	if w.tmp != "" {
		w.temps.remove(w.tmp)
		w.tmp = ""
	}
}

// failed reports an error of hijack cc itself, on one line.
func (w *ccWrapper) failed(name string, err error) int {
	fmt.Fprintf(w.stderr, "hijack: %s: %s\n", name, oneLine(err.Error()))
	return exitFailure
}

func (w *ccWrapper) run(cmd []string) int {
	cc, orig := cmd[0], cmd[1:]
	if compilerLaunchers[filepath.Base(cc)] && len(orig) > 0 && !strings.HasPrefix(orig[0], "-") {
		// hijack cc -- ccache gcc ARGS: gcc's command line, run by ccache
		w.launcher, cc, orig = cc, orig[0], orig[1:]
	}
	// Response files are read to know what the command does; the
	// compiler gets them as they are unless hijack changes the command.
	args, rsp, err := expandResponseFiles(orig)
	if err != nil {
		return w.failed("cc", err)
	}
	w.rsp = rsp
	p := w.parse(cc, args)
	if p.mode == modeOther {
		return w.exec(cc, orig)
	}
	for _, i := range p.foreign {
		w.warn(args[i], langName(p.lang[i], args[i])+" is compiled but not rewritten: hijack cc rewrites C, C++, Objective-C and assembly")
	}
	// LTO would throw the rewritten code away at link time: compile and
	// link without it (said once per command).
	args, dropped := dropLTO(args)
	if len(dropped) > 0 {
		w.warn("cc", fmt.Sprintf("%s dropped: link-time optimisation would replace the instrumented machine code at link time", strings.Join(dropped, " ")))
		p = w.parse(cc, args)
	}
	if p.mode == modeCompile {
		if len(dropped) == 0 {
			args = nil // unchanged: the original command line
		}
		return w.compile(cc, orig, args, p)
	}
	// Link: compile sources first, one by one, then link the objects.
	link := append([]string(nil), orig...)
	if len(p.sources) > 0 || len(dropped) > 0 {
		link = args
	}
	if len(p.sources) > 0 {
		tmp, err := w.tempDir()
		if err != nil {
			return w.failed("cc", err)
		}
		clang := p.needsFamily() && w.isClang(cc)
		isSource := make(map[int]bool)
		for _, i := range p.sources {
			isSource[i] = true
		}
		compileFlags := compileOnlyFlags(args, isSource)
		objs := make(map[int]string)
		for k, i := range p.sources {
			tmpObj := filepath.Join(tmp, fmt.Sprintf("%d-%s.o", k, strings.TrimSuffix(filepath.Base(args[i]), filepath.Ext(args[i]))))
			obj, aux := p.auxOptions(args[i], tmpObj, clang)
			cargs := append(append([]string{}, compileFlags...), aux...)
			if l, ok := p.lang[i]; ok {
				cargs = append(cargs, "-x", l)
			}
			cargs = append(cargs, "-c", args[i], "-o", obj)
			if st := w.execArgs(cc, cargs); st != 0 {
				return st
			}
			if err := w.rewriteInPlace(obj, args[i], p.forExecutable(args, i)); err != nil {
				return w.failed(args[i], err)
			}
			objs[i] = obj
		}
		link = linkArgs(args, objs, p)
	}
	for _, rt := range all.Presets().Runtimes(w.rf.Presets()) {
		rtArgs, err := runtimeLink(args, rt)
		if err != nil {
			fmt.Fprintf(w.stderr, "hijack: cc: %v\n", err)
			return exitFailure
		}
		link = append(link, rtArgs...)
	}
	if len(p.sources) == 0 && len(dropped) == 0 {
		// The original command line, response files and all, with at
		// most the runtime appended.
		return w.exec(cc, link)
	}
	return w.execArgs(cc, link)
}

// linkArgs is the link command of a compile-and-link command line whose
// sources were compiled to objs (by index in args). A -x language in force
// applies to later inputs, so an object is preceded by -x none, and the
// language is given again before the next input (not after the last one:
// gcc warns that it has no effect); options only compiling used go.
func linkArgs(args []string, objs map[int]string, p parsed) []string {
	var link []string
	isInput := make(map[int]bool)
	for _, i := range p.inputs {
		isInput[i] = true
	}
	assembles := len(p.foreign) > 0 // a source left for the link step
	restore := ""                   // the -x language to give again before the next input
	for i := 0; i < len(args); i++ {
		a := args[i]
		obj, ok := objs[i]
		switch {
		case ok && p.lang[i] != "" && p.lang[i] != "none":
			if restore == "" {
				link = append(link, "-x", "none")
			}
			link, restore = append(link, obj), p.lang[i]
			continue
		case ok:
			link = append(link, obj)
			continue
		case a == "-x" || strings.HasPrefix(a, "-x"):
			restore = ""
		case !assembles && a == "-Xassembler" && i+1 < len(args):
			i++ // clang: "argument unused" when there is nothing to assemble
			continue
		case !assembles && strings.HasPrefix(a, "-Wa,"):
			continue
		case isInput[i] && restore != "" && (!strings.HasPrefix(a, "-") || a == "-"):
			link = append(link, "-x", restore)
			restore = ""
		}
		link = append(link, a)
	}
	return link
}

// needsFamily reports whether the names of a compile-and-link command's
// auxiliary outputs depend on whether the compiler is gcc or clang.
func (p parsed) needsFamily() bool {
	return p.auxNamed || p.depFile && !p.depName && p.output == ""
}

// compilerLaunchers run the compiler command that follows them (CC="ccache
// gcc"): hijack cc reads the compiler's command line after them, and has
// the launcher run each command it runs.
var compilerLaunchers = map[string]bool{"ccache": true, "distcc": true, "sccache": true, "icecc": true, "buildcache": true}

// parse is parseCC for the compiler cc: clang takes a .sx file for an
// input of the linker, not for assembly (clang 14 to 18 at least), so
// hijack cc leaves it to the linker as the compiler does.
func (w *ccWrapper) parse(cc string, args []string) parsed {
	p := parseCC(args)
	if p.mode != modeOther && hasX(args) {
		// g++'s languages differ from gcc's only where -x is given
		if base := filepath.Base(cc); (strings.Contains(base, "g++") || strings.Contains(base, "c++")) && !w.isClang(cc) {
			p = parseCCFor(args, true)
		}
	}
	sx := false
	for _, i := range p.sources {
		if _, ok := p.lang[i]; !ok && filepath.Ext(args[i]) == ".sx" {
			sx = true
		}
	}
	if !sx || !w.isClang(cc) {
		return p
	}
	var keep []int
	for _, i := range p.sources {
		if _, ok := p.lang[i]; ok || filepath.Ext(args[i]) != ".sx" {
			keep = append(keep, i)
		}
	}
	p.sources = keep
	return p
}

// hasX reports whether a command line has a -x option.
func hasX(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "-x") {
			return true
		}
	}
	return false
}

// isClang tells clang from gcc by what --version says (once per command).
func (w *ccWrapper) isClang(cc string) bool {
	if w.family == "" {
		w.family = "gcc"
		if out, _ := exec.Command(cc, "--version").Output(); strings.Contains(string(out), "clang") {
			w.family = "clang"
		}
	}
	return w.family == "clang"
}

// auxOptions says how hijack cc compiles a source apart, when the plain
// command compiles and links in one go, for the auxiliary outputs to have
// the names and places the plain command gives them: the object (tmpObj,
// or where -save-temps keeps it) and the options to add. The rules, gcc
// 11 and later, and clang (e2e TestCCAuxFiles compares them):
//   - -MD, -MMD: the dependency file is the output's name with .d (both,
//     last source wins), or SRC.d (clang) and a-SRC.d (gcc) without -o;
//     its target is the output, or SRC.o without -o;
//   - gcc names everything else (-save-temps, --coverage, -gsplit-dwarf,
//     -fstack-usage, -fdump-*) DUMPDIR + SRC: -dumpdir is the output less
//     its extension, plus "-" (in the working directory for
//     -save-temps=cwd), or "a-" without -o;
//   - clang names coverage notes, .dwo files and -save-temps files after
//     the source, in the working directory (-save-temps=obj: the
//     output's directory).
//
// -save-temps keeps the object: hijack cc compiles it there, rewritten.
func (p parsed) auxOptions(src, tmpObj string, clang bool) (obj string, opts []string) {
	obj = tmpObj
	base := strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))
	stem := strings.TrimSuffix(p.output, filepath.Ext(p.output))
	if p.depFile {
		if !p.depName {
			name := base + ".d"
			if p.output != "" {
				name = stem + ".d"
			} else if !clang {
				name = "a-" + name
			}
			opts = append(opts, "-MF", name)
		}
		if !p.depTarget {
			target := base + ".o"
			if p.output != "" {
				target = p.output
			}
			opts = append(opts, "-MQ", target)
		}
	}
	if clang {
		if p.saveTemps != "" {
			obj = base + ".o"
			if p.saveTemps == "obj" && p.output != "" {
				obj = filepath.Join(filepath.Dir(p.output), obj)
			}
			return obj, opts
		}
		if p.coverage {
			abs, err := filepath.Abs(base)
			if err == nil {
				opts = append(opts, "-Xclang", "-coverage-notes-file", "-Xclang", abs+".gcno",
					"-Xclang", "-coverage-data-file", "-Xclang", abs+".gcda")
			}
		}
		if p.splitDwarf {
			opts = append(opts, "-Xclang", "-split-dwarf-file", "-Xclang", base+".dwo",
				"-Xclang", "-split-dwarf-output", "-Xclang", base+".dwo")
		}
		return obj, opts
	}
	// gcc: only when an option names files so (-dumpbase-ext is new in
	// gcc 11), and not over the user's own -dumpbase.
	if !p.auxNamed || p.dumpbase {
		return obj, opts
	}
	dir := p.dumpdir
	switch {
	case dir != "":
	case p.output == "":
		dir = "a-"
	case p.saveTemps == "cwd":
		dir = filepath.Base(stem) + "-"
	default:
		dir = stem + "-"
	}
	if p.dumpdir == "" {
		opts = append(opts, "-dumpdir", dir)
	}
	opts = append(opts, "-dumpbase", filepath.Base(src), "-dumpbase-ext", filepath.Ext(src))
	if p.saveTemps != "" {
		obj = dir + base + ".o"
	}
	return obj, opts
}

// compile runs a -c command and rewrites the objects it wrote. orig is the
// command line as given; args, when not nil, the one to run instead
// (response files expanded, LTO options dropped). An output that is not a
// regular file (/dev/null, a fifo, "-" for stdout) cannot be read back:
// the compiler writes a temporary object instead, which is rewritten and
// then written into the output.
func (w *ccWrapper) compile(cc string, orig, args []string, p parsed) int {
	special := p.output == "-"
	if !special && p.output != "" {
		if fi, err := os.Stat(p.output); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			special = true
		}
	}
	if special && len(p.sources) == 1 {
		tmp, err := w.tempDir()
		if err != nil {
			return w.failed("cc", err)
		}
		obj := filepath.Join(tmp, "out.o")
		if args == nil {
			args = parseAgain(orig)
		}
		cargs := append([]string{}, args...)
		if p.outJoin {
			cargs[p.outArg] = cargs[p.outArg][:len(cargs[p.outArg])-len(p.output)] + obj
		} else {
			cargs[p.outArg] = obj
		}
		if p.depFile {
			// The dependency file and its target are named after the
			// output the command gave (nul -> nul.d, target nul), not
			// after the temporary object.
			if !p.depName {
				cargs = append(cargs, "-MF", strings.TrimSuffix(p.output, filepath.Ext(p.output))+".d")
			}
			if !p.depTarget {
				cargs = append(cargs, "-MQ", p.output)
			}
		}
		if st := w.execArgs(cc, cargs); st != 0 {
			return st
		}
		res, err := w.rewrite(obj, p.output, p.forExecutable(args, p.sources[0]))
		if err != nil {
			return w.failed(p.output, err)
		}
		if p.output == "-" {
			if _, err := w.stdout.Write(res); err != nil {
				return w.failed("cc", fmt.Errorf("cannot write the object to stdout: %v", err))
			}
			return exitOK
		}
		if err := writeOutput(p.output, res, nil); err != nil {
			return outputFailed(w.stderr, err)
		}
		return exitOK
	}
	st := 0
	if args == nil {
		st = w.exec(cc, orig)
	} else {
		st = w.execArgs(cc, args)
	}
	if st != 0 {
		return st
	}
	if len(p.sources) == 0 || p.output != "" && len(p.sources)+len(p.foreign) > 1 {
		// Nothing hijack rewrites; or several sources and one output,
		// which compilers refuse (but for a driver that took it, the
		// output is no object of one source).
		return exitOK
	}
	cargs := expandedOr(orig, args)
	for k, obj := range compileOutputs(p, cargs) {
		// (one object a source, in order)
		if err := w.rewriteInPlace(obj, obj, p.forExecutable(cargs, p.sources[k])); err != nil {
			// As a compiler deletes its output when it fails: an
			// uninstrumented object left behind would look up to date
			// to make. Only the regular file the compiler just wrote.
			if fi, err := os.Lstat(obj); err == nil && fi.Mode().IsRegular() {
				os.Remove(obj)
			}
			return w.failed(obj, err)
		}
	}
	return exitOK
}

// parseAgain expands the response files of a command line already
// expanded once without error.
func parseAgain(orig []string) []string {
	args, _, _ := expandResponseFiles(orig)
	return args
}

// expandedOr returns args, or orig expanded when args is nil.
func expandedOr(orig, args []string) []string {
	if args != nil {
		return args
	}
	return parseAgain(orig)
}

// compileOnlyFlags keeps the options of a compile-and-link command that
// matter for compiling: not inputs, not the output, not the language
// (each source gets its own), not linker options (clang says "argument
// unused" for those).
func compileOnlyFlags(args []string, isSource map[int]bool) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case isSource[i] || !strings.HasPrefix(a, "-") || a == "-":
		case a == "-o" || a == "--output" || a == "-x" || a == "-Xlinker" || a == "-l" || a == "-L" || a == "-T" ||
			a == "-u" || a == "-z" || a == "-e" || a == "--library-directory":
			i++
		case strings.HasPrefix(a, "-o") || strings.HasPrefix(a, "--output=") || strings.HasPrefix(a, "-x") ||
			strings.HasPrefix(a, "-l") || strings.HasPrefix(a, "-L") || strings.HasPrefix(a, "-Wl,") ||
			strings.HasPrefix(a, "-fuse-ld=") || strings.HasPrefix(a, "--ld-path=") || strings.HasPrefix(a, "-rtlib=") ||
			strings.HasPrefix(a, "--rtlib=") || strings.HasPrefix(a, "-unwindlib=") || strings.HasPrefix(a, "--unwindlib=") ||
			linkOnly[a]:
		case argTakesValue(a) && i+1 < len(args):
			out = append(out, a, args[i+1])
			i++
		default:
			out = append(out, a)
		}
	}
	return out
}

// linkOnly are driver options without a value that only linking uses.
var linkOnly = map[string]bool{
	"-shared": true, "-static": true, "-static-pie": true, "-pie": true, "-no-pie": true, "-rdynamic": true,
	"-s": true, "-r": true, "-nostdlib": true, "-nostartfiles": true, "-nodefaultlibs": true, "-nolibc": true,
	"-static-libgcc": true, "-shared-libgcc": true, "-static-libstdc++": true, "-symbolic": true,
	"-nostdlib++": true, "-static-openmp": true,
}

// compileOutputs returns the objects a -c command writes for the sources
// hijack rewrites: the output, or SRC.o in the working directory.
func compileOutputs(p parsed, args []string) []string {
	if p.output != "" {
		return []string{p.output}
	}
	var out []string
	for _, i := range p.sources {
		out = append(out, strings.TrimSuffix(filepath.Base(args[i]), filepath.Ext(args[i]))+".o")
	}
	return out
}

// execArgs runs the compiler with a command line hijack cc made: in a
// response file when the user's had one (it may be long).
func (w *ccWrapper) execArgs(name string, args []string) int {
	if w.rsp {
		tmp, err := w.tempDir()
		if err != nil {
			return w.failed("cc", err)
		}
		at, err := writeResponseFile(tmp, args)
		if err != nil {
			return w.failed("cc", fmt.Errorf("cannot write a response file: %v", err))
		}
		args = []string{at}
	}
	return w.exec(name, args)
}

// exec runs the compiler with the wrapper's stdin, stdout and stderr, and
// returns its exit status; one killed by a signal gives 128+signal, as a
// shell says.
func (w *ccWrapper) exec(name string, args []string) int {
	if w.launcher != "" {
		name, args = w.launcher, append([]string{name}, args...)
	}
	if w.runner != nil {
		return w.runner(name, args)
	}
	c := exec.Command(name, args...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, w.stdout, w.stderr
	if err := c.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ee.ExitCode()
		}
		fmt.Fprintf(w.stderr, "hijack: cc: %s\n", oneLine(err.Error()))
		return 127
	}
	return 0
}

// rewrite reads the object the compiler wrote at obj and returns it
// rewritten; warnings name the user's file, name.
// exe: the compile command says the object is for executables only
// (parsed.forExecutable).
func (w *ccWrapper) rewrite(obj, name string, exe bool) ([]byte, error) {
	data, err := readInput(obj)
	if err != nil {
		return nil, err
	}
	gcFloor(gcFloorFor(int64(len(data))))
	out, _, err := rewrite.RewriteWith(filepath.Base(name), data, w.rf, all.Presets(), func(msg string) { w.warn(name, msg) },
		rewrite.Options{Executable: exe})
	return out, err
}

// rewriteInPlace rewrites the object the compiler wrote at obj.
func (w *ccWrapper) rewriteInPlace(obj, name string, exe bool) error {
	out, err := w.rewrite(obj, name, exe)
	if err != nil {
		return err
	}
	return writeOutput(obj, out, nil)
}

// runtimeLink returns the arguments that link a preset's runtime rt (the
// vptrace runtime, say) into what the link command args makes:
//
//   - a relocatable link (-r): nothing; the link that uses the object
//     adds the runtime;
//   - a static program (-static, -static-pie): the archive (libvptrace.a)
//     and what it needs (-lpthread), the one runtime such a process can
//     have;
//   - a program or a shared library: a dependency on the shared runtime
//     (libvptrace.so), with an rpath to its directory. Every instrumented
//     component depending on the one shared object (its soname), a process
//     has one runtime (one Go runtime) whatever the mix: an instrumented
//     program with plain libraries, a plain one with instrumented
//     libraries, both, plugins dlopen'ed. The dependency is recorded as
//     needed, only where instrumented code refers to the runtime.
func runtimeLink(args []string, rt preset.Runtime) ([]string, error) {
	static := false
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-r" || a == "-relocatable" || a == "-Wl,-r" || a == "-Wl,--relocatable" ||
			(a == "-Xlinker" && i+1 < len(args) && (args[i+1] == "-r" || args[i+1] == "--relocatable")):
			return nil, nil
		case a == "-static" || a == "-static-pie":
			static = true
		}
	}
	dir, err := runtimeDir()
	if err != nil {
		return nil, err
	}
	if static {
		a := filepath.Join(dir, rt.Static)
		if _, err := os.Stat(a); err != nil {
			return nil, fmt.Errorf("the runtime archive %s (-static) was not found: %v: set HIJACK_RUNTIME to its directory or run `make build`", rt.Static, err)
		}
		return append([]string{a}, rt.Libs...), nil
	}
	so := filepath.Join(dir, rt.Shared)
	if _, err := os.Stat(so); err != nil {
		return nil, fmt.Errorf("the runtime %s was not found: %v: set HIJACK_RUNTIME to its directory or run `make build`", rt.Shared, err)
	}
	// (-Xlinker: a directory name may hold commas, which -Wl splits at)
	return []string{"-Wl,--push-state,--as-needed,-Bdynamic", so, "-Wl,--pop-state", "-Xlinker", "-rpath", "-Xlinker", dir}, nil
}

// runtimeDir is the directory of the presets' runtimes: $HIJACK_RUNTIME (the
// directory, or a file in it), or the hijack executable's.
func runtimeDir() (string, error) {
	if p := os.Getenv("HIJACK_RUNTIME"); p != "" {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			p = filepath.Dir(p)
		}
		return filepath.Abs(p)
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("the runtime directory: %v: set HIJACK_RUNTIME", err)
	}
	return filepath.Dir(exe), nil
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"hijack/rewrite"
	"hijack/rules"
)

const ccUsage = `Usage: hijack cc [-r RULES | -p PRESET [--param K=V]...] [-q] [--] COMPILER ARGS...

Compiler-wrapper mode: runs COMPILER ARGS and rewrites every object it
produces, so that an existing build is instrumented by setting CC:

  make CC="hijack cc -r rules.yaml -- gcc" CXX="hijack cc -r rules.yaml -- g++"

  - compiling (-c): each output object is rewritten in place;
  - compiling and linking in one command (cc -O2 a.c b.c -o app): sources are
    compiled one by one with -c into a temporary directory, rewritten, and
    linked;
  - linking: when the rules use vptrace, the runtime archive and -lpthread
    are added ($HIJACK_RUNTIME, or libvptrace.a next to the hijack binary);
  - anything else (-E, -S, -M, --version) is passed through untouched.
Assembly sources (.s, .S) are rewritten like C. Objects the command only
reads (given as inputs) are not rewritten again.
`

// sourceExt are the source files a compiler driver compiles to objects.
var sourceExt = map[string]bool{".c": true, ".cc": true, ".cpp": true, ".cxx": true, ".C": true, ".c++": true, ".s": true, ".S": true, ".sx": true, ".m": true}

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
	rf, status := loadRules(stderr, "cc", *rulesPath, *presetName, *params)
	if rf == nil {
		return status
	}
	w := &ccWrapper{rf: rf, quiet: *quiet, stdout: stdout, stderr: stderr}
	defer removeOnSignal(&w.temps)()
	return w.run(cmd)
}

type ccWrapper struct {
	rf             *rules.File
	quiet          bool
	stdout, stderr io.Writer
	temps          tempDirs
}

// warn prints a warning unless -q was given.
func (w *ccWrapper) warn(name, msg string) {
	if !w.quiet {
		fmt.Fprintf(w.stderr, "hijack: %s: warning: %s\n", name, oneLine(msg))
	}
}

// mode is what a compiler command does.
type ccMode int

const (
	modeOther   ccMode = iota // preprocess, assemble-only, queries: pass through
	modeCompile               // -c
	modeLink                  // links (possibly compiling sources first)
)

// parsed is a compiler command line as hijack cc needs to know it.
type parsed struct {
	mode    ccMode
	output  string         // -o value
	outArg  int            // index in args of the argument holding the -o value (-1: none)
	outJoin bool           // that argument is -oFILE
	sources []int          // indices in args of source files
	lang    map[int]string // -x language in force for a source, when there is one
}

// parse classifies a compiler command line (args without the compiler).
func parseCC(args []string) parsed {
	p := parsed{mode: modeLink, outArg: -1, lang: map[int]string{}}
	lang := "" // -x language, applies to later inputs
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c":
			if p.mode == modeLink {
				p.mode = modeCompile
			}
		case a == "-E" || a == "-S" || a == "-M" || a == "-MM" || a == "-fsyntax-only" || a == "--version" || a == "-v" && len(args) == 1 ||
			a == "-dumpversion" || a == "-dumpmachine" || strings.HasPrefix(a, "-print-") || a == "--help":
			p.mode = modeOther
		case a == "-o" && i+1 < len(args):
			i++
			p.output, p.outArg, p.outJoin = args[i], i, false
		case strings.HasPrefix(a, "-o") && len(a) > 2:
			p.output, p.outArg, p.outJoin = a[2:], i, true
		case a == "-x" && i+1 < len(args):
			i++
			lang = args[i]
		case strings.HasPrefix(a, "-x") && len(a) > 2:
			lang = a[2:]
		case argTakesValue(a) && i+1 < len(args):
			i++
		case !strings.HasPrefix(a, "-") || a == "-":
			if (lang != "" && lang != "none") || sourceExt[filepath.Ext(a)] {
				p.sources = append(p.sources, i)
				if lang != "" && lang != "none" {
					p.lang[i] = lang
				}
			}
		}
	}
	if p.mode == modeLink && len(args) == 0 {
		p.mode = modeOther
	}
	return p
}

// isLTOFlag reports whether a compiler option asks for link-time
// optimisation, which would replace the rewritten machine code with code
// generated from the objects' IR at link time.
func isLTOFlag(a string) bool {
	return a == "-flto" || strings.HasPrefix(a, "-flto=") || strings.HasPrefix(a, "-flto-") ||
		a == "-ffat-lto-objects" || a == "-fno-fat-lto-objects"
}

// dropLTO removes the LTO options from a command line.
func dropLTO(args []string) (out []string, dropped []string) {
	for _, a := range args {
		if isLTOFlag(a) {
			dropped = append(dropped, a)
			continue
		}
		out = append(out, a)
	}
	return out, dropped
}

// argTakesValue lists driver options whose value is the next argument.
func argTakesValue(a string) bool {
	switch a {
	case "-I", "-L", "-D", "-U", "-include", "-imacros", "-isystem", "-iquote", "-idirafter", "-MF", "-MT", "-MQ",
		"-Xlinker", "-Xassembler", "-Xpreprocessor", "-l", "-T", "-u", "-z", "-arch", "-target", "--param", "-aux-info":
		return true
	}
	return false
}

func (w *ccWrapper) run(cmd []string) int {
	cc, args := cmd[0], cmd[1:]
	p := parseCC(args)
	if p.mode == modeOther {
		return w.exec(cc, args)
	}
	// LTO would throw the rewritten code away at link time: compile and
	// link without it (said once per command).
	args, dropped := dropLTO(args)
	if len(dropped) > 0 {
		w.warn("cc", fmt.Sprintf("%s dropped: link-time optimisation would replace the instrumented machine code at link time", strings.Join(dropped, " ")))
		p = parseCC(args)
	}
	if p.mode == modeCompile {
		return w.compile(cc, args, p)
	}
	// Link: compile sources first, one by one, then link the objects.
	tmp, err := w.temps.make()
	if err != nil {
		fmt.Fprintf(w.stderr, "hijack: cc: cannot create a temporary directory: %v\n", errors.Unwrap(err))
		return exitFailure
	}
	defer w.temps.remove(tmp)
	link := append([]string{}, args...)
	isSource := make(map[int]bool)
	for _, i := range p.sources {
		isSource[i] = true
	}
	compileFlags := compileOnlyFlags(args, isSource)
	for k, i := range p.sources {
		obj := filepath.Join(tmp, fmt.Sprintf("%d-%s.o", k, strings.TrimSuffix(filepath.Base(args[i]), filepath.Ext(args[i]))))
		cargs := append([]string{}, compileFlags...)
		if l, ok := p.lang[i]; ok {
			cargs = append(cargs, "-x", l)
		}
		cargs = append(cargs, "-c", args[i], "-o", obj)
		if st := w.exec(cc, cargs); st != 0 {
			return st
		}
		if err := w.rewriteInPlace(obj, args[i]); err != nil {
			fmt.Fprintf(w.stderr, "hijack: %s: %s\n", args[i], oneLine(err.Error()))
			return exitFailure
		}
		link[i] = obj
	}
	// -x applied to the sources, now objects: "-x none" before them
	// would be as right, but dropping the option is simpler.
	if len(p.lang) > 0 {
		link = dropLangOptions(link)
	}
	if w.usesVptrace() {
		rt := runtimeArchive()
		if rt == "" {
			fmt.Fprintf(w.stderr, "hijack: cc: the vptrace runtime archive was not found: set HIJACK_RUNTIME or run `make build`\n")
			return exitFailure
		}
		link = append(link, rt, "-lpthread")
	}
	return w.exec(cc, link)
}

// compile runs a -c command and rewrites the objects it wrote. An output
// that is not a regular file (/dev/null, a fifo, "-" for stdout) cannot be
// read back: the compiler writes a temporary object instead, which is
// rewritten and then written into the output.
func (w *ccWrapper) compile(cc string, args []string, p parsed) int {
	special := p.output == "-"
	if !special && p.output != "" {
		if fi, err := os.Stat(p.output); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			special = true
		}
	}
	if special {
		tmp, err := w.temps.make()
		if err != nil {
			fmt.Fprintf(w.stderr, "hijack: cc: cannot create a temporary directory: %v\n", errors.Unwrap(err))
			return exitFailure
		}
		defer w.temps.remove(tmp)
		obj := filepath.Join(tmp, "out.o")
		cargs := append([]string{}, args...)
		if p.outJoin {
			cargs[p.outArg] = "-o" + obj
		} else {
			cargs[p.outArg] = obj
		}
		if st := w.exec(cc, cargs); st != 0 {
			return st
		}
		res, err := w.rewrite(obj, p.output)
		if err != nil {
			fmt.Fprintf(w.stderr, "hijack: %s: %s\n", p.output, oneLine(err.Error()))
			return exitFailure
		}
		if p.output == "-" {
			if _, err := w.stdout.Write(res); err != nil {
				fmt.Fprintf(w.stderr, "hijack: cc: cannot write the object to stdout: %v\n", err)
				return exitFailure
			}
			return exitOK
		}
		if err := writeOutput(p.output, res); err != nil {
			return outputFailed(w.stderr, err)
		}
		return exitOK
	}
	if st := w.exec(cc, args); st != 0 {
		return st
	}
	for _, obj := range compileOutputs(p, args) {
		if err := w.rewriteInPlace(obj, obj); err != nil {
			fmt.Fprintf(w.stderr, "hijack: %s: %s\n", obj, oneLine(err.Error()))
			// As a compiler deletes its output when it fails: an
			// uninstrumented object left behind would look up to date
			// to make. Only the regular file the compiler just wrote.
			if fi, err := os.Lstat(obj); err == nil && fi.Mode().IsRegular() {
				os.Remove(obj)
			}
			return exitFailure
		}
	}
	return exitOK
}

// dropLangOptions removes -x options from a command line.
func dropLangOptions(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-x" && i+1 < len(args):
			i++
		case strings.HasPrefix(a, "-x") && len(a) > 2:
		default:
			out = append(out, a)
		}
	}
	return out
}

// compileOnlyFlags keeps the options of a compile-and-link command that
// matter for compiling: not inputs, not the output, not linker options.
func compileOnlyFlags(args []string, isSource map[int]bool) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case isSource[i] || !strings.HasPrefix(a, "-") || a == "-":
		case a == "-o" || a == "-Xlinker" || a == "-l" || a == "-L" || a == "-T" || a == "-u" || a == "-z" || a == "-x":
			i++ // (-x: each source gets its own language option)
		case strings.HasPrefix(a, "-o") || strings.HasPrefix(a, "-x") || strings.HasPrefix(a, "-l") || strings.HasPrefix(a, "-L") || strings.HasPrefix(a, "-Wl,"),
			a == "-shared" || a == "-static" || a == "-pie" || a == "-no-pie" || a == "-rdynamic" || a == "-s" || a == "-nostdlib" || a == "-nostartfiles":
		case argTakesValue(a) && i+1 < len(args):
			out = append(out, a, args[i+1])
			i++
		default:
			out = append(out, a)
		}
	}
	return out
}

// compileOutputs returns the objects a -c command writes.
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

func (w *ccWrapper) exec(name string, args []string) int {
	c := exec.Command(name, args...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, w.stdout, w.stderr
	if err := c.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintf(w.stderr, "hijack cc: %v\n", err)
		return 127
	}
	return 0
}

// rewrite reads the object the compiler wrote at obj and returns it
// rewritten; warnings name the user's file, name.
func (w *ccWrapper) rewrite(obj, name string) ([]byte, error) {
	data, err := readInput(obj)
	if err != nil {
		return nil, err
	}
	out, _, err := rewrite.Rewrite(filepath.Base(name), data, w.rf, presets(), func(msg string) { w.warn(name, msg) })
	return out, err
}

// rewriteInPlace rewrites the object the compiler wrote at obj.
func (w *ccWrapper) rewriteInPlace(obj, name string) error {
	out, err := w.rewrite(obj, name)
	if err != nil {
		return err
	}
	return writeOutput(obj, out)
}

func (w *ccWrapper) usesVptrace() bool {
	for _, p := range w.rf.Presets() {
		if p == "vptrace" {
			return true
		}
	}
	return false
}

// runtimeArchive finds libvptrace.a: $HIJACK_RUNTIME, or next to the
// hijack executable.
func runtimeArchive() string {
	if p := os.Getenv("HIJACK_RUNTIME"); p != "" {
		return p
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(exe), "libvptrace.a")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

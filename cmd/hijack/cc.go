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
		fmt.Fprintf(stderr, "hijack cc: %v\n%s", err, ccUsage)
		return 2
	}
	if *help {
		fmt.Fprint(stdout, ccUsage)
		return 0
	}
	if len(cmd) == 0 {
		fmt.Fprint(stderr, ccUsage)
		return 2
	}
	rf, err := loadRules(*rulesPath, *presetName, *params, "hijack cc needs --rules FILE or --preset NAME")
	if err != nil {
		fmt.Fprintf(stderr, "hijack cc: %v\n", oneLine(err.Error()))
		return 2
	}
	w := &ccWrapper{rf: rf, quiet: *quiet, stdout: stdout, stderr: stderr}
	return w.run(cmd)
}

type ccWrapper struct {
	rf             *rules.File
	quiet          bool
	stdout, stderr io.Writer
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
	output  string // -o value
	sources []int  // indices in args of source files
}

// parse classifies a compiler command line (args without the compiler).
func parseCC(args []string) parsed {
	p := parsed{mode: modeLink}
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
			p.output = args[i]
		case strings.HasPrefix(a, "-o") && len(a) > 2:
			p.output = a[2:]
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
			}
		}
	}
	if p.mode == modeLink && len(args) == 0 {
		p.mode = modeOther
	}
	return p
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
	switch p.mode {
	case modeOther:
		return w.exec(cc, args)
	case modeCompile:
		if st := w.exec(cc, args); st != 0 {
			return st
		}
		for _, obj := range compileOutputs(p, args) {
			if err := w.rewriteInPlace(obj); err != nil {
				fmt.Fprintf(w.stderr, "hijack: %s: %s\n", obj, oneLine(err.Error()))
				os.Remove(obj)
				return 1
			}
		}
		return 0
	}
	// Link: compile sources first, one by one, then link the objects.
	tmp, err := os.MkdirTemp("", "hijack-cc-")
	if err != nil {
		fmt.Fprintf(w.stderr, "hijack cc: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	link := append([]string{}, args...)
	isSource := make(map[int]bool)
	for _, i := range p.sources {
		isSource[i] = true
	}
	compileFlags := compileOnlyFlags(args, isSource)
	for k, i := range p.sources {
		obj := filepath.Join(tmp, fmt.Sprintf("%d-%s.o", k, strings.TrimSuffix(filepath.Base(args[i]), filepath.Ext(args[i]))))
		cargs := append(append(append([]string{}, compileFlags...), "-c", args[i]), "-o", obj)
		if st := w.exec(cc, cargs); st != 0 {
			return st
		}
		if err := w.rewriteInPlace(obj); err != nil {
			fmt.Fprintf(w.stderr, "hijack: %s: %s\n", args[i], oneLine(err.Error()))
			return 1
		}
		link[i] = obj
	}
	if w.usesVptrace() {
		rt := runtimeArchive()
		if rt == "" {
			fmt.Fprintf(w.stderr, "hijack cc: the vptrace runtime archive was not found: set HIJACK_RUNTIME or run `make build`\n")
			return 1
		}
		link = append(link, rt, "-lpthread")
	}
	return w.exec(cc, link)
}

// compileOnlyFlags keeps the options of a compile-and-link command that
// matter for compiling: not inputs, not the output, not linker options.
func compileOnlyFlags(args []string, isSource map[int]bool) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case isSource[i] || !strings.HasPrefix(a, "-") || a == "-":
		case a == "-o" || a == "-Xlinker" || a == "-l" || a == "-L" || a == "-T" || a == "-u" || a == "-z":
			i++
		case strings.HasPrefix(a, "-o") || strings.HasPrefix(a, "-l") || strings.HasPrefix(a, "-L") || strings.HasPrefix(a, "-Wl,"),
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

func (w *ccWrapper) rewriteInPlace(obj string) error {
	data, err := os.ReadFile(obj)
	if err != nil {
		return err
	}
	warn := func(msg string) {
		if !w.quiet {
			fmt.Fprintf(w.stderr, "hijack: %s: warning: %s\n", obj, oneLine(msg))
		}
	}
	out, _, err := rewrite.Rewrite(filepath.Base(obj), data, w.rf, presets(), warn)
	if err != nil {
		return err
	}
	return writeAtomic(obj, out)
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

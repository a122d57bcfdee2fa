// Command hijack is a static binary rewriter for x86-64 ELF relocatable
// objects. Run `hijack --help` for usage.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

const usage = `hijack: static binary rewriter for x86-64 ELF relocatable objects

Usage:
  hijack -rules RULES.yaml IN.o OUT.o   rewrite IN.o as the rules say
  hijack -rules RULES.yaml IN.a OUT.a   rewrite every member of a static library
  hijack --preset NAME [--param K=V]... IN.o OUT.o
                                        rewrite with one preset on every function
  hijack dump [--func GLOB] IN.o        show what hijack understood of IN.o
  hijack analyze [--json|--dot F] IN.o  blocks, loops and scores per function
  hijack cc [-r RULES] -- CC ARGS...    compiler wrapper: make CC="hijack cc -r R -- gcc"
  hijack report [--csv|--json] TRACE   pages per thread from a vptrace trace file
  hijack tune --link CMD --run CMD OBJ.o...  overhead/accuracy sweep of vptrace T and H
  hijack help                           this text

Rewrite options:
  -r, --rules FILE     rules file (rules.yaml v1); -rules FILE works too
  -p, --preset NAME    use preset NAME with default parameters, without a rules file
      --param K=V      set a preset parameter (with --preset), repeatable
  -j, --jobs N         rewrite archive members N at a time (default: all CPUs)
  -q, --quiet          do not print warnings
  -v, --verbose        print what was done

Presets: pad (NOPs before every instruction: a stress test of code moving),
vptrace (page access tracing), clobber (liveness stress test).

A rules file, version 1:
  version: 1
  rules:
    - preset: pad             # which instrumentation
      functions: ["*"]        # globs over function names (default: all)
      exclude: ["main"]       # globs to leave alone
      params: {seed: 7}

hijack rewrites relocatable objects (.o): run it between compiling and
linking. Functions it cannot rewrite safely are left as they are, with a
warning that names them and says why. On error it prints one line
"hijack: IN.o: what and where", exits non-zero and leaves no OUT.o.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) (status int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "hijack: internal error: %v (please report this with the input file)\n", oneLine(fmt.Sprint(r)))
			if os.Getenv("HIJACK_DEBUG") != "" {
				stderr.Write(debug.Stack())
			}
			status = 3
		}
	}()
	if len(args) > 0 {
		switch args[0] {
		case "dump":
			return cmdDump(args[1:], stdout, stderr)
		case "analyze":
			return cmdAnalyze(args[1:], stdout, stderr)
		case "cc":
			return cmdCC(args[1:], stdout, stderr)
		case "tune":
			return cmdTune(args[1:], stdout, stderr)
		case "report":
			return cmdReport(args[1:], stdout, stderr)
		case "help", "-h", "--help", "-help":
			fmt.Fprint(stdout, usage)
			return 0
		}
	}
	return cmdRewrite(args, stdout, stderr)
}

// oneLine keeps a message on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// fixSingleDash turns the design card's single-dash long options (-rules
// FILE, -preset NAME) into the double-dash form pflag expects.
func fixSingleDash(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		for _, long := range []string{"rules", "preset", "param", "quiet", "verbose", "func", "jobs"} {
			if a == "-"+long || strings.HasPrefix(a, "-"+long+"=") {
				a = "-" + a
			}
		}
		out[i] = a
	}
	return out
}

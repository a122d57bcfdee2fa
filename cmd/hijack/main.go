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
  hijack dump [--func GLOB] IN.o|IN.a   show what hijack understood of IN
  hijack analyze [--json|--dot F] IN    blocks, loops and scores per function
  hijack cc [-r RULES] -- CC ARGS...    compiler wrapper: make CC="hijack cc -r R -- gcc"
  hijack report [--csv|--json] TRACE   pages per thread from a vptrace trace file
  hijack report --parquet DIR TRACE...  the traces as a Parquet dataset (DuckDB, Spark)
  hijack query DIR 'SQL'                SQL over that dataset (DuckDB, in hijack-query)
  hijack tune --link CMD --run CMD OBJ.o...  overhead/accuracy sweep of vptrace T and H
  hijack help [TOPIC]                   this text, or: ` + helpTopicList + `
  hijack --version                      version of hijack and of its formats

Rewrite options:
  -r, --rules FILE     rules file (rules.yaml v1); -rules FILE works too
  -p, --preset NAME    use preset NAME with default parameters, without a rules file
      --param K=V      set a preset parameter, repeatable; with --rules, it applies
                       to every rule whose preset has the parameter
  -j, --jobs N         rewrite archive members N at a time (N >= 1; default: all CPUs)
  -q, --quiet          do not print warnings
  -v, --verbose        print what was done

Presets: pad (NOPs before every instruction: a stress test of code moving),
vptrace (page access tracing), clobber (liveness stress test); see
hijack help presets.

A rules file, version 1 (hijack help rules):
  version: 1
  rules:
    - preset: pad             # which instrumentation
      functions: ["*"]        # globs over function names (default: all)
      exclude: ["main"]       # globs to leave alone
      params: {seed: 7}

hijack rewrites relocatable objects (.o) and static libraries (.a, thin ones
too: the result is a regular archive): run it between compiling and
linking. Functions it cannot rewrite safely are left as they are, with a
warning that names them and says why.

Output files (hijack help files): OUT is written only when everything
succeeded, and then atomically; on any error OUT is left exactly as it was.
An existing OUT keeps its permissions; a symbolic link is followed; a
character device or fifo (/dev/null) is written into, never replaced; a
directory is an error. OUT may be IN itself (the object is rewritten in
place); an object hijack already rewrote is refused.

Exit status (every subcommand): 0 success; 1 the input or the operation
failed (bad or unreadable object, archive, rules file or trace, write
error); 2 usage (bad options or arguments); 3 internal error (a bug:
please report it with the input). Every error is one line starting
"hijack: " that names the user's file. hijack cc exits with the compiler's
status when the compiler fails.
`

func main() {
	// ccArgs: hijack-cc-COMPILER, a link to hijack, is hijack cc -- COMPILER.
	os.Exit(run(ccArgs(os.Args), os.Stdout, os.Stderr))
}

// Exit statuses, the same for every subcommand (documented in usage).
const (
	exitOK       = 0
	exitFailure  = 1 // bad input, failed operation, write error
	exitUsage    = 2 // bad options or arguments
	exitInternal = 3 // a bug in hijack
)

// usageError prints a one-line usage error for subcommand sub ("" for the
// rewrite command) and returns exitUsage.
func usageError(stderr io.Writer, sub, format string, a ...any) int {
	topic, prefix := "", ""
	if sub != "" {
		topic, prefix = " "+sub, sub+": "
	}
	fmt.Fprintf(stderr, "hijack: %s%s (see hijack help%s)\n", prefix, oneLine(fmt.Sprintf(format, a...)), topic)
	return exitUsage
}

// run executes one command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) (status int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "hijack: internal error: %v (please report this with the input file)\n", oneLine(fmt.Sprint(r)))
			if os.Getenv("HIJACK_DEBUG") != "" {
				stderr.Write(debug.Stack())
			}
			status = exitInternal
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
		case "query":
			return cmdQuery(args[1:], stdout, stderr)
		case "help":
			return cmdHelp(args[1:], stdout, stderr)
		case "-h", "--help", "-help":
			fmt.Fprint(stdout, usage)
			return 0
		case "version", "--version", "-version", "-V":
			if len(args) > 1 {
				return usageError(stderr, "", "--version takes no arguments")
			}
			fmt.Fprint(stdout, versionText())
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

package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"hijack/preset"
	"hijack/preset/all"
	"hijack/rules"
	"hijack/vptrace/trace"
)

// helpTopicList names the topics of `hijack help TOPIC`, for the usage text.
const helpTopicList = "rewrite cc dump analyze report heatmap parquet query tune rules presets files"

// helpTopics maps each topic to the text it prints.
func helpTopics() map[string]func() string {
	text := func(s string) func() string { return func() string { return s } }
	return map[string]func() string{
		"rewrite": text(usage),
		"cc":      text(ccUsage),
		"dump":    text(dumpUsage),
		"analyze": text(analyzeUsage),
		"report":  text(reportUsage),
		"heatmap": text(heatmapUsage),
		"parquet": text(parquetUsage),
		"query":   text(queryHelp),
		"tune":    text(tuneUsage),
		"rules":   func() string { return rulesHelp + "\n" + presetsHelp() },
		"presets": func() string {
			return "Presets and their parameters (rules files: hijack help rules):\n\n" + presetsHelp()
		},
		"files": text(filesHelp),
	}
}

// cmdHelp prints the usage, or the help of one topic.
func cmdHelp(args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		fmt.Fprint(stdout, usage)
		return exitOK
	case 1:
		if f, ok := helpTopics()[args[0]]; ok {
			fmt.Fprint(stdout, f())
			return exitOK
		}
		return usageError(stderr, "help", "unknown topic %q (topics: %s)", args[0], helpTopicList)
	}
	return usageError(stderr, "help", "want at most one topic, got %d", len(args))
}

// buildVersion is set by make build (-ldflags -X main.buildVersion=...,
// from git describe), so that the version is known also where the Go
// toolchain does not stamp VCS information (GOFLAGS=-buildvcs=false).
var buildVersion string

// versionText is what --version prints: hijack's own version (module
// version or VCS revision, as the Go toolchain recorded them) and the
// versions of the formats it reads and writes.
func versionText() string {
	v, rev, modified, goVersion := "(unknown)", "", false, ""
	if buildVersion != "" {
		v = buildVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if buildVersion == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "hijack %s", v)
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		fmt.Fprintf(&b, " (commit %s", rev)
		if modified {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	if goVersion != "" {
		fmt.Fprintf(&b, " built with %s", goVersion)
	}
	fmt.Fprintf(&b, "\nrules file version %d, trace format %d.%d\n", rules.Version, trace.Major, trace.Minor)
	return b.String()
}

const rulesHelp = `Rules files (rules.yaml, version 1) say which preset applies to which
functions of an object, and with what parameters:

  version: 1                      # required; only version 1 exists
  rules:                          # required; at least one rule
    - preset: vptrace             # required
      functions: ["hot_*"]        # optional globs; default: every function
      exclude: ["hot_init"]       # optional globs
      params:                     # optional; unset parameters take defaults
        threshold: 0.5
        pagesize: 4K              # or: sizeexp: 12
    - preset: pad                 # every function the first rule did not take
      exclude: [main]

A rule selects a function if its name matches one of functions (all if left
out) and none of exclude; each function gets the first rule that selects
it. Patterns use Go's path.Match syntax against symbol names (C++ names are
mangled). Unknown keys, unknown presets and out-of-range values are errors
that name the line. On the command line, --param K=V sets K on top of the
file for every rule whose preset has K (an error if none has).
`

const filesHelp = `How hijack writes its outputs (rewritten objects and archives, images):

  - nothing is written unless the whole command succeeded; on any error the
    output path is left exactly as it was (nothing created, nothing deleted);
  - a new file is created with mode 0666 minus the umask, as cc -o does;
  - an existing regular file is replaced atomically (a temporary file in
    the same directory, renamed over it), keeping its permissions and, when
    hijack may set them, its owner and group;
  - a symbolic link is followed, the file it points to is replaced (or
    created, for a dangling link), and the link stays;
  - a character device or a fifo (/dev/null, a pipe) is written into, never
    replaced or removed;
  - a directory, a block device or a socket is an error;
  - OUT may name IN itself (or the same file through another name): the
    object is rewritten in place, atomically;
  - an object hijack already rewrote is refused (rewrite the original);
  - an archive is rewritten member by member: each rewritten member waits
    in an unnamed temporary file in $TMPDIR (default /tmp; nothing to
    clean up, even after kill -9) until the archive is written, so memory
    does not grow with the archive; an unwritable $TMPDIR is an error that
    names it.

hijack cc runs the compiler and rewrites the objects it writes. If the
rewrite fails, it deletes the object the compiler just wrote (as compilers
delete their output when they fail, so that make does not take an
uninstrumented object for an up-to-date one), but only a regular file; an
output that is a character device or fifo (cc -c t.c -o /dev/null, the
compiler probe of many build systems) is compiled into a temporary file,
rewritten, and written into it.
`

// presetsHelp describes every preset of this build: its parameters, and
// the runtime hijack cc links when rules use it.
func presetsHelp() string {
	ps := all.Presets()
	reg := ps.Registry()
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(reg.Help(p.Spec().Name))
		if wr, ok := p.(preset.WithRuntime); ok {
			rt := wr.Runtime()
			fmt.Fprintf(&b, "  runtime: %s (%s and %s for -static: hijack cc links it)\n", rt.Shared, rt.Static, strings.Join(rt.Libs, " "))
		}
	}
	return b.String()
}

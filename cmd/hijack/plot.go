package main

import "strings"

// The plotting commands, hijack tune and hijack report --heatmap, draw with
// gonum/plot. Its package initialisation parses a dozen TrueType fonts and
// it brings image, SVG, PDF and LaTeX packages along: about a millisecond
// and half the executable, paid by every hijack process (a Makefile runs
// one per object) while plotting is rare. So the build can leave them out:
// with -tags noplot (make build's bin/hijack) these commands hand their
// arguments to hijack-plot, the full build (bin/hijack-plot), see
// plot_noplot.go. A plain go build has everything in one executable.

const heatmapUsage = `Usage: hijack report --heatmap OUT.png|OUT.svg [--thread TID] [--kind reads|writes|all]
                     [--size WxH] [--bins N] TRACE

Draws pages against time, coloured by the number of events (log scale):
like a DAMON or MadT access heatmap. Pages are grouped into regions (runs
of touched pages with small gaps), each labelled with the owner of most of
its events (a variable, ALLOCATOR@FUNC+0xOFF for heap blocks, a file,
stack:TID, ...; see hijack report --help), else the variable its
instructions name, or its segment and busiest function; a region too large
for one row per page shares rows. Time columns come from the aggregate
chunks (a page's events in an interval spread over its first..last time
in it) and from raw events (exact times).

  --heatmap FILE   the image: .png or .svg
  --thread TID     only this thread (kernel TID); default all threads
  --kind KIND      reads, writes or all (default)
  --size WxH       image size in pixels (default 1200x800)
  --bins N         time columns (default: one per clock tick, at most 240)
`

const tuneUsage = `Usage: hijack tune --link CMD --run CMD [options] OBJ.o...

Tuning experiment of the vptrace preset: instruments OBJ.o... with every
combination of the thresholds T and page-size estimates H, links and runs
each build --reps times, each run after a run of the uninstrumented build,
and measures the slowdown (median of the instrumented runs over median of
the uninstrumented ones), the instrumented sites and blocks, and the
accuracy of the trace against the reference: the exact mode (T=0, every
access). See docs/tuning.md.

  --link CMD        link command, run by sh: {objs} the objects, {rt} the
                    vptrace runtime (empty for the uninstrumented build),
                    {out} the executable, e.g. 'cc main.o {objs} {rt} -lpthread -o {out}'
  --run CMD         run command, run by sh: {out} the executable, e.g. '{out} 4'
  --threshold LIST  thresholds T (default 0,0.25,0.5,0.75,1)
  --pagesize LIST   page-size estimates H, 1K style accepted (default 1K,2K,4K)
  --reps N          runs per configuration (default 5)
  --out DIR         results.csv, runs.csv, overhead/accuracy/tune .svg and .png
                    (default tune-out)
  --rules FILE      rules file whose vptrace rules get each configuration's T
                    and H (default: the vptrace preset on every function)
  --param K=V       another vptrace parameter for every build (usestack=true, ...)
  --runtime FILE    the vptrace runtime (default: libvptrace.a next to hijack)
  --aslr            leave address-space randomisation on (default: runs start
                    with personality ADDR_NO_RANDOMIZE, as under setarch -R,
                    so that pages compare between runs)
  --timeout DUR     per run (default 10m)
  --title TEXT      workload name in the plots
  --keep            keep DIR/work (builds and the reference trace)
  --no-blockcount   skip the blockcount run: by default the objects are also
                    built once with the blockcount preset and run, and
                    results.csv gets exec_covered (the share of block
                    executions in blocks of score >= T) and score_count_rho
                    (Spearman: static loop score against measured counts);
                    blocks.csv lists every block's score and count
  -q, --quiet       no progress lines

Progress goes to stderr, one line per run; the results table to stdout.
`

// wantsHeatmap reports whether the arguments of hijack report ask for a
// heatmap (--heatmap FILE, before any "--").
func wantsHeatmap(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--heatmap" || a == "-heatmap" || strings.HasPrefix(a, "--heatmap=") || strings.HasPrefix(a, "-heatmap=") {
			return true
		}
	}
	return false
}

//go:build duckdb

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"hijack/vptrace/query"
)

const usage = `Usage: hijack query [--csv | --json] DIR ['SQL' | -]

Runs SQL over the Parquet dataset in DIR (hijack report --parquet DIR
TRACE... writes it) with DuckDB, embedded: nothing to install, no network.
Each table of the dataset is a view of its name, the run a column:

  pages        a row per (thread, page, interval): run, pid, thread,
               serial, thread_name, interval_start_ns, interval_end_ns,
               page, reads, writes, events, first_ns, last_ns, sites,
               top_site, top_function, top_insn, top_symbol, object,
               segment, owner
  threads      a row per thread: run, pid, thread, serial, name, start_ns,
               exit_ns, counted_events, drops, page_rows, events, reads,
               writes, first_ns, last_ns
  sites        a row per instrumented instruction: run, pid, site, object,
               function, offset, kind, segment, symbol, ...
  allocations  a row per allocation site: run, pid, site, line, allocator,
               address, owner, count, bytes, pages, events, first_ns, last_ns
  regions      a row per heap block, mapping, stack, TLS block: run, pid,
               kind, start, end, bytes, born_ns, died_ns, allocator,
               address, thread, path, owner
  notes        run, pid, time_ns, kind, thread, value, text
  runs         a row per trace file: run, path, pid, ppid, program,
               cmdline, start, duration_ns, complete, status, warnings, ...

SQL is DuckDB's dialect; several statements run in turn and the last
one's result is printed. Without SQL the tables and their columns are
listed; '-' reads the SQL from stdin. docs/parquet.md has the schema and
example queries, e.g.

  hijack query DIR 'SELECT run, thread, count(DISTINCT page) AS pages
                    FROM pages GROUP BY ALL ORDER BY ALL'

  (default)  an aligned table, with the row count
  --csv      CSV with a header line (NULL: empty)
  --json     a JSON array of objects, one per row (NULL: null)

Exit status: 0 success, 1 the dataset cannot be read or the query
failed, 2 bad options.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// hijack query hands its arguments on as they are
	if len(args) > 0 && args[0] == "query" {
		args = args[1:]
	}
	fs := pflag.NewFlagSet("query", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asCSV := fs.Bool("csv", false, "CSV")
	asJSON := fs.Bool("json", false, "JSON")
	help := fs.BoolP("help", "h", false, "help")
	fixed := make([]string, len(args))
	for i, a := range args {
		if a == "-csv" || a == "-json" || a == "-help" {
			a = "-" + a
		}
		fixed[i] = a
	}
	if err := fs.Parse(fixed); err != nil {
		return usageError(stderr, "%v", err)
	}
	if *help {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if *asCSV && *asJSON {
		return usageError(stderr, "--csv and --json exclude each other")
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usageError(stderr, "want DIR and at most one SQL argument, got %d argument(s)", fs.NArg())
	}
	dir := fs.Arg(0)
	sql := ""
	if fs.NArg() == 2 {
		sql = fs.Arg(1)
		if sql == "-" {
			b, err := io.ReadAll(stdin)
			if err != nil {
				fmt.Fprintf(stderr, "hijack: query: reading the SQL from stdin: %v\n", err)
				return 1
			}
			sql = string(b)
		}
		if strings.TrimSpace(sql) == "" {
			return usageError(stderr, "the SQL is empty")
		}
	}
	db, err := query.Open(dir)
	if err != nil {
		fmt.Fprintf(stderr, "hijack: query: %s\n", oneLine(err.Error()))
		return 1
	}
	defer db.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var res *query.Result
	if sql == "" {
		res, err = db.Schema(ctx)
	} else {
		res, err = db.Query(ctx, sql)
	}
	if err != nil {
		fmt.Fprintf(stderr, "hijack: query: %s\n", oneLine(err.Error()))
		return 1
	}
	w := bufio.NewWriter(stdout)
	switch {
	case *asCSV:
		err = res.CSV(w)
	case *asJSON:
		err = res.JSON(w)
	default:
		err = res.Text(w)
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fmt.Fprintf(stderr, "hijack: query: writing the result: %s\n", oneLine(err.Error()))
		return 1
	}
	return 0
}

func usageError(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "hijack: query: %s (see hijack query --help)\n", oneLine(fmt.Sprintf(format, a...)))
	return 2
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

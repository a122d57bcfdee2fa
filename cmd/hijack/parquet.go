package main

import "strings"

// The Parquet export (hijack report --parquet) and the SQL over it
// (hijack query). The export uses parquet-go, whose packages (protobuf
// among them) cost every process about a millisecond of initialisation:
// like plotting it is left out of the lean build (-tags noplot), which
// hands it to hijack-plot (report_parquet_noplot.go). The query engine,
// DuckDB, is C++ linked through cgo, 60 MB: it is never linked into
// hijack, hijack query runs hijack-query (cmd/hijack-query) instead.

const parquetUsage = `Usage: hijack report --parquet DIR [--row-group-rows N] TRACE|TRACEDIR...

Writes the traces as one Parquet dataset in DIR (made if missing): a
directory per table, a partition per run (hive style), so that DIR is one
dataset for DuckDB, Spark, Polars or pandas, and for hijack query:

  DIR/pages/run=NAME/part-0.parquet        a row per (thread, page, interval)
  DIR/threads/run=NAME/part-0.parquet      a row per thread
  DIR/sites/run=NAME/part-0.parquet        a row per instrumented instruction
  DIR/allocations/run=NAME/part-0.parquet  a row per allocation site
  DIR/regions/run=NAME/part-0.parquet      a row per heap block, mapping, stack, TLS
  DIR/notes/run=NAME/part-0.parquet        a row per note (vptrace_note, warnings)
  DIR/runs/run=NAME/part-0.parquet         the process and its file

A run is a trace file: its name without .vpt; a directory given stands for
the trace files below it, each run named by its path relative to the
directory ("sweep/T0.5/1234"; a name taken twice gets ~2, ~3). Runs
already in DIR stay; a run of the same name is replaced. Every file is
written under a temporary name and renamed when all are written: on any
error DIR is left as it was.

The pages table has page (the page's address, uint64), reads, writes,
events, first_ns and last_ns per interval (int64 ns since the trace's
start), the thread (TID, serial, name), the site with the most events
(top_site, top_function, top_insn), top_symbol, object, and what the page
held: segment and owner, as hijack report --csv names them (summed per
thread and page, the rows are --csv's). Files are zstd-compressed, with
row groups of N rows (default 1048576). A trace is read twice, the page
events chunk by chunk: memory stays bounded whatever the trace's size.
docs/parquet.md has the schema and example queries.

  --parquet DIR         the dataset directory
  --row-group-rows N    rows per row group of the pages table
`

const queryHelp = `Usage: hijack query [--csv | --json] DIR ['SQL' | -]

Runs SQL over the Parquet dataset hijack report --parquet DIR wrote, with
DuckDB embedded (nothing to install, no network): the tables are views
(pages, threads, sites, allocations, regions, notes, runs), the run a
column. Without SQL the tables and their columns are listed. Output: an
aligned table, --csv or --json. hijack query --help lists the columns;
docs/parquet.md has the schema and example queries.

hijack query runs hijack-query (cmd/hijack-query), found next to hijack or
on $PATH: DuckDB is C++ linked through cgo, tens of megabytes that the
rewriter does not carry. make build builds it.
`

// wantsParquet reports whether the arguments of hijack report ask for the
// Parquet export (--parquet DIR, before any "--").
func wantsParquet(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--parquet" || a == "-parquet" || strings.HasPrefix(a, "--parquet=") || strings.HasPrefix(a, "-parquet=") {
			return true
		}
	}
	return false
}

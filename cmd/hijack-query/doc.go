// Command hijack-query runs SQL over a vptrace Parquet dataset (what
// hijack report --parquet writes) with DuckDB embedded: hijack query DIR
// 'SQL' runs it. It is a command of its own because DuckDB is C++ linked
// through cgo, 80 MB: the rewriter, which a build runs once per object,
// stays small, static and quick to start.
//
// It is built with -tags duckdb (make build does): linking DuckDB made
// every go build ./... of the module seconds slower. Built without the
// tag it only says so.
package main

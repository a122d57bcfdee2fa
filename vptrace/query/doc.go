// Package query runs SQL over a vptrace Parquet dataset (the directory
// hijack report --parquet writes, package dataset) with DuckDB embedded
// (github.com/duckdb/duckdb-go, cgo over DuckDB's C++ library): each
// table of the dataset is a view of the same name (pages, threads,
// sites, allocations, regions, notes, runs) over its files, with the run
// partition as a VARCHAR column. Nothing needs to be installed and no
// network is used (DuckDB's Parquet reader is built in; extension
// downloads are turned off).
//
// The package is built with -tags duckdb only: linking DuckDB (80 MB)
// made every go build ./... of the module seconds slower.
package query

//go:build !duckdb

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "hijack: query: this hijack-query is built without DuckDB: build it with go build -tags duckdb -o hijack-query ./cmd/hijack-query (make build does)")
	os.Exit(1)
}

//go:build duckdb

package query

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"hijack/vptrace/dataset"
)

// DB is a DuckDB database (in memory) with the dataset's views.
type DB struct {
	db     *sql.DB
	conn   *duckdb.Connector
	tmp    string
	Tables []string // the views made: the tables with files in the dataset
}

// Open opens the dataset in dir. A dataset without any table is an
// error.
func Open(dir string) (*DB, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a directory (hijack report --parquet DIR writes one)", dir)
	}
	tmp, err := os.MkdirTemp("", "hijack-query-")
	if err != nil {
		return nil, err
	}
	conn, err := duckdb.NewConnector("", nil)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	d := &DB{db: sql.OpenDB(conn), conn: conn, tmp: tmp}
	// one connection: the views and settings are the session's
	d.db.SetMaxOpenConns(1)
	setup := []string{
		"SET autoinstall_known_extensions = false",
		"SET temp_directory = " + quote(tmp), // spills, if any, not in the working directory
	}
	for _, table := range dataset.Tables {
		files, err := filepath.Glob(filepath.Join(dir, table, "run=*", "*.parquet"))
		if err != nil || len(files) == 0 {
			continue
		}
		sort.Strings(files)
		list := make([]string, len(files))
		for i, f := range files {
			list[i] = quote(f)
		}
		setup = append(setup, fmt.Sprintf("CREATE VIEW %s AS SELECT run, * EXCLUDE (run) FROM read_parquet([%s], hive_partitioning = true, hive_types = {'run': VARCHAR}, union_by_name = true)",
			table, strings.Join(list, ", ")))
		d.Tables = append(d.Tables, table)
	}
	for _, s := range setup {
		if _, err := d.db.Exec(s); err != nil {
			d.Close()
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	if len(d.Tables) == 0 {
		d.Close()
		return nil, fmt.Errorf("%s: no Parquet dataset here (no TABLE/run=NAME/*.parquet: hijack report --parquet %s TRACE... writes one)", dir, dir)
	}
	return d, nil
}

// Close closes the database.
func (d *DB) Close() error {
	err := d.db.Close()
	if cerr := d.conn.Close(); err == nil {
		err = cerr
	}
	os.RemoveAll(d.tmp)
	return err
}

// quote is s as an SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Result is what a query returned.
type Result struct {
	Columns []string
	Types   []string // DuckDB's type names (BIGINT, UBIGINT, VARCHAR, ...)
	Rows    [][]any  // int64, uint64, float64, string, bool, time.Time, []any, ... (nil: NULL)
}

// Query runs sql (several statements: the last one's result) and returns
// its result.
func (d *DB) Query(ctx context.Context, sql string) (*Result, error) {
	res, err := d.query(ctx, sql)
	var scan *scanError
	if errors.As(err, &scan) {
		// a type database/sql cannot scan (a MAP with BLOB keys): the
		// same query with every column as text
		if res2, err2 := d.query(ctx, "SELECT COLUMNS(*)::VARCHAR FROM ("+strings.TrimRight(strings.TrimSpace(sql), ";")+")"); err2 == nil {
			return res2, nil
		}
		return nil, scan.err
	}
	return res, err
}

type scanError struct{ err error }

func (e *scanError) Error() string { return e.err.Error() }
func (e *scanError) Unwrap() error { return e.err }

func (d *DB) query(ctx context.Context, sql string) (*Result, error) {
	rows, err := d.db.QueryContext(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	r := &Result{}
	if r.Columns, err = rows.Columns(); err != nil {
		return nil, err
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	for _, t := range types {
		r.Types = append(r.Types, t.DatabaseTypeName())
	}
	for rows.Next() {
		vals := make([]any, len(r.Columns))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, &scanError{err}
		}
		r.Rows = append(r.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		// the conversion of a value, or the query failed on the way:
		// the text retry fails the same way then
		return nil, &scanError{err}
	}
	return r, nil
}

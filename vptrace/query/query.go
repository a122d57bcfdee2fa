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
	Tables []string // the tables with files in the dataset: the views

	files map[string][]string // by table
	made  map[string]bool     // views made: true with union_by_name
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
	for _, s := range setup {
		if _, err := d.db.Exec(s); err != nil {
			d.Close()
			return nil, fmt.Errorf("duckdb: %w", err)
		}
	}
	d.files, d.made = map[string][]string{}, map[string]bool{}
	for _, table := range dataset.Tables {
		files, err := filepath.Glob(filepath.Join(dir, table, "run=*", "*.parquet"))
		if err != nil || len(files) == 0 {
			continue
		}
		sort.Strings(files)
		d.files[table] = files
		d.Tables = append(d.Tables, table)
	}
	if len(d.Tables) == 0 {
		d.Close()
		return nil, fmt.Errorf("%s: no Parquet dataset here (no TABLE/run=NAME/*.parquet: hijack report --parquet %s TRACE... writes one)", dir, dir)
	}
	return d, nil
}

// views makes the views of the tables sql names (all with all). A view
// reads its files (explicit paths: a directory's name may hold glob
// characters) with the first file's schema; with union, by the union of
// the files' columns, which reads every file's footer first (a dataset of
// thousands of runs: seconds) and is only needed when the files differ (a
// dataset written by two versions of hijack).
func (d *DB) views(sql string, all, union bool) error {
	for _, table := range d.Tables {
		if made, ok := d.made[table]; ok && (made || !union) {
			continue
		}
		if !all && !mentions(sql, table) {
			continue
		}
		list := make([]string, len(d.files[table]))
		for i, f := range d.files[table] {
			list[i] = quote(f)
		}
		q := fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT run, * EXCLUDE (run) FROM read_parquet([%s], hive_partitioning = true, hive_types = {'run': VARCHAR}, union_by_name = %t)",
			table, strings.Join(list, ", "), union)
		if _, err := d.db.Exec(q); err != nil {
			return fmt.Errorf("the %s table: %w", table, err)
		}
		d.made[table] = union
	}
	return nil
}

// mentions reports whether sql has the word name (any case): a view to
// make. A word in a string or a comment makes one too many, no harm.
func mentions(sql, name string) bool {
	s := strings.ToLower(sql)
	for i := 0; ; {
		k := strings.Index(s[i:], name)
		if k < 0 {
			return false
		}
		k += i
		end := k + len(name)
		if (k == 0 || !wordByte(s[k-1])) && (end == len(s) || !wordByte(s[end])) {
			return true
		}
		i = k + 1
	}
}

func wordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80
}

// Schema lists the tables' columns and types.
func (d *DB) Schema(ctx context.Context) (*Result, error) {
	if err := d.views("", true, false); err != nil {
		return nil, err
	}
	var parts []string
	for i, t := range d.Tables {
		parts = append(parts, fmt.Sprintf(`SELECT %d AS t, row_number() OVER () AS n, '%s' AS "table", column_name AS "column", column_type AS "type" FROM (DESCRIBE %s)`, i, t, t))
	}
	return d.Query(ctx, `SELECT "table", "column", "type" FROM (`+strings.Join(parts, " UNION ALL ")+") ORDER BY t, n")
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
	if err := d.views(sql, false, false); err != nil {
		return nil, err
	}
	res, err := d.query(ctx, sql)
	if err != nil && schemaError(err) {
		// files of different schemas: a column the first file lacks
		if err := d.views(sql, false, true); err != nil {
			return nil, err
		}
		res, err = d.query(ctx, sql)
	}
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

// schemaError reports whether err may come from files of different
// schemas read with the first one's: DuckDB suggests union_by_name (a
// later file lacks a column), or a column is not found (the first file
// lacks it; or there is no such column: the retry says so again).
func schemaError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "union_by_name") || strings.Contains(msg, "Binder Error") && strings.Contains(msg, "not found")
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

// Package dataset writes vptrace traces as one Parquet dataset: tables
// pages, threads, sites, allocations, regions, notes and runs, each a
// directory of files partitioned by run (TABLE/run=NAME/part-0.parquet,
// hive style), so that a directory of thousands of runs is one dataset
// for DuckDB, Spark, Polars or pandas as it is:
//
//	SELECT run, thread, count(DISTINCT page) FROM read_parquet('DIR/pages/*/*.parquet') GROUP BY ALL
//
// The pages table has a row per (thread, page, interval): the granularity
// of the runtime's aggregate chunks. A trace is read twice: once for what
// owns the pages (allocation events, mappings, threads: trace.LoadMeta),
// then chunk by chunk, rows written as they come, so memory stays bounded
// whatever the trace's size. docs/parquet.md documents the schema.
//
// Files are written with github.com/parquet-go/parquet-go: pure Go (the
// rewriter is built without cgo), typed columns from struct tags, zstd.
package dataset

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"hijack/vptrace/trace"
)

// Tables are the dataset's tables, the directories under its root.
var Tables = []string{"pages", "threads", "sites", "allocations", "regions", "notes", "runs"}

// DefaultRowGroupRows is the rows of a pages row group: about 1M rows,
// 10-30 MB compressed, what scan engines split work by (DuckDB reads a
// row group per thread, Spark a split per row group) without many small
// reads.
const DefaultRowGroupRows = 1 << 20

// Options tune an export.
type Options struct {
	// RowGroupRows bounds the rows of a row group (0: DefaultRowGroupRows).
	RowGroupRows int64
	// Describe returns a run's status and its warnings (for the runs
	// table) from the trace without pages (trace.LoadMeta); nil: none.
	Describe func(meta *trace.Trace) (status string, warnings []string)
}

// Export writes runs into a dataset directory. Nothing is visible there
// until Commit: each file is written under a temporary name (starting
// with ".", which readers skip) and renamed then; Abort removes them.
type Export struct {
	dir     string
	created bool // dir did not exist
	opts    Options
	runs    map[string]bool

	mu      sync.Mutex // Abort may come from a signal handler
	pending []pending
}

type pending struct{ tmp, final string }

// Create starts an export into dir, made if missing. Runs already in it
// stay, a run of the same name is replaced at Commit.
func Create(dir string, opts Options) (*Export, error) {
	_, err := os.Lstat(dir)
	created := os.IsNotExist(err)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	if opts.RowGroupRows <= 0 {
		opts.RowGroupRows = DefaultRowGroupRows
	}
	return &Export{dir: dir, created: created, opts: opts, runs: map[string]bool{}}, nil
}

// PartitionDir is the directory of a run in a table: TABLE/run=NAME, the
// name escaped as Hive and Spark escape partition values (%XX for
// anything but letters, digits and ._-~+), which DuckDB and Spark
// unescape.
func PartitionDir(table, run string) string {
	return filepath.Join(table, "run="+escape(run))
}

func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-~+", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	if b.Len() == 0 {
		return "%00"
	}
	return b.String()
}

// create opens a temporary file for the table's part of a run.
func (e *Export) create(table, run string) (*os.File, error) {
	dir := filepath.Join(e.dir, PartitionDir(table, run))
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, ".part-0.parquet.tmp-"+hex.EncodeToString(rnd[:]))
	e.mu.Lock()
	defer e.mu.Unlock()
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return nil, err
	}
	e.pending = append(e.pending, pending{tmp, filepath.Join(dir, "part-0.parquet")})
	return f, nil
}

// Commit makes the runs written visible: every temporary file is renamed
// to its final name, and other parquet files of the runs' partitions (a
// run replaced) are removed.
func (e *Export) Commit() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, p := range e.pending {
		dir := filepath.Dir(p.final)
		olds, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
		for _, old := range olds {
			if old != p.final {
				os.Remove(old)
			}
		}
		if err := os.Rename(p.tmp, p.final); err != nil {
			e.pending = e.pending[i:]
			e.abort()
			return err
		}
	}
	e.pending = nil
	return nil
}

// Abort removes what the export wrote and did not commit.
func (e *Export) Abort() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.abort()
}

func (e *Export) abort() {
	for _, p := range e.pending {
		os.Remove(p.tmp)
		// the directories made for it, if empty
		os.Remove(filepath.Dir(p.tmp))
		os.Remove(filepath.Dir(filepath.Dir(p.tmp)))
	}
	if e.created {
		os.Remove(e.dir)
	}
	e.pending = nil
}

// writeTable writes rows as one file of the table's run partition, with
// at least the schema when there are none (a reader globbing the table
// finds a file in every run).
func writeTable[T any](e *Export, table, run string, rows []T) error {
	f, err := e.create(table, run)
	if err != nil {
		return err
	}
	w := parquet.NewGenericWriter[T](f, e.writerOptions()...)
	if _, err := w.Write(rows); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", table, err)
	}
	return closeTable(f, w, table)
}

func closeTable(f *os.File, w io.Closer, table string) error {
	err := w.Close()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", table, err)
	}
	return nil
}

func (e *Export) writerOptions() []parquet.WriterOption {
	return []parquet.WriterOption{
		parquet.Compression(&zstdCodec),
		parquet.MaxRowsPerRowGroup(e.opts.RowGroupRows),
		parquet.CreatedBy("hijack", "", ""),
	}
}

// zstdCodec compresses the files: zstd's fastest level. The default
// level made an export 1.6 times as slow for no smaller files (a 64 MB
// synthetic trace: 0.6% larger).
var zstdCodec = zstd.Codec{Level: zstd.SpeedFastest}

// errRunTaken: two runs of one export with the same name.
var errRunTaken = errors.New("a run of this name is already in this export")

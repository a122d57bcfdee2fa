package tune

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"hijack/rewrite"
	"hijack/rules"
	"hijack/vptrace/trace"
)

// BlockCount is one basic block of the workload's objects: its static loop
// score (what vptrace's threshold T selects by) and how often it ran, as
// the blockcount preset measured it (all threads).
type BlockCount struct {
	Function  string
	Off       uint32 // from the function's start
	LoopDepth int
	Score     float64
	Count     uint64
}

// BlockCounts is the blockcount run of an experiment: every block of the
// objects, and how well the static score predicts execution.
type BlockCounts struct {
	Blocks []BlockCount
	Execs  uint64 // block executions, all blocks and threads
	// Rho is Spearman's rank correlation between the blocks' scores and
	// their counts (NaN with fewer than two blocks or no variation): the
	// thesis's assumption that loop participation predicts execution,
	// measured.
	Rho float64
}

// Covered returns the fraction of block executions that fall into blocks
// of score >= t: how much of what the program ran a threshold of t
// instruments (NaN without executions).
func (bc *BlockCounts) Covered(t float64) float64 {
	if bc == nil || bc.Execs == 0 {
		return math.NaN()
	}
	var n uint64
	for _, b := range bc.Blocks {
		if b.Score >= t {
			n += b.Count
		}
	}
	return float64(n) / float64(bc.Execs)
}

// CoveredBy returns Covered for the threshold of configuration c: every
// block for the exact mode.
func (bc *BlockCounts) CoveredBy(c Config) float64 {
	if c.Exact {
		return bc.Covered(math.Inf(-1))
	}
	return bc.Covered(c.Threshold)
}

// LoadBlockCounts reads the block counts of one run's trace files (a
// process and its fork children): every block of every blockcount object,
// counts summed over threads and processes.
func LoadBlockCounts(paths []string) (*BlockCounts, error) {
	type key struct {
		id    uint64
		index int
	}
	idx := map[key]int{}
	bc := &BlockCounts{}
	for _, p := range paths {
		t, err := trace.Load(p)
		if err != nil {
			return nil, err
		}
		for _, o := range t.BlockObjects {
			for k := range o.Blocks {
				kk := key{o.ID, k}
				if _, ok := idx[kk]; ok {
					continue
				}
				b := t.Block(trace.BlockID{Reg: o.Reg, Index: uint32(k)})
				if !b.Known() {
					continue
				}
				idx[kk] = len(bc.Blocks)
				bc.Blocks = append(bc.Blocks, BlockCount{Function: b.Function, Off: b.Off, LoopDepth: int(b.LoopDepth), Score: float64(b.Score) / 1e6})
			}
		}
		for _, th := range t.Threads {
			for id, n := range th.Blocks {
				b := t.Block(id)
				if !b.Known() {
					continue
				}
				if i, ok := idx[key{b.Object.ID, int(id.Index)}]; ok {
					bc.Blocks[i].Count += n
					bc.Execs += n
				}
			}
		}
	}
	if len(bc.Blocks) == 0 {
		return nil, fmt.Errorf("no block counts in %s", strings.Join(paths, ", "))
	}
	scores := make([]float64, len(bc.Blocks))
	counts := make([]float64, len(bc.Blocks))
	for i, b := range bc.Blocks {
		scores[i], counts[i] = b.Score, float64(b.Count)
	}
	bc.Rho = Spearman(scores, counts)
	return bc, nil
}

// Spearman returns the rank correlation of xs and ys (tied values get
// their average rank): Pearson's correlation of the ranks. NaN when
// either has no variation or there are fewer than two pairs.
func Spearman(xs, ys []float64) float64 {
	if len(xs) != len(ys) || len(xs) < 2 {
		return math.NaN()
	}
	return pearson(ranks(xs), ranks(ys))
}

// ranks returns the 1-based ranks of xs, ties averaged.
func ranks(xs []float64) []float64 {
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return 0
	})
	r := make([]float64, len(xs))
	for i := 0; i < len(order); {
		j := i
		for j+1 < len(order) && xs[order[j+1]] == xs[order[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[order[k]] = avg
		}
		i = j + 1
	}
	return r
}

func pearson(xs, ys []float64) float64 {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// BlockColumns are the columns of blocks.csv, one row per block, the most
// executed first.
var BlockColumns = []string{"function", "offset", "loop_depth", "score", "count"}

// WriteBlocksCSV writes blocks.csv.
func WriteBlocksCSV(w io.Writer, bc *BlockCounts) error {
	cw := csv.NewWriter(w)
	cw.Write(BlockColumns)
	bs := slices.Clone(bc.Blocks)
	slices.SortStableFunc(bs, func(a, b BlockCount) int {
		switch {
		case a.Count > b.Count:
			return -1
		case a.Count < b.Count:
			return 1
		}
		return 0
	})
	for _, b := range bs {
		cw.Write([]string{b.Function, fmt.Sprintf("%#x", b.Off), strconv.Itoa(b.LoopDepth), ff(b.Score, 6), strconv.FormatUint(b.Count, 10)})
	}
	cw.Flush()
	return cw.Error()
}

// blockCounts builds the workload with the blockcount preset over every
// function, runs it once and keeps its counts in the report (the
// exec_covered and score_count_rho columns, blocks.csv). It fails softly:
// what goes wrong is a warning, the columns stay empty.
func (e *experiment) blockCounts(ctx context.Context) {
	bc, err := e.measureBlocks(ctx)
	if err != nil {
		e.warn(fmt.Sprintf("block counts (blockcount preset): %v; the exec_covered and score_count_rho columns stay empty", err))
		return
	}
	e.rep.Blocks = bc
	e.logf("block counts: %d blocks, %d executions; Spearman rho(score, count) = %.3f", len(bc.Blocks), bc.Execs, bc.Rho)
}

func (e *experiment) measureBlocks(ctx context.Context) (*BlockCounts, error) {
	reg := e.o.Presets.Registry()
	if _, ok := reg["blockcount"]; !ok {
		return nil, fmt.Errorf("no blockcount preset in this build")
	}
	rf, err := rules.Default(reg, "blockcount")
	if err != nil {
		return nil, err
	}
	const name = "blockcount"
	dir := filepath.Join(e.work, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var objs []string
	for i, in := range e.o.Objects {
		data, err := readFile(e.abs(in), in)
		if err != nil {
			return nil, err
		}
		out, _, err := rewrite.Rewrite(filepath.Base(in), data, rf, e.o.Presets, func(msg string) {
			e.warn(fmt.Sprintf("%s: %s", in, oneLine(msg)))
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %s", in, oneLine(err.Error()))
		}
		path := filepath.Join(dir, fmt.Sprintf("%d-%s", i, strings.TrimSuffix(filepath.Base(in), ".o")+".bc.o"))
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return nil, err
		}
		objs = append(objs, path)
	}
	b, err := e.link(Config{}, name, objs, e.abs(e.o.Runtime))
	if err != nil {
		return nil, err
	}
	tdir := filepath.Join(dir, "run")
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		return nil, err
	}
	_, out, err := e.execEnv(ctx, b, []string{"VPTRACE_OUT=" + filepath.Join(tdir, "trace.%p.vpt")})
	if err != nil {
		return nil, err
	}
	if e.plainOutSet && out != e.plainOut {
		e.warn("blockcount: the program's output differs from the uninstrumented build's")
	}
	paths, _ := filepath.Glob(filepath.Join(tdir, "*.vpt*"))
	if len(paths) == 0 {
		return nil, fmt.Errorf("no trace file")
	}
	return LoadBlockCounts(paths)
}

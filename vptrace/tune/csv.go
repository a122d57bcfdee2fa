package tune

import (
	"encoding/csv"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// Columns of results.csv, one row per configuration (the reference, mode
// "exact", first):
//
//	threshold, pagesize  T and H (pagesize in bytes)
//	slowdown             median instrumented / median uninstrumented wall time
//	recall, precision    medians over the repetitions, of (thread, page) pairs
//	                     against the reference run (for the reference itself:
//	                     its further runs against its first: the noise floor)
//	count_error          median of sum |accesses - reference accesses| / sum
//	                     reference accesses over (thread, page) pairs
//	blocks, sites        instrumented blocks and sites (all objects)
//	plain_median_s, inst_median_s   median wall-clock seconds
//	reps                 repetitions
//	mode                 exact (the reference) or approx
//	slowdown_q1, slowdown_q3        quartiles of per-repetition ratios
//	recall_min, precision_min       worst repetition
//	page_recall          recall of pages regardless of thread
//	plain_cpu_s, inst_cpu_s         median CPU seconds (user + system, all threads)
//	cpu_slowdown         inst_cpu_s / plain_cpu_s (steadier than wall time on a
//	                     busy machine; counts the runtime's own threads too)
//	pairs, ref_pairs     (thread, page) pairs in the run and the reference (medians)
//	events, drops        events recorded, events dropped (medians)
//	trace_mb             trace size, MB (median)
//	shifted              fraction of heap/mmap pages Align had to move (median)
//	output_differs       runs whose output differed from the uninstrumented build's
//	layout_stable        1: every comparison of this configuration counts; 0: some
//	                     do not: the runs' pages differed beyond what tune lines up
//	                     (address-space layout, which thread used which memory);
//	                     the accuracy columns are over the others, empty if none
//	compared             runs whose comparison counts
//	exec_covered         fraction of the workload's block executions (blockcount
//	                     run) in blocks of score >= T: what T instruments of what ran
//	score_count_rho      Spearman rank correlation of the blocks' static scores and
//	                     their execution counts (the same in every row): does the
//	                     loop score predict execution? Both empty when not measured
var Columns = []string{"threshold", "pagesize", "slowdown", "recall", "precision", "count_error", "blocks", "sites",
	"plain_median_s", "inst_median_s", "reps", "mode", "slowdown_q1", "slowdown_q3", "recall_min", "precision_min",
	"page_recall", "plain_cpu_s", "inst_cpu_s", "cpu_slowdown", "pairs", "ref_pairs", "events", "drops", "trace_mb", "shifted", "output_differs", "layout_stable", "compared", "exec_covered", "score_count_rho"}

// RunColumns are the columns of runs.csv, one row per repetition: those
// of results.csv for one run, and self_recall, self_precision (the run
// against the first run of the same build, whose agreement judge checks)
// and layout_stable (whether the run's comparison counts).
var RunColumns = []string{"threshold", "pagesize", "mode", "rep", "plain_s", "inst_s", "plain_cpu_s", "inst_cpu_s",
	"recall", "precision", "count_error", "page_recall", "pairs", "ref_pairs", "events", "drops", "trace_bytes", "shifted", "self_recall", "self_precision", "layout_stable"}

// Write writes results.csv, runs.csv and the plots into dir and returns
// the files' paths.
func Write(dir string, rep *Report, title string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"results.csv", func(w io.Writer) error { return WriteCSV(w, rep.Results, rep.Blocks) }},
		{"runs.csv", func(w io.Writer) error { return WriteRunsCSV(w, rep.Results) }},
		{"blocks.csv", func(w io.Writer) error { return WriteBlocksCSV(w, rep.Blocks) }},
	} {
		if f.name == "blocks.csv" && rep.Blocks == nil {
			continue
		}
		p := filepath.Join(dir, f.name)
		if err := writeFile(p, f.write); err != nil {
			return files, err
		}
		files = append(files, p)
	}
	plots, err := Plots(dir, rep.Results, title)
	files = append(files, plots...)
	return files, err
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	werr := write(f)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

func ff(x float64, prec int) string {
	if math.IsNaN(x) {
		return "NaN"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

func medianInts[T int | uint64 | int64](xs []T) float64 {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return Median(f)
}

func mode(c Config) string {
	if c.Exact {
		return "exact"
	}
	return "approx"
}

// WriteCSV writes results.csv.
func WriteCSV(w io.Writer, rs []*Result, bc *BlockCounts) error {
	cw := csv.NewWriter(w)
	cw.Write(Columns)
	for _, r := range rs {
		q1, q3 := r.SlowdownQuartiles()
		c := r.Config
		t, h := ff(c.Threshold, 4), strconv.FormatInt(c.PageSize, 10)
		if c.Exact {
			t, h = "0", "0"
		}
		// accuracy over the comparable runs; empty, not NaN, when there
		// were comparisons and none counts
		acc := func(agg func([]float64) float64, xs []float64) string {
			if r.Compared() == 0 && r.Unstable() > 0 {
				return ""
			}
			return ff(agg(r.Comparable(xs)), 5)
		}
		stable := "1"
		if r.Unstable() > 0 {
			stable = "0"
		}
		cw.Write([]string{t, h, ff(r.Slowdown(), 4), acc(Median, r.Recall), acc(Median, r.Precision),
			acc(Median, r.CountError), strconv.Itoa(r.Blocks), strconv.Itoa(r.Sites),
			ff(Median(r.Plain), 6), ff(Median(r.Inst), 6), strconv.Itoa(len(r.Inst)), mode(c),
			ff(q1, 4), ff(q3, 4), acc(Min, r.Recall), acc(Min, r.Precision), acc(Median, r.PageRecall),
			ff(Median(r.PlainCPU), 6), ff(Median(r.InstCPU), 6), ff(Median(r.InstCPU)/Median(r.PlainCPU), 4), ff(medianInts(r.Pairs), 0), ff(medianInts(r.RefPairs), 0),
			ff(medianInts(r.Events), 0), ff(medianInts(r.Drops), 0), ff(medianInts(r.TraceBytes)/1e6, 3),
			ff(Median(r.Shifted), 4), strconv.Itoa(r.OutputDiffers), stable, strconv.Itoa(r.Compared()),
			covered(bc, c), rho(bc)})
	}
	cw.Flush()
	return cw.Error()
}

// covered is the exec_covered column of a configuration: the exact mode
// instruments every block.
func covered(bc *BlockCounts, c Config) string {
	if bc == nil {
		return ""
	}
	return ff(bc.CoveredBy(c), 5)
}

func rho(bc *BlockCounts) string {
	if bc == nil {
		return ""
	}
	return ff(bc.Rho, 4)
}

// WriteRunsCSV writes runs.csv.
func WriteRunsCSV(w io.Writer, rs []*Result) error {
	cw := csv.NewWriter(w)
	cw.Write(RunColumns)
	at := func(xs []float64, i int) float64 {
		if i < len(xs) {
			return xs[i]
		}
		return math.NaN()
	}
	for _, r := range rs {
		c := r.Config
		t, h := ff(c.Threshold, 4), strconv.FormatInt(c.PageSize, 10)
		if c.Exact {
			t, h = "0", "0"
		}
		for i := range r.Inst {
			geti := func(xs []int) string {
				if i < len(xs) {
					return strconv.Itoa(xs[i])
				}
				return ""
			}
			getu := func(xs []uint64) string {
				if i < len(xs) {
					return strconv.FormatUint(xs[i], 10)
				}
				return ""
			}
			tb := ""
			if i < len(r.TraceBytes) {
				tb = strconv.FormatInt(r.TraceBytes[i], 10)
			}
			stable := "1"
			if i < len(r.Stable) && !r.Stable[i] {
				stable = "0"
			}
			cw.Write([]string{t, h, mode(c), strconv.Itoa(i + 1), ff(at(r.Plain, i), 6), ff(at(r.Inst, i), 6),
				ff(at(r.PlainCPU, i), 6), ff(at(r.InstCPU, i), 6), ff(at(r.Recall, i), 5), ff(at(r.Precision, i), 5),
				ff(at(r.CountError, i), 5), ff(at(r.PageRecall, i), 5), geti(r.Pairs), geti(r.RefPairs),
				getu(r.Events), getu(r.Drops), tb, ff(at(r.Shifted, i), 4), ff(at(r.SelfRecall, i), 5), ff(at(r.SelfPrecision, i), 5), stable})
		}
	}
	cw.Flush()
	return cw.Error()
}

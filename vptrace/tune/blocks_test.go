package tune

import (
	"bytes"
	"encoding/csv"
	"math"
	"testing"
)

// TestSpearman: rank correlation against values worked out by hand,
// ties averaged, and NaN where it is undefined.
func TestSpearman(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name   string
		xs, ys []float64
		want   float64
	}{
		{"same order", []float64{1, 2, 3, 4}, []float64{10, 20, 30, 1000}, 1},
		{"reversed", []float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		// ranks x 1 2 3 4 5, y 2 1 4 3 5: d^2 = 4, rho = 1 - 6*4/(5*24) = 0.8
		{"one swap each", []float64{1, 2, 3, 4, 5}, []float64{2, 1, 4, 3, 5}, 0.8},
		// x ranks 1.5 1.5 3, y ranks 1 2 3: Pearson of the ranks = sqrt(3)/2
		{"ties averaged", []float64{0.5, 0.5, 1}, []float64{1, 2, 3}, math.Sqrt(3) / 2},
		{"constant scores", []float64{1, 1, 1}, []float64{1, 2, 3}, nan},
		{"one pair", []float64{1}, []float64{1}, nan},
	} {
		got := Spearman(tc.xs, tc.ys)
		if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-12) {
			t.Errorf("%s: Spearman = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBlockCountsColumns: exec_covered is the share of executions in
// blocks of score >= T (all of them in the exact mode), score_count_rho
// the same in every row, both empty without block counts; blocks.csv has
// the most executed block first.
func TestBlockCountsColumns(t *testing.T) {
	bc := &BlockCounts{Blocks: []BlockCount{
		{"f", 0, 0, 0.2, 10},
		{"f", 0x10, 1, 0.9, 70},
		{"g", 0, 2, 1, 20},
	}, Execs: 100, Rho: 0.5}
	for _, tc := range []struct {
		t    float64
		want float64
	}{{0, 1}, {0.5, 0.9}, {0.95, 0.2}, {1.01, 0}} {
		if got := bc.Covered(tc.t); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Covered(%v) = %v, want %v", tc.t, got, tc.want)
		}
	}
	res := []*Result{{Config: Config{Exact: true}}, {Config: Config{Threshold: 0.5, PageSize: 4096}}}
	for _, c := range []struct {
		bc            *BlockCounts
		covered, rhos [2]string
	}{
		{bc, [2]string{"1.00000", "0.90000"}, [2]string{"0.5000", "0.5000"}},
		{nil, [2]string{"", ""}, [2]string{"", ""}},
	} {
		var buf bytes.Buffer
		if err := WriteCSV(&buf, res, c.bc); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&buf).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, name := range recs[0] {
			col[name] = i
		}
		for k := range 2 {
			if got := recs[k+1][col["exec_covered"]]; got != c.covered[k] {
				t.Errorf("row %d: exec_covered %q, want %q", k, got, c.covered[k])
			}
			if got := recs[k+1][col["score_count_rho"]]; got != c.rhos[k] {
				t.Errorf("row %d: score_count_rho %q, want %q", k, got, c.rhos[k])
			}
		}
	}
	var buf bytes.Buffer
	if err := WriteBlocksCSV(&buf, bc); err != nil {
		t.Fatal(err)
	}
	if want := "function,offset,loop_depth,score,count\nf,0x10,1,0.900000,70\ng,0x0,2,1.000000,20\nf,0x0,0,0.200000,10\n"; buf.String() != want {
		t.Errorf("blocks.csv:\n%s\nwant:\n%s", buf.String(), want)
	}
}

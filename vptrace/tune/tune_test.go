package tune

import (
	"bytes"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hijack/preset/all"
	"hijack/rules"
)

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, math.NaN(), 3, 2, 4}
	if m := Median(xs); m != 3 {
		t.Errorf("median %v, want 3", m)
	}
	if q := Quantile(xs, 0.25); q != 2 {
		t.Errorf("q1 %v, want 2", q)
	}
	if q := Quantile([]float64{1, 2}, 0.5); q != 1.5 {
		t.Errorf("median of 1,2: %v", q)
	}
	if !math.IsNaN(Median(nil)) || !math.IsNaN(Min([]float64{math.NaN()})) {
		t.Error("empty input should give NaN")
	}
}

func TestParseSizes(t *testing.T) {
	got, err := ParseSizes("1024, 2K,4KiB,1M")
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{1024, 2048, 4096, 1 << 20}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	for _, bad := range []string{"", "4X", "K", "1,,2"} {
		if _, err := ParseSizes(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, err := ParseFloats("0,0.5,x"); err == nil {
		t.Error("ParseFloats accepted x")
	}
	if s := rules.FormatSize(4096); s != "4K" {
		t.Errorf("FormatSize(4096) = %q", s)
	}
}

func TestHungarian(t *testing.T) {
	// the best assignment is the anti-diagonal
	cost := [][]float64{{4, 1, 3}, {2, 0, 5}, {3, 2, 2}}
	got := hungarian(cost)
	want := []int{1, 0, 2}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	// rectangular: 2 rows, 3 columns
	got = hungarian([][]float64{{5, 1, 9}, {1, 5, 9}})
	if got[0] != 1 || got[1] != 0 {
		t.Fatalf("rectangular: %v", got)
	}
}

func pages(ps ...uint64) map[uint64]uint64 {
	m := map[uint64]uint64{}
	for _, p := range ps {
		m[p] = 1
	}
	return m
}

func span(lo, n uint64) []uint64 {
	var s []uint64
	for p := lo; p < lo+n; p++ {
		s = append(s, p)
	}
	return s
}

func TestMatchByPagesNotOrder(t *testing.T) {
	ref := []*ThreadPages{
		{Name: "app", TID: 10, Pages: pages(1, 2)},
		{Name: "worker", TID: 11, Pages: pages(100, 101, 102)},
		{Name: "worker", TID: 12, Pages: pages(200, 201, 202)},
	}
	// the workers came in the other order; the main thread has another name
	got := []*ThreadPages{
		{Name: "prog", TID: 20, Pages: pages(1, 2)},
		{Name: "worker", TID: 21, Pages: pages(200, 201)},
		{Name: "worker", TID: 22, Pages: pages(100, 102)},
	}
	m := Match(ref, got)
	if m[0] != 0 || m[1] != 2 || m[2] != 1 {
		t.Fatalf("match %v, want [0 2 1]", m)
	}
	// identical threads pair up in creation order
	same := []*ThreadPages{{Name: "w", Pages: pages(1)}, {Name: "w", Pages: pages(1)}}
	if m := Match(same, same); m[0] != 0 || m[1] != 1 {
		t.Fatalf("identical threads: %v", m)
	}
}

// run builds a RunTrace from per-thread page lists.
func run(ths ...[]uint64) *RunTrace {
	rt := &RunTrace{}
	for i, ps := range ths {
		rt.Threads = append(rt.Threads, &ThreadPages{Name: "t", TID: uint32(100 + i), Pages: pages(ps...)})
	}
	return rt
}

func TestCompareAlignsMovedMappings(t *testing.T) {
	// Reference: thread 0 has mappings A (64 pages) and B (65 pages) far
	// apart, thread 1 has C (64) and D (65) adjacent; both read a shared
	// 10-page region S in the image (not moved).
	img := span(0x555555600, 10)
	A, B := span(0x7ffff0000, 64), span(0x7ffff4000, 65)
	C, D := span(0x7fffa0000, 64), span(0x7fffa0040, 65)
	// Thread 0 also has E, a one-page mapping of its own.
	ref := run(append(append(cp(img), A...), append(B, 0x7ffff8000)...), append(append(cp(img), C...), D...))
	ref.ImageLo, ref.ImageHi = 0x555555000, 0x555556000
	// The run: every mapping elsewhere; thread 0's A and B now adjacent,
	// thread 1's C and D apart, and C where A was.
	A2, B2 := span(0x7fffb0000, 64), span(0x7fffb0040, 65)
	C2, D2 := span(0x7ffff0000, 64), span(0x7ffe80000, 65)
	got := run(append(append(cp(img), A2...), append(B2, 0x7fffc1234)...), append(append(cp(img), C2...), D2...))
	got.ImageLo, got.ImageHi = ref.ImageLo, ref.ImageHi
	a := Compare(ref, got)
	if a.Recall != 1 || a.Precision != 1 {
		t.Fatalf("recall %v precision %v, want 1 1 (%+v)", a.Recall, a.Precision, a)
	}
	// A run that misses mapping D and has two pages no one else has.
	got = run(append(append(cp(img), A2...), append(B2, 0x7fffc1234)...), append(append(cp(img), C2...), 0x7ffd00000, 0x7ffd00001))
	got.ImageLo, got.ImageHi = ref.ImageLo, ref.ImageHi
	a = Compare(ref, got)
	wantR := float64(10+64+10+64+65+1) / float64(2*10+64+65+1+64+65)
	wantP := float64(10+64+10+64+65+1) / float64(10+64+2+10+64+65+1)
	if math.Abs(a.Recall-wantR) > 1e-9 || math.Abs(a.Precision-wantP) > 1e-9 {
		t.Fatalf("recall %v precision %v, want %v %v", a.Recall, a.Precision, wantR, wantP)
	}
}

func cp(s []uint64) []uint64 { return append([]uint64(nil), s...) }

// heapRun is a run of a program whose threads each have a malloc arena
// (nodes) and a large block: layouts seen with glibc malloc (the tune
// tests' th workload) that Align must line up.
type heapThread struct {
	nodes, big uint64 // first page of each, 0: none
	nNodes     uint64
	nBig       uint64
}

func heapRun(ths []heapThread) *RunTrace {
	var ps [][]uint64
	for _, h := range ths {
		p := span(0x555555600, 3) // the image: the same in every run
		p = append(p, span(h.nodes, h.nNodes)...)
		p = append(p, span(h.big, h.nBig)...)
		ps = append(ps, p)
	}
	rt := run(ps...)
	rt.ImageLo, rt.ImageHi = 0x555555000, 0x555556000
	return rt
}

func TestCompareHeapLayouts(t *testing.T) {
	const arena = 0x4000 // pages between arenas (64 MiB)
	const nn, nb = 40, 65
	// The reference: 12 threads, each with its own arena and an mmap'ed
	// block, the blocks packed below the arenas.
	var refTh []heapThread
	for k := uint64(0); k < 12; k++ {
		refTh = append(refTh, heapThread{nodes: 0x7fff00000 + k*arena, nNodes: nn, big: 0x7ffe00000 + k*(nb+1), nBig: nb})
	}
	for _, tc := range []struct {
		name string
		got  func(k uint64) heapThread
	}{
		{"arenas in another order, blocks elsewhere", func(k uint64) heapThread {
			return heapThread{nodes: 0x7fff00000 + (11-k)*arena, nNodes: nn, big: 0x7ffd00000 + (11-k)*(nb+3), nBig: nb}
		}},
		{"large blocks from the arena after the mmap threshold grew", func(k uint64) heapThread {
			a := 0x7fff00000 + (k*5%12)*arena
			if k%3 == 1 {
				// the block right after the nodes, sharing a page
				return heapThread{nodes: a, nNodes: nn, big: a + nn - 1, nBig: nb}
			}
			return heapThread{nodes: a, nNodes: nn, big: 0x7ffd00000 + k*(nb+2), nBig: nb}
		}},
		{"arenas of exited threads reused by later ones", func(k uint64) heapThread {
			// threads k and k+6 use the same arena one after the other,
			// the block after the nodes; the first ones' blocks mmap'ed
			a := 0x7fff00000 + (k%6)*arena + 0x27
			if k >= 6 {
				return heapThread{nodes: a, nNodes: nn, big: a + nn - 1, nBig: nb}
			}
			return heapThread{nodes: a, nNodes: nn, big: 0x7ffd00000 + k*(nb+2), nBig: nb}
		}},
	} {
		var gotTh []heapThread
		for k := range uint64(12) {
			gotTh = append(gotTh, tc.got(k))
		}
		ref, got := heapRun(refTh), heapRun(gotTh)
		// every pair of the run lands on the reference's (where the
		// block shares a page with the nodes, the run has a pair less)
		if a := Compare(ref, got); a.Hits != a.Pairs || a.Pairs < a.RefPairs-12 {
			t.Errorf("%s: %d of the run's %d pairs on the reference's %d (recall %v precision %v)",
				tc.name, a.Hits, a.Pairs, a.RefPairs, a.Recall, a.Precision)
		}
	}
}

// TestCompareThreadLeftOut: a build that traces nothing of the main
// thread (T=1 leaves its code out) has one thread less; with no pages in
// the image to tell threads apart, creation order alone would pair the
// first worker with the main thread and every worker with the next one.
func TestCompareThreadLeftOut(t *testing.T) {
	const arena = 0x4000
	refP := [][]uint64{span(0x7ffff7000, 10)} // the main thread's block
	var gotP [][]uint64
	for k := uint64(0); k < 4; k++ {
		nodes := span(0x7fff00000+k*arena, 40)
		refP = append(refP, append(cp(nodes), span(0x7ffe00000+k*70, 65)...))
		// the run traces the nodes only; its arenas in another order
		gotP = append(gotP, span(0x7fff00000+(3-k)*arena+0x27, 40))
	}
	ref, got := run(refP...), run(gotP...)
	ref.ImageLo, ref.ImageHi = 0x555555000, 0x555556000
	got.ImageLo, got.ImageHi = ref.ImageLo, ref.ImageHi
	a := Compare(ref, got)
	if want := float64(4*40) / float64(10+4*105); a.Precision != 1 || math.Abs(a.Recall-want) > 1e-9 {
		t.Fatalf("recall %v precision %v, want %v 1", a.Recall, a.Precision, want)
	}
}

func TestCompareIdentical(t *testing.T) {
	ref := run(span(0x7ffff0000, 20), span(0x7ffff0100, 20))
	got := run(span(0x7ffff0000, 20), span(0x7ffff0100, 20))
	if a := Compare(ref, got); a.Recall != 1 || a.Precision != 1 || a.CountError != 0 || got.Shifted != 0 {
		t.Fatalf("%+v, shifted %d", a, got.Shifted)
	}
	empty := run(nil, nil)
	if a := Compare(ref, empty); a.Recall != 0 || !math.IsNaN(a.Precision) {
		t.Fatalf("empty run: %+v", a)
	}
}

// TestJudge: which comparisons count, what results.csv says about the
// others, and the warnings.
func TestJudge(t *testing.T) {
	nan := math.NaN()
	exact := func(rs, ps []float64) *Result {
		return &Result{Config: Config{Exact: true}, Plain: []float64{1, 1, 1}, Inst: []float64{3, 3, 3}, Recall: rs, Precision: ps,
			SelfRecall: rs, SelfPrecision: ps}
	}
	selfAgree := func(r *Result, rs, ps []float64) *Result {
		r.SelfRecall, r.SelfPrecision = rs, ps
		return r
	}
	approx := func(rs, ps []float64) *Result {
		return &Result{Config: Config{Threshold: 0, PageSize: 4096}, Plain: []float64{1, 1, 1}, Inst: []float64{2, 2, 2}, Recall: rs, Precision: ps}
	}
	for _, tc := range []struct {
		name          string
		ref, run      *Result
		stable        [2]string // layout_stable of the two rows
		recall        [2]string // recall of the two rows
		compared      string    // of the second row
		warn          string    // in the warning; "" for none
		unstableTotal int
	}{
		{"all comparable", exact([]float64{nan, 0.999, 1}, []float64{nan, 1, 1}), approx([]float64{0.98, 0.99, 0.97}, []float64{1, 1, 0.999}),
			[2]string{"1", "1"}, [2]string{"0.99950", "0.98000"}, "3", "", 0},
		{"the reference disagrees with itself", exact([]float64{nan, 0.93, 0.99}, []float64{nan, 0.95, 1}), approx([]float64{0.6, 0.7, 0.5}, []float64{0.6, 0.7, 0.5}),
			[2]string{"0", "0"}, [2]string{"", ""}, "0", "two runs of the exact build agree on only 93.0%", 5},
		{"a run with pages elsewhere", exact([]float64{nan, 1, 1}, []float64{nan, 1, 1}), approx([]float64{0.99, 0.7, 0.98}, []float64{1, 0.7, 1}),
			[2]string{"1", "0"}, [2]string{"1.00000", "0.98500"}, "2", "T=0 H=4K (run 2: recall 0.7000, precision 0.7000)", 1},
		{"no run comparable", exact([]float64{nan, 1}, []float64{nan, 1}), approx([]float64{0.5, 0.5, 0.5}, []float64{0.9, 0.9, 0.9}),
			[2]string{"1", "0"}, [2]string{"1.00000", ""}, "0", "pages the reference never touched", 3},
		{"runs of a build disagree with each other", exact([]float64{nan, 1}, []float64{nan, 1}),
			selfAgree(approx([]float64{0.994, 0.999, 0.998}, []float64{1, 1, 1}), []float64{nan, 0.96, 1}, []float64{nan, 0.99, 1}),
			[2]string{"1", "0"}, [2]string{"1.00000", ""}, "0", "T=0 H=4K (recall 0.9600, precision 0.9900", 3},
	} {
		var progress strings.Builder
		e := &experiment{rep: &Report{}, warned: map[string]bool{}, progress: &progress,
			builds: []*build{{cfg: tc.ref.Config, res: tc.ref}, {cfg: tc.run.Config, res: tc.run}}}
		e.judge()
		var buf bytes.Buffer
		if err := WriteCSV(&buf, []*Result{tc.ref, tc.run}, nil); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&buf).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, c := range recs[0] {
			col[c] = i
		}
		for k := range 2 {
			row := recs[k+1]
			if row[col["layout_stable"]] != tc.stable[k] || row[col["recall"]] != tc.recall[k] {
				t.Errorf("%s: row %d: layout_stable %q recall %q, want %q %q", tc.name, k, row[col["layout_stable"]], row[col["recall"]], tc.stable[k], tc.recall[k])
			}
		}
		if c := recs[2][col["compared"]]; c != tc.compared {
			t.Errorf("%s: compared %s, want %s", tc.name, c, tc.compared)
		}
		if e.rep.Unstable != tc.unstableTotal {
			t.Errorf("%s: %d runs do not count, want %d", tc.name, e.rep.Unstable, tc.unstableTotal)
		}
		switch {
		case tc.warn == "" && len(e.rep.Warnings) > 0:
			t.Errorf("%s: warnings %q", tc.name, e.rep.Warnings)
		case tc.warn != "" && (len(e.rep.Warnings) != 1 || !strings.Contains(e.rep.Warnings[0], tc.warn)):
			t.Errorf("%s: warnings %q, want one with %q", tc.name, e.rep.Warnings, tc.warn)
		}
	}
}

func TestRulesOverride(t *testing.T) {
	src := []byte(`version: 1
rules:
  - preset: vptrace
    functions: ["work_*"]
    params:
      threshold: 0.0
      sizeexp: 12
  - preset: vptrace
    functions: ["main"]
`)
	rf, err := rulesFor(all.Presets().Registry(), Config{Threshold: 0.5, PageSize: 1024}, "rules.yaml", src, []string{"usestack=true"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rf.Rules) != 2 {
		t.Fatalf("%d rules", len(rf.Rules))
	}
	for _, r := range rf.Rules {
		p := r.Params
		if p.Float("threshold") != 0.5 || p.Size("pagesize") != 1024 || p.Bool("exact") || !p.Bool("usestack") {
			t.Errorf("rule %d: %s", r.Index, p.Canonical())
		}
	}
	if !rf.Rules[0].Matches("work_fill") || rf.Rules[0].Matches("main") {
		t.Error("the functions of the rule changed")
	}
	rf, err = rulesFor(all.Presets().Registry(), Config{Exact: true}, "", nil, []string{"usestack=true"})
	if err != nil {
		t.Fatal(err)
	}
	if p := rf.Rules[0].Params; !p.Bool("exact") || p.Float("threshold") != 0 || !p.Bool("usestack") {
		t.Errorf("exact: %s", p.Canonical())
	}
	// Other presets' rules stay as they are, but for parameters they
	// declare themselves.
	mixed := []byte("version: 1\nrules:\n  - preset: pad\n    functions: [init]\n    params: {seed: 7}\n  - preset: vptrace\n    params: {pagesize: 2M}\n")
	rf, err = rulesFor(all.Presets().Registry(), Config{Threshold: 1, PageSize: 8192}, "mixed.yaml", mixed, []string{"maxlen=3"})
	if err != nil {
		t.Fatal(err)
	}
	if p := rf.Rules[0].Params; p.Int("seed") != 7 || p.Int("maxlen") != 3 {
		t.Errorf("pad rule: %s", p.Canonical())
	}
	if p := rf.Rules[1].Params; p.Float("threshold") != 1 || p.Size("pagesize") != 8192 {
		t.Errorf("vptrace rule: %s", p.Canonical())
	}
	if _, err := rulesFor(all.Presets().Registry(), Config{Threshold: 0}, "r.yaml", []byte("version: 1\nrules:\n  - preset: pad\n"), nil); err == nil {
		t.Error("a rules file without vptrace rules was accepted")
	}
	if _, err := rulesFor(all.Presets().Registry(), Config{Threshold: 0, PageSize: 4096}, "", nil, []string{"bogus=1"}); err == nil {
		t.Error("an unknown parameter was accepted")
	}
}

func TestCSVSchema(t *testing.T) {
	rs := []*Result{
		{Config: Config{Exact: true}, Plain: []float64{1, 1}, Inst: []float64{3, 3}, Recall: []float64{math.NaN(), 1}},
		{Config: Config{Threshold: 0.5, PageSize: 2048}, Sites: 7, Blocks: 3, Plain: []float64{1, 2}, Inst: []float64{2, 3},
			Recall: []float64{0.5, 0.7}, Precision: []float64{1, 1}},
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, rs, nil); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0][:5], ",") != "threshold,pagesize,slowdown,recall,precision" || len(recs) != 3 {
		t.Fatalf("header %v, %d rows", recs[0], len(recs))
	}
	row := map[string]string{}
	for i, c := range recs[0] {
		row[c] = recs[2][i]
	}
	if row["slowdown"] != "1.6667" || row["recall"] != "0.60000" || row["pagesize"] != "2048" || row["mode"] != "approx" || row["reps"] != "2" || row["sites"] != "7" {
		t.Errorf("row %v", row)
	}
}

// freshWork deletes only a work directory tune made: --out . in a folder
// with a "work" directory of the user's must not delete it.
func TestFreshWork(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users", "work")
	os.MkdirAll(users, 0o755)
	os.WriteFile(filepath.Join(users, "thesis.tex"), []byte("precious"), 0o644)
	if err := freshWork(users); err == nil || !strings.Contains(err.Error(), "not made by hijack tune") {
		t.Errorf("user's directory: error %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(users, "thesis.tex")); err != nil || string(b) != "precious" {
		t.Fatalf("the user's file is gone: %v", err)
	}
	ours := filepath.Join(dir, "out", "work")
	for i := 0; i < 2; i++ { // made, then made again over the old one
		if err := freshWork(ours); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(ours, "left"), nil, 0o644)
	}
	if es, _ := os.ReadDir(ours); len(es) != 2 {
		t.Errorf("work directory holds %d entries after a second start, want the stamp and one file", len(es))
	}
}

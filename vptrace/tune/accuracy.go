package tune

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"

	"hijack/vptrace/trace"
)

// ThreadPages is what one thread of a run traced, with pages translated to
// the reference build's addresses.
type ThreadPages struct {
	Name   string
	TID    uint32
	File   int    // which of the run's trace files (0: the first process)
	Start  uint64 // first event, ns since the trace start
	Pages  map[uint64]uint64
	Events uint64
}

// RunTrace is what one run of an instrumented build traced: every thread
// of every process (a fork child writes its own file), in creation order.
type RunTrace struct {
	Threads  []*ThreadPages
	Events   uint64
	Drops    uint64
	Complete bool  // every file ends with an END chunk
	Bytes    int64 // size of the trace files
	Warnings []string

	// Layout and Bias: the build's executable and where it was loaded
	// (nil, 0 when unknown). Image: the page range of the reference's
	// executable image, which the layout translates exactly and Align
	// leaves alone.
	Layout             *Layout
	Bias               uint64
	ImageLo, ImageHi   uint64
	Shifted, Unshifted int // pages Align moved, and pages it considered
}

// LoadRun reads the trace files of one run of the build whose executable
// has layout l (nil: unknown). With ref, the run of the reference build,
// addresses in l's image and brk heap are translated to where the same
// data was in the reference run (NewTranslator). A page's count is the
// number of accesses its events stand for: events times the covers of
// their site (ABI.md), so that counts of builds with different page-size
// estimates compare with the reference's exact access counts.
func LoadRun(paths []string, l *Layout, ref *RunTrace) (*RunTrace, error) {
	type file struct {
		tr   *trace.Trace
		fork bool
	}
	var files []file
	rt := &RunTrace{Complete: true, Layout: l}
	for _, p := range paths {
		tr, err := trace.Load(p)
		if err != nil {
			return nil, err
		}
		if st, err := os.Stat(p); err == nil {
			rt.Bytes += st.Size()
		}
		if tr.End == nil {
			rt.Complete = false
		}
		if tr.Damaged > 0 {
			rt.Warnings = append(rt.Warnings, fmt.Sprintf("%s: %d damaged region(s)", p, tr.Damaged))
		}
		files = append(files, file{tr, tr.Header.Flags&trace.HeaderForked != 0})
	}
	slices.SortStableFunc(files, func(a, b file) int {
		switch {
		case a.fork != b.fork:
			if a.fork {
				return 1
			}
			return -1
		case a.tr.Header.OpenTime < b.tr.Header.OpenTime:
			return -1
		case a.tr.Header.OpenTime > b.tr.Header.OpenTime:
			return 1
		}
		return 0
	})
	if l != nil {
		found := false
		for _, f := range files {
			if b, ok := l.Bias(f.tr); ok {
				rt.Bias, found = b, true
				break
			}
		}
		if !found && len(files) > 0 {
			rt.Warnings = append(rt.Warnings, fmt.Sprintf("%s: no instrumented object of the executable in the trace: addresses not translated", l.Path))
			rt.Layout = nil
		}
	}
	var tl *Translator
	il, ib := rt.Layout, rt.Bias
	if ref != nil && ref.Layout != nil && rt.Layout != nil {
		tl = NewTranslator(rt.Layout, rt.Bias, ref.Layout, ref.Bias)
		il, ib = ref.Layout, ref.Bias
	}
	if il != nil {
		rt.ImageLo, rt.ImageHi = (il.Start+ib)>>trace.PageShift, (il.End+ib+pageMask)>>trace.PageShift
	}
	for fi, f := range files {
		var ths []*ThreadPages
		for _, th := range f.tr.Threads {
			tp := &ThreadPages{Name: th.Name, TID: th.TID, File: fi, Start: th.First, Pages: make(map[uint64]uint64, len(th.Pages)), Events: th.Events}
			for _, in := range th.Instances {
				tp.Start = min(tp.Start, in.Start)
			}
			for _, p := range th.Pages {
				n := uint64(0)
				sum := uint64(0)
				for _, sc := range p.Sites {
					c := uint64(1)
					if s := f.tr.Site(sc.Site); s.Known() && s.Covers > 1 {
						c = uint64(s.Covers)
					}
					n += sc.Count * c
					sum += sc.Count
				}
				if p.Events > sum {
					n += p.Events - sum
				}
				pg := p.Page
				if !tl.Identity() {
					pg = tl.Addr(p.Addr()) >> trace.PageShift
				}
				tp.Pages[pg] += n
			}
			rt.Events += th.Events
			rt.Drops += th.Drops
			ths = append(ths, tp)
		}
		// creation order: the kernel hands out thread ids in increasing
		// order (the trace lists threads by TID); the time of the first
		// event would race between threads started together
		slices.SortStableFunc(ths, func(a, b *ThreadPages) int { return cmp.Compare(a.TID, b.TID) })
		rt.Threads = append(rt.Threads, ths...)
	}
	return rt, nil
}

// clone copies rt with its own page maps (Compare changes got's).
func (rt *RunTrace) clone() *RunTrace {
	c := *rt
	c.Threads = make([]*ThreadPages, len(rt.Threads))
	for i, t := range rt.Threads {
		ct := *t
		ct.Pages = maps.Clone(t.Pages)
		c.Threads[i] = &ct
	}
	return &c
}

// Accuracy compares a run's trace with the reference run's.
type Accuracy struct {
	// Recall: the fraction of the reference's (thread, page) pairs the run
	// has; Precision: the fraction of the run's pairs the reference has.
	// NaN when there is nothing to divide by.
	Recall, Precision float64
	// CountError: sum over all pairs of |count - reference count| divided
	// by the sum of the reference counts (0: every count exact; 1: e.g.
	// nothing counted).
	CountError float64
	// PageRecall: recall of pages regardless of thread.
	PageRecall       float64
	Pairs, RefPairs  int // (thread, page) pairs in the run and in the reference
	Hits             int // pairs in both
	Threads, Matched int // reference threads, and how many were matched
}

// Compare matches the run's threads with the reference's (Match), aligns
// the run's memory with the reference's under that matching (Align: it
// changes got's pages), matches again on the aligned pages until the
// matching no longer changes, and counts the (thread, page) pairs the two
// runs agree on.
//
// The first matching looks only at the executable image's pages (at the
// same addresses in both runs), names and creation order: other memory
// may have moved, another thread's mapping may even sit where this one's
// was. Where the image's pages do not tell threads apart, creation order
// may pair a thread with the wrong counterpart (a build that traces
// nothing of one thread shifts the others by one), so a second start
// also weighs how alike the threads' other memory is (shapes); the
// start that ends with more pairs in common wins.
func Compare(ref, got *RunTrace) Accuracy {
	orig := make([]map[uint64]uint64, len(got.Threads))
	for j, t := range got.Threads {
		orig[j] = t.Pages
	}
	ri, gi := imageOnly(ref), imageOnly(got)
	starts := [][]int{Match(ri, gi)}
	if m := matchWith(ri, gi, shapes(ref, got)); !slices.Equal(m, starts[0]) {
		starts = append(starts, m)
	}
	var best Accuracy
	var bestPages []map[uint64]uint64
	var bestShifted, bestUnshifted int
	for k, m := range starts {
		if k > 0 && best.Hits == best.Pairs {
			break // every pair of the run found: no start can do better
		}
		a := compareFrom(ref, got, orig, m)
		if k == 0 || a.Hits > best.Hits {
			best, bestShifted, bestUnshifted = a, got.Shifted, got.Unshifted
			bestPages = bestPages[:0]
			for _, t := range got.Threads {
				bestPages = append(bestPages, t.Pages)
			}
		}
	}
	for j, t := range got.Threads {
		t.Pages = bestPages[j]
	}
	got.Shifted, got.Unshifted = bestShifted, bestUnshifted
	return best
}

// compareFrom aligns and matches from matching m until the matching no
// longer changes (got's pages start from orig every time) and counts.
func compareFrom(ref, got *RunTrace, orig []map[uint64]uint64, m []int) Accuracy {
	for iter := 0; ; iter++ {
		for j, t := range got.Threads {
			t.Pages = orig[j] // Align replaces the maps, it does not change them
		}
		Align(ref, got, m)
		m2 := Match(ref.Threads, got.Threads)
		if slices.Equal(m, m2) || iter == 3 {
			break
		}
		m = m2
	}
	return count(ref, got, m)
}

// count compares the runs' pages under matching m.
func count(ref, got *RunTrace, m []int) Accuracy {
	var a Accuracy
	a.Threads = len(ref.Threads)
	var errSum, refSum float64
	used := make([]bool, len(got.Threads))
	for i, rt := range ref.Threads {
		a.RefPairs += len(rt.Pages)
		var gp map[uint64]uint64
		if j := m[i]; j >= 0 {
			a.Matched++
			used[j] = true
			gp = got.Threads[j].Pages
		}
		for pg, c := range rt.Pages {
			refSum += float64(c)
			g, ok := gp[pg]
			if ok {
				a.Hits++
			}
			errSum += math.Abs(float64(g) - float64(c))
		}
		for pg, g := range gp {
			if _, ok := rt.Pages[pg]; !ok {
				errSum += float64(g)
			}
		}
	}
	for j, gt := range got.Threads {
		a.Pairs += len(gt.Pages)
		if !used[j] {
			for _, g := range gt.Pages {
				errSum += float64(g)
			}
		}
	}
	a.Recall = ratio(a.Hits, a.RefPairs)
	a.Precision = ratio(a.Hits, a.Pairs)
	a.CountError = math.NaN()
	if refSum > 0 {
		a.CountError = errSum / refSum
	}
	refPages, gotPages := map[uint64]bool{}, map[uint64]bool{}
	for _, t := range ref.Threads {
		for pg := range t.Pages {
			refPages[pg] = true
		}
	}
	for _, t := range got.Threads {
		for pg := range t.Pages {
			gotPages[pg] = true
		}
	}
	hits := 0
	for pg := range refPages {
		if gotPages[pg] {
			hits++
		}
	}
	a.PageRecall = ratio(hits, len(refPages))
	return a
}

// imageOnly returns the threads of a run with only their pages in the
// executable image.
func imageOnly(rt *RunTrace) []*ThreadPages {
	out := make([]*ThreadPages, len(rt.Threads))
	for i, t := range rt.Threads {
		c := *t
		c.Pages = map[uint64]uint64{}
		for pg, n := range t.Pages {
			if pg >= rt.ImageLo && pg < rt.ImageHi {
				c.Pages[pg] = n
			}
		}
		out[i] = &c
	}
	return out
}

// shapes returns how alike the memory outside the executable image of
// two runs' threads is, in [0, 1): the sizes of their runs of
// contiguous pages, largest with largest, overlap. A build that traces
// only some threads (a high threshold leaves a thread's code out) must
// not shift every other thread's counterpart by one: its first thread
// is like a worker of the reference, not like its main thread.
func shapes(ref, got *RunTrace) func(i, j int) float64 {
	sizes := func(rt *RunTrace) [][]uint64 {
		out := make([][]uint64, len(rt.Threads))
		for i, t := range rt.Threads {
			var ps []uint64
			for pg := range t.Pages {
				if pg < rt.ImageLo || pg >= rt.ImageHi {
					ps = append(ps, pg)
				}
			}
			slices.Sort(ps)
			var runs []uint64
			for k, pg := range ps {
				if k > 0 && pg == ps[k-1]+1 {
					runs[len(runs)-1]++
					continue
				}
				runs = append(runs, 1)
			}
			slices.SortFunc(runs, func(a, b uint64) int { return cmp.Compare(b, a) })
			out[i] = runs[:min(len(runs), shapeRuns)]
		}
		return out
	}
	rs, gs := sizes(ref), sizes(got)
	var top uint64
	sim := make([][]uint64, len(rs))
	for i, r := range rs {
		sim[i] = make([]uint64, len(gs))
		for j, g := range gs {
			for k := 0; k < len(r) && k < len(g); k++ {
				sim[i][j] += min(r[k], g[k])
			}
			top = max(top, sim[i][j])
		}
	}
	return func(i, j int) float64 { return float64(sim[i][j]) / float64(top+1) }
}

// shapeRuns: how many of a thread's largest runs of pages shapes compares.
const shapeRuns = 32

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// Match pairs the threads of two runs of the same program. Kernel thread
// ids differ from run to run, so threads are matched by what identifies
// them across runs:
//
//  1. the process (trace file) they ran in, in fork order;
//  2. their name (the main thread's is the program's name; others inherit
//     it or are named with pthread_setname_np);
//  3. within a group of equal names, the assignment that maximises the
//     number of pages the paired threads have in common (the Hungarian
//     method), ties broken by creation order (kernel thread ids increase
//     in creation order within a run). Threads find their counterpart by
//     the data they touch; identical threads that touch the same pages
//     pair up in creation order.
//
// Threads left over (different names, or more threads in one run) are
// then matched the same way regardless of name. m[i] is the index in got
// of ref[i]'s counterpart, or -1.
func Match(ref, got []*ThreadPages) []int { return matchWith(ref, got, nil) }

// matchWith is Match with a tie-break for equal numbers of common pages:
// more similar threads (sim(i, j) in [0, 1), higher is more similar) pair
// first, before creation order decides.
func matchWith(ref, got []*ThreadPages, sim func(i, j int) float64) []int {
	m := make([]int, len(ref))
	for i := range m {
		m[i] = -1
	}
	usedG := make([]bool, len(got))
	type key struct {
		file int
		name string
	}
	groups := map[key][2][]int{}
	var order []key
	for i, t := range ref {
		k := key{t.File, t.Name}
		g := groups[k]
		if g[0] == nil && g[1] == nil {
			order = append(order, k)
		}
		g[0] = append(g[0], i)
		groups[k] = g
	}
	for j, t := range got {
		k := key{t.File, t.Name}
		g, ok := groups[k]
		if !ok {
			continue
		}
		g[1] = append(g[1], j)
		groups[k] = g
	}
	for _, k := range order {
		g := groups[k]
		assign(ref, got, g[0], g[1], m, usedG, sim)
	}
	var ri, gi []int
	for i := range ref {
		if m[i] < 0 {
			ri = append(ri, i)
		}
	}
	for j := range got {
		if !usedG[j] {
			gi = append(gi, j)
		}
	}
	if len(ri) > 0 && len(gi) > 0 {
		assign(ref, got, ri, gi, m, usedG, sim)
	}
	return m
}

// maxAssign bounds the size of a group the Hungarian method handles
// (O(n^3)); larger groups pair up in creation order.
const maxAssign = 256

// assign pairs ref[ri] with got[gi] (both in creation order).
func assign(ref, got []*ThreadPages, ri, gi []int, m []int, usedG []bool, sim func(i, j int) float64) {
	if len(ri) == 0 || len(gi) == 0 {
		return
	}
	if len(ri) > maxAssign || len(gi) > maxAssign || (len(ri) == 1 && len(gi) == 1) {
		for k := 0; k < len(ri) && k < len(gi); k++ {
			m[ri[k]] = gi[k]
			usedG[gi[k]] = true
		}
		return
	}
	n, mm := len(ri), len(gi)
	transpose := n > mm
	rows, cols := n, mm
	if transpose {
		rows, cols = mm, n
	}
	// cost: minus the common pages, plus a tiny penalty for pairing
	// threads far apart in creation order (decides ties)
	cost := make([][]float64, rows)
	for r := range cost {
		cost[r] = make([]float64, cols)
		for c := range cost[r] {
			i, j := r, c
			if transpose {
				i, j = c, r
			}
			common := float64(overlap(ref[ri[i]].Pages, got[gi[j]].Pages))
			if sim != nil {
				common += 0.5 * sim(ri[i], gi[j])
			}
			d := float64(i-j) / float64(max(n, mm))
			cost[r][c] = -common + 1e-4*math.Abs(d)
		}
	}
	col := hungarian(cost)
	for r, c := range col {
		i, j := r, c
		if transpose {
			i, j = c, r
		}
		m[ri[i]] = gi[j]
		usedG[gi[j]] = true
	}
}

func overlap(a, b map[uint64]uint64) int {
	if len(a) > len(b) {
		a, b = b, a
	}
	n := 0
	for k := range a {
		if _, ok := b[k]; ok {
			n++
		}
	}
	return n
}

// hungarian solves the assignment problem for a rows x cols cost matrix
// with rows <= cols: it returns for every row the column assigned to it,
// minimising the total cost.
func hungarian(a [][]float64) []int {
	n := len(a)
	mm := len(a[0])
	inf := math.Inf(1)
	u := make([]float64, n+1)
	v := make([]float64, mm+1)
	p := make([]int, mm+1) // p[j]: row assigned to column j (1-based), 0 none
	way := make([]int, mm+1)
	for i := 1; i <= n; i++ {
		p[0] = i
		j0 := 0
		minv := make([]float64, mm+1)
		used := make([]bool, mm+1)
		for j := range minv {
			minv[j] = inf
		}
		for {
			used[j0] = true
			i0 := p[j0]
			delta := inf
			j1 := 0
			for j := 1; j <= mm; j++ {
				if used[j] {
					continue
				}
				cur := a[i0-1][j-1] - u[i0] - v[j]
				if cur < minv[j] {
					minv[j] = cur
					way[j] = j0
				}
				if minv[j] < delta {
					delta = minv[j]
					j1 = j
				}
			}
			for j := 0; j <= mm; j++ {
				if used[j] {
					u[p[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
			if p[j0] == 0 {
				break
			}
		}
		for {
			j1 := way[j0]
			p[j0] = p[j1]
			j0 = j1
			if j0 == 0 {
				break
			}
		}
	}
	res := make([]int, n)
	for j := 1; j <= mm; j++ {
		if p[j] > 0 {
			res[p[j]-1] = j - 1
		}
	}
	return res
}

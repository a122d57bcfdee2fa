package tune

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Align moves got's pages outside the executable image (the heap, mmap'ed
// memory, thread stacks) to where the same memory was in the reference
// run, given a matching of the threads (m[i]: got's counterpart of
// ref.Threads[i], or -1, as Match returns). It changes got's page maps
// and returns how many pages it moved.
//
// With address-space randomisation off, a program's own mappings land at
// the same addresses in every run only if nothing else maps memory in
// between; but the vptrace runtime's Go part maps memory and starts
// threads (8 MiB stacks) concurrently with the program, threads' malloc
// arenas come in the order the threads first allocate, an exited
// thread's arena goes to the next thread that needs one, and malloc's
// mmap threshold grows when a large block is freed (later large blocks
// then come from an arena, not from mmap): a mapping may sit at another
// address, even in another hole, and used by another thread. Each mapping
// moves as a whole, but one thread's part of it may lie elsewhere than
// another's. Align recovers the displacements from the data:
//
//   - it cuts both runs' touched pages into clusters: runs of contiguous
//     pages touched by the same set of threads (so that neighbouring
//     mappings of different threads stay apart);
//   - candidate displacements superimpose clusters of about the same size
//     (votes weighted by size, more when the thread sets correspond under
//     the matching);
//   - the clusters of got that cover everything where they are stay,
//     the others, largest first, go where they cover the most (matched
//     thread, page) pairs of the reference that no cluster placed before
//     claimed (assignDisplacements has the tie-breaks); what a placement
//     leaves uncovered (two mappings adjacent in one run only, memory
//     two threads used at different places) is placed on its own, per
//     thread; clusters of fewer than minEvidence pages only take
//     displacements for which there is more evidence than themselves.
//
// Identical layouts give displacement 0 everywhere; pages the reference
// does not have stay where they are and count against precision.
func Align(ref, got *RunTrace, m []int) int {
	inImage := func(rt *RunTrace, pg uint64) bool { return pg >= rt.ImageLo && pg < rt.ImageHi }
	gotToRef := make([]int, len(got.Threads))
	for j := range gotToRef {
		gotToRef[j] = -1
	}
	for i, j := range m {
		if j >= 0 {
			gotToRef[j] = i
		}
	}
	// per page: which threads touched it (indices into ref.Threads; got's
	// threads as their reference counterparts, unmatched ones as -1-j)
	refThr := map[uint64][]int{}
	cnt := counts{ref: map[pair]uint64{}, got: map[pair]uint64{}}
	for i, t := range ref.Threads {
		for pg, n := range t.Pages {
			if !inImage(ref, pg) {
				refThr[pg] = append(refThr[pg], i)
				cnt.ref[pair{pg, i}] = n
			}
		}
	}
	gotThr := map[uint64][]int{}
	for j, t := range got.Threads {
		id := gotToRef[j]
		if id < 0 {
			id = -1 - j
		}
		for pg, n := range t.Pages {
			if !inImage(got, pg) {
				gotThr[pg] = append(gotThr[pg], id)
				cnt.got[pair{pg, id}] = n
			}
		}
	}
	got.Shifted, got.Unshifted = 0, len(gotThr)
	if len(refThr) == 0 || len(gotThr) == 0 {
		return 0
	}
	rc := clusters(refThr)
	gc := clusters(gotThr)
	cands := candidates(rc, gc)
	out := assignDisplacements(gc, rc, cands, gotThr, refThr, cnt)
	if len(out) == 0 {
		return 0
	}
	moved := map[uint64]bool{}
	for j, t := range got.Threads {
		id := gotToRef[j]
		if id < 0 {
			id = -1 - j
		}
		np := make(map[uint64]uint64, len(t.Pages))
		for pg, n := range t.Pages {
			if d, ok := out[pair{pg, id}]; ok {
				moved[pg] = true
				pg = uint64(int64(pg) + d)
			}
			np[pg] += n
		}
		t.Pages = np
	}
	got.Shifted = len(moved)
	return len(moved)
}

// cluster is a run of contiguous pages touched by the same threads.
type cluster struct {
	lo, hi uint64
	sig    string // the threads, sorted
}

func (c cluster) size() uint64 { return c.hi - c.lo + 1 }

func signature(ths []int) string {
	s := slices.Clone(ths)
	slices.Sort(s)
	var b strings.Builder
	for i, t := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(t))
	}
	return b.String()
}

// clusters cuts the touched pages into clusters, ascending.
func clusters(thr map[uint64][]int) []cluster {
	ps := make([]uint64, 0, len(thr))
	for pg := range thr {
		ps = append(ps, pg)
	}
	slices.Sort(ps)
	var cs []cluster
	for _, pg := range ps {
		sig := signature(thr[pg])
		if n := len(cs); n > 0 && pg == cs[n-1].hi+1 && cs[n-1].sig == sig {
			cs[n-1].hi = pg
			continue
		}
		cs = append(cs, cluster{pg, pg, sig})
	}
	return cs
}

// Limits of the candidate search: the largest clusters of each side vote;
// every voting cluster of got contributes its best-voted displacements, at
// most perCluster, and at most maxCandidates are tried.
const (
	voters        = 400
	perCluster    = 8
	maxCandidates = 256
	// a cluster also tries superimposing it on this many of the largest
	// reference clusters of each of its threads (twice as many
	// displacements at most, whatever the number of its threads: a
	// cluster many threads share costs no more)
	perThread = 64
)

// candidates returns the displacements to try, 0 first.
func candidates(rc, gc []cluster) []int64 {
	top := func(cs []cluster) []cluster {
		s := slices.Clone(cs)
		sort.SliceStable(s, func(i, j int) bool { return s[i].size() > s[j].size() })
		return s[:min(len(s), voters)]
	}
	rs, gs := top(rc), top(gc)
	votes := map[int64]float64{}
	own := make([][]int64, len(gs))
	for i, g := range gs {
		for _, r := range rs {
			a, b := g.size(), r.size()
			// superimpose the clusters' low ends, and their high ends:
			// of the same mapping, or one is part of the other (a
			// build traces fewer pages, or two mappings are adjacent
			// in one run and not in the other)
			w := float64(min(a, b))
			if a == b {
				w *= 2
			}
			if g.sig != r.sig {
				w /= 4
			}
			dd := int64(r.lo) - int64(g.lo)
			votes[dd] += w
			own[i] = append(own[i], dd)
			if a != b {
				dd = int64(r.hi) - int64(g.hi)
				votes[dd] += w
				own[i] = append(own[i], dd)
			}
		}
	}
	better := func(x, y int64) int {
		switch {
		case votes[x] > votes[y]:
			return -1
		case votes[x] < votes[y]:
			return 1
		case abs64(x) < abs64(y):
			return -1
		case abs64(x) > abs64(y):
			return 1
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	pick := map[int64]bool{}
	for _, ds := range own {
		slices.SortFunc(ds, better)
		ds = slices.Compact(ds)
		for _, dd := range ds[:min(len(ds), perCluster)] {
			if votes[dd] >= 2 { // one pair of single pages is no evidence
				pick[dd] = true
			}
		}
	}
	delete(pick, 0)
	ds := make([]int64, 0, len(pick))
	for dd := range pick {
		ds = append(ds, dd)
	}
	slices.SortFunc(ds, better)
	return append([]int64{0}, ds[:min(len(ds), maxCandidates-1)]...)
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// assignDisplacements places got's clusters greedily: first those that
// cover all their pairs where they are (that memory did not move; placed
// first so that a larger cluster of the same thread that moved cannot
// claim their pairs), then the others largest first (they are the most
// distinctive). Each goes where its (thread, page) pairs cover the most
// reference pairs not claimed yet. Claiming keeps two clusters from
// landing on the same reference pairs: repeated structures, like one
// arena per thread, pair up one to one. The displacements tried are the
// global candidates, and when those leave pairs uncovered, the piece's
// own superimpositions on the largest reference clusters of its threads
// (many alike clusters crowd the global list). Ties go to the
// displacement under which the rest of the piece's threads' runs of
// contiguous pages cover the most (a piece that lies inside a larger
// reference mapping fits in several places, its neighbours tell which),
// then to 0 (the layout did not change), then to the displacement of the
// nearest piece already placed, then to the displacement under which the
// cluster's access counts are closest to the reference's (sum of
// |log(1+a) - log(1+b)|), then to the better-voted candidate.
//
// A cluster may be several mappings that happen to be adjacent in one run
// and not in the other, or memory that several threads used one after the
// other (a malloc arena an exited thread left to the next) and that lies
// at different places for each of them in the other run: what a
// placement leaves uncovered is queued again, per thread, as runs of
// pages of their own, and takes a displacement of its own if one covers
// at least half of its pairs; otherwise it stays with the rest of its
// cluster. A cluster that covers nothing under any candidate stays where
// it is; clusters of fewer than minEvidence pages only take displacements
// for which there is more evidence than themselves. The result maps every
// moved (page, thread) pair to its displacement; threads without a
// counterpart move with the pieces they share pages with.
func assignDisplacements(cs, rc []cluster, cands []int64, gotThr, refThr map[uint64][]int, cnt counts) map[pair]int64 {
	claimed := map[pair]bool{}
	type item struct {
		c         cluster
		thr       int  // with one: the only thread of the piece
		one       bool // a remainder: one thread's pages
		remainder bool
		parentD   int64
		atZero    bool // covers all its pairs where it is
	}
	// the threads of the piece at page pg, and of the whole piece (a
	// cluster's pages have the same threads)
	threads := func(it item, pg uint64) []int {
		if it.one {
			return []int{it.thr}
		}
		return gotThr[pg]
	}
	pieceThreads := func(it item) []int { return threads(it, it.c.lo) }
	// covers counts (and with claim, claims) the reference pairs the
	// pairs of it at page pg cover when moved by dd
	covers := func(it item, pg uint64, dd int64, claim bool) int {
		to := uint64(int64(pg) + dd)
		rt := refThr[to]
		n := 0
		for _, t := range threads(it, pg) {
			if t >= 0 && slices.Contains(rt, t) && !claimed[pair{to, t}] {
				n++
				if claim {
					claimed[pair{to, t}] = true
				}
			}
		}
		return n
	}
	matched := func(it item) int {
		n := 0
		for pg := it.c.lo; pg <= it.c.hi; pg++ {
			for _, t := range threads(it, pg) {
				if t >= 0 {
					n++
				}
			}
		}
		return n
	}
	var queue []item
	for _, c := range cs {
		it := item{c: c}
		n := 0
		for pg := c.lo; pg <= c.hi; pg++ {
			n += covers(it, pg, 0, false)
		}
		it.atZero = n > 0 && n == matched(it)
		queue = append(queue, it)
	}
	less := func(a, b item) int {
		switch {
		case a.atZero != b.atZero:
			if a.atZero {
				return -1
			}
			return 1
		case a.c.size() != b.c.size():
			if a.c.size() > b.c.size() {
				return -1
			}
			return 1
		case a.c.lo < b.c.lo:
			return -1
		case a.c.lo > b.c.lo:
			return 1
		case a.thr < b.thr:
			return -1
		case a.thr > b.thr:
			return 1
		}
		return 0
	}
	slices.SortStableFunc(queue, less)
	var placed []placement // sorted by lo
	used := map[int64]bool{}
	// the size of the reference cluster of each page, and the reference
	// clusters of each thread
	refSize := map[uint64]uint64{}
	refOf := map[int][]cluster{}
	for _, c := range rc {
		for pg := c.lo; pg <= c.hi; pg++ {
			refSize[pg] = c.size()
		}
		for _, t := range refThr[c.lo] {
			refOf[t] = append(refOf[t], c)
		}
	}
	for _, cs := range refOf {
		slices.SortStableFunc(cs, func(a, b cluster) int { return cmp.Compare(b.size(), a.size()) })
	}
	// sameShape: c lands on reference clusters of about its size (a
	// small mapping that moved, not a few pages that happen to fall on
	// the edge of a larger mapping the run does not have)
	sameShape := func(c cluster, dk int64) bool {
		for pg := c.lo; pg <= c.hi; pg++ {
			if n, ok := refSize[uint64(int64(pg)+dk)]; ok && n > 2*c.size()+1 {
				return false
			}
		}
		return true
	}
	// support: pages of small clusters that a displacement covers entirely
	support := map[int64]int{}
	for _, c := range cs {
		if c.size() >= minEvidence {
			continue
		}
		for _, dk := range cands {
			all := true
			for pg := c.lo; pg <= c.hi && all; pg++ {
				all = covers(item{c: c}, pg, dk, false) > 0
			}
			if all {
				support[dk] += int(c.size())
			}
		}
	}
	// own: the candidates of a piece that is not small: the global ones
	// (cands, first), and those that superimpose it (low ends, high ends)
	// on the largest reference clusters of its threads, which the global
	// ones may lack when many clusters are alike
	own := func(it item) []int64 {
		if it.c.size() < minEvidence {
			return cands
		}
		ds := slices.Clone(cands)
		seen := map[int64]bool{}
		for _, d := range ds {
			seen[d] = true
		}
		for _, t := range pieceThreads(it) {
			if t < 0 {
				continue
			}
			for _, r := range refOf[t][:min(len(refOf[t]), perThread)] {
				for _, d := range []int64{int64(r.lo) - int64(it.c.lo), int64(r.hi) - int64(it.c.hi)} {
					if !seen[d] && len(ds) < len(cands)+2*perThread {
						seen[d] = true
						ds = append(ds, d)
					}
				}
			}
		}
		return ds
	}

	// the runs of contiguous pages of each thread: a piece's neighbours in
	// its thread's run are most likely the same mapping
	runsOf := threadRuns(gotThr)
	// ext counts the reference pairs that the rest of the runs of the
	// piece's threads (their pages next to it, not in it) would cover
	// moved by dd
	ext := func(it item, dd int64) int {
		n := 0
		for _, t := range pieceThreads(it) {
			if t < 0 {
				continue
			}
			for _, r := range overlapping(runsOf[t], it.c) {
				for pg := r.lo; pg <= r.hi; pg++ {
					if pg >= it.c.lo && pg <= it.c.hi {
						continue
					}
					to := uint64(int64(pg) + dd)
					if slices.Contains(refThr[to], t) && !claimed[pair{to, t}] {
						n++
					}
				}
			}
		}
		return n
	}

	out := map[pair]int64{}
	set := func(pg uint64, t int, d int64) {
		if d != 0 {
			out[pair{pg, t}] = d
		}
	}
	var score []int
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		c := it.c
		best, pairs := 0, matched(it)
		small := c.size() < minEvidence
		eval := func(ds []int64, from int) {
			for k := from; k < len(ds); k++ {
				dk := ds[k]
				score[k] = 0
				if small && dk != 0 && !used[dk] && support[dk] < minEvidence && !sameShape(c, dk) {
					continue // no evidence for a new displacement
				}
				n := 0
				for pg := c.lo; pg <= c.hi; pg++ {
					n += covers(it, pg, dk, false)
				}
				score[k] = n
			}
		}
		ds := cands
		score = slices.Grow(score[:0], len(ds))[:len(ds)]
		eval(ds, 0)
		best = slices.Max(score)
		if best < pairs {
			// The global candidates leave pairs uncovered: try the
			// piece's own superimpositions too, but only one that
			// covers more wins (ties keep the better-voted global
			// candidates: many clusters of dense, scattered pages fit
			// in several places).
			ds = own(it)
			score = slices.Grow(score, len(ds))[:len(ds)]
			eval(ds, len(cands))
			for k := len(cands); k < len(ds); k++ {
				if score[k] <= best {
					score[k] = 0
				}
			}
			best = slices.Max(score)
		}
		if best == 0 || it.remainder && 2*best < pairs {
			if it.remainder {
				for pg := c.lo; pg <= c.hi; pg++ {
					for _, t := range threads(it, pg) {
						set(pg, t, it.parentD)
					}
				}
			}
			continue
		}
		// among the best: those under which the rest of the piece's
		// threads' runs cover the most (the piece is part of a larger
		// mapping of its thread, and several displacements put it
		// somewhere inside the same reference mapping), then 0 (the
		// layout did not change), the nearest placed piece's
		// displacement (neighbouring memory moved together), the
		// closest access counts, the better-voted
		var tied []int
		bestExt := -1
		for k, dk := range ds {
			if score[k] != best {
				continue
			}
			switch x := ext(it, dk); {
			case x > bestExt:
				tied, bestExt = append(tied[:0], k), x
			case x == bestExt:
				tied = append(tied, k)
			}
		}
		pick := -1
		nd, hasNd := nearest(placed, c)
		bestDist := math.Inf(1)
		for _, k := range tied {
			dk := ds[k]
			if dk == 0 {
				pick = k
				break
			}
			if hasNd && dk == nd {
				pick, bestDist = k, math.Inf(-1)
				continue
			}
			dist := 0.0
			for pg := c.lo; pg <= c.hi; pg++ {
				to := uint64(int64(pg) + dk)
				for _, t := range threads(it, pg) {
					if r, ok := cnt.ref[pair{to, t}]; ok && t >= 0 && !claimed[pair{to, t}] {
						dist += math.Abs(math.Log1p(float64(cnt.got[pair{pg, t}])) - math.Log1p(float64(r)))
					}
				}
			}
			if dist < bestDist {
				pick, bestDist = k, dist
			}
		}
		dd := ds[pick]
		used[dd] = true
		// place the covered pairs (and those of threads without a
		// counterpart on the same pages); queue each thread's uncovered
		// runs
		rest := map[int][]cluster{}
		var restThr []int
		for pg := c.lo; pg <= c.hi; pg++ {
			for _, t := range threads(it, pg) {
				if t < 0 {
					set(pg, t, dd)
					continue
				}
				if covers(item{c: c, thr: t, one: true}, pg, dd, true) > 0 {
					set(pg, t, dd)
					continue
				}
				r := rest[t]
				if n := len(r); n > 0 && r[n-1].hi+1 == pg {
					r[n-1].hi = pg
				} else {
					if r == nil {
						restThr = append(restThr, t)
					}
					r = append(r, cluster{pg, pg, strconv.Itoa(t)})
				}
				rest[t] = r
			}
		}
		i := sort.Search(len(placed), func(i int) bool { return placed[i].lo > c.lo })
		placed = slices.Insert(placed, i, placement{c.lo, c.hi, dd})
		for _, t := range restThr {
			for _, r := range rest[t] {
				queue = append(queue, item{c: r, thr: t, one: true, remainder: true, parentD: dd})
			}
		}
		if len(restThr) > 0 {
			slices.SortStableFunc(queue, less)
		}
	}
	return out
}

// pair is a (page, thread) pair; threads are reference indices.
type pair struct {
	page uint64
	thr  int
}

// counts are the access counts of the pairs of both runs.
type counts struct{ ref, got map[pair]uint64 }

// minEvidence: clusters of fewer pages only take displacements that larger
// clusters took, or that superimpose at least this many pages of small
// clusters (several small mappings moved together), or that superimpose
// them on reference clusters of about their size (a small mapping moved),
// or 0: a page or two at the edge of a mapping the run does not have
// superimpose on it by chance.
const minEvidence = 4

// threadRuns returns the runs of contiguous pages of each (matched)
// thread, ascending.
func threadRuns(thr map[uint64][]int) map[int][]cluster {
	pages := map[int][]uint64{}
	for pg, ts := range thr {
		for _, t := range ts {
			if t >= 0 {
				pages[t] = append(pages[t], pg)
			}
		}
	}
	runs := map[int][]cluster{}
	for t, ps := range pages {
		slices.Sort(ps)
		var rs []cluster
		for _, pg := range ps {
			if n := len(rs); n > 0 && rs[n-1].hi+1 == pg {
				rs[n-1].hi = pg
				continue
			}
			rs = append(rs, cluster{lo: pg, hi: pg})
		}
		runs[t] = rs
	}
	return runs
}

// overlapping returns the runs (ascending, disjoint) that overlap c.
func overlapping(runs []cluster, c cluster) []cluster {
	i := sort.Search(len(runs), func(i int) bool { return runs[i].hi >= c.lo })
	j := i
	for j < len(runs) && runs[j].lo <= c.hi {
		j++
	}
	return runs[i:j]
}

type placement struct {
	lo, hi uint64
	d      int64
}

// nearest returns the displacement of the placed piece nearest to c.
func nearest(placed []placement, c cluster) (int64, bool) {
	i := sort.Search(len(placed), func(i int) bool { return placed[i].lo > c.lo })
	var best int64
	dist := ^uint64(0)
	if i > 0 {
		p := placed[i-1]
		if p.hi < c.lo {
			dist, best = c.lo-p.hi, p.d
		} else {
			return p.d, true // overlaps: a piece of the same cluster
		}
	}
	if i < len(placed) {
		p := placed[i]
		if p.lo > c.hi && p.lo-c.hi < dist {
			dist, best = p.lo-c.hi, p.d
		}
	}
	return best, dist != ^uint64(0)
}

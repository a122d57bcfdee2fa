package tune

import (
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
// threads (8 MiB stacks) concurrently with the program, and threads'
// malloc arenas come in the order the threads first allocate, so a
// mapping may sit at another address, even in another hole. Each mapping
// moves as a whole. Align recovers the displacements from the data:
//
//   - it cuts both runs' touched pages into clusters: runs of contiguous
//     pages touched by the same set of threads (so that neighbouring
//     mappings of different threads stay apart);
//   - candidate displacements superimpose clusters of about the same size
//     (votes weighted by size, more when the thread sets correspond under
//     the matching);
//   - the clusters of got, largest first, go where they cover the most
//     (matched thread, page) pairs of the reference that no cluster placed
//     before claimed; ties go to 0, then to the displacement of the
//     nearest piece already placed, then to the closest access counts; runs a placement
//     leaves uncovered (two mappings adjacent in one run only) are placed
//     on their own; clusters of fewer than minEvidence pages only take
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
	got.Unshifted = len(gotThr)
	if len(refThr) == 0 || len(gotThr) == 0 {
		return 0
	}
	rc := clusters(refThr)
	gc := clusters(gotThr)
	cands := candidates(rc, gc)
	if len(cands) == 1 {
		return 0
	}
	move := map[uint64]uint64{}
	for pg, d := range assignDisplacements(gc, cands, gotThr, refThr, cnt) {
		move[pg] = uint64(int64(pg) + d)
	}
	if len(move) == 0 {
		return 0
	}
	for _, t := range got.Threads {
		np := make(map[uint64]uint64, len(t.Pages))
		for pg, n := range t.Pages {
			if to, ok := move[pg]; ok {
				pg = to
			}
			np[pg] += n
		}
		t.Pages = np
	}
	got.Shifted = len(move)
	return len(move)
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

// assignDisplacements places got's clusters greedily, largest first (they
// are the most distinctive): each goes where its (thread, page) pairs
// cover the most reference pairs not claimed yet. Claiming
// keeps two clusters from landing on the same reference pairs: repeated
// structures, like one arena per thread, pair up one to one. Ties go to
// 0 (the layout did not change), then to the displacement of the nearest
// piece already placed, then to the displacement under which the
// cluster's access counts are closest to the reference's (sum of
// |log(1+a) - log(1+b)|), then to the better-voted candidate.
//
// A cluster may be several mappings that happen to be adjacent in one run
// and not in the other: the runs of its pages left uncovered by the chosen
// displacement are queued again as clusters of their own, and take a
// displacement of their own if it covers at least half of their pairs;
// otherwise they stay with the rest of their cluster. A cluster that
// covers nothing under any candidate stays where it is. The result maps
// every moved page to its displacement.
func assignDisplacements(cs []cluster, cands []int64, gotThr, refThr map[uint64][]int, cnt counts) map[uint64]int64 {
	claimed := map[pair]bool{}
	// covers counts (and with claim, claims) the reference pairs page pg
	// covers when moved by dd
	covers := func(pg uint64, dd int64, claim bool) int {
		to := uint64(int64(pg) + dd)
		rt := refThr[to]
		n := 0
		for _, t := range gotThr[pg] {
			if t >= 0 && slices.Contains(rt, t) && !claimed[pair{to, t}] {
				n++
				if claim {
					claimed[pair{to, t}] = true
				}
			}
		}
		return n
	}
	type item struct {
		c         cluster
		remainder bool
		parentD   int64
	}
	var queue []item
	for _, c := range cs {
		queue = append(queue, item{c: c})
	}
	less := func(a, b item) int {
		switch {
		case a.c.size() != b.c.size():
			if a.c.size() > b.c.size() {
				return -1
			}
			return 1
		case a.c.lo < b.c.lo:
			return -1
		case a.c.lo > b.c.lo:
			return 1
		}
		return 0
	}
	slices.SortStableFunc(queue, less)
	var placed []placement // sorted by lo
	used := map[int64]bool{}
	// the size of the reference cluster of each page
	refSize := map[uint64]uint64{}
	for _, c := range clusters(refThr) {
		for pg := c.lo; pg <= c.hi; pg++ {
			refSize[pg] = c.size()
		}
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
				all = covers(pg, dk, false) > 0
			}
			if all {
				support[dk] += int(c.size())
			}
		}
	}

	out := map[uint64]int64{}
	score := make([]int, len(cands))
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		c := it.c
		best, pairs := 0, 0
		for pg := c.lo; pg <= c.hi; pg++ {
			pairs += len(gotThr[pg])
		}
		small := c.size() < minEvidence
		for k, dk := range cands {
			score[k] = 0
			if small && dk != 0 && !used[dk] && support[dk] < minEvidence && !sameShape(c, dk) {
				continue // no evidence for a new displacement
			}
			n := 0
			for pg := c.lo; pg <= c.hi; pg++ {
				n += covers(pg, dk, false)
			}
			score[k] = n
			best = max(best, n)
		}
		if best == 0 || it.remainder && 2*best < pairs {
			if it.remainder && it.parentD != 0 {
				for pg := c.lo; pg <= c.hi; pg++ {
					out[pg] = it.parentD
				}
			}
			continue
		}
		// among the best: 0 (the layout did not change), the nearest
		// placed piece's displacement (neighbouring memory moved
		// together), the closest access counts, the better-voted
		pick := -1
		nd, hasNd := nearest(placed, c)
		bestDist := math.Inf(1)
		for k, dk := range cands {
			if score[k] != best {
				continue
			}
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
				for _, t := range gotThr[pg] {
					if r, ok := cnt.ref[pair{to, t}]; ok && t >= 0 && !claimed[pair{to, t}] {
						dist += math.Abs(math.Log1p(float64(cnt.got[pair{pg, t}])) - math.Log1p(float64(r)))
					}
				}
			}
			if dist < bestDist {
				pick, bestDist = k, dist
			}
		}
		dd := cands[pick]
		used[dd] = true
		// place the covered pages; queue the uncovered runs
		var rest []item
		for pg := c.lo; pg <= c.hi; pg++ {
			if covers(pg, dd, true) > 0 {
				if dd != 0 {
					out[pg] = dd
				}
				continue
			}
			if n := len(rest); n > 0 && rest[n-1].c.hi+1 == pg {
				rest[n-1].c.hi = pg
			} else {
				rest = append(rest, item{c: cluster{pg, pg, c.sig}, remainder: true, parentD: dd})
			}
		}
		i := sort.Search(len(placed), func(i int) bool { return placed[i].lo > c.lo })
		placed = slices.Insert(placed, i, placement{c.lo, c.hi, dd})
		if len(rest) > 0 {
			queue = append(queue, rest...)
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

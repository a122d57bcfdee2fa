package vptrace

import (
	"cmp"
	"slices"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/preset/kit"
)

// Slot bases shared along a block. With tls initial-exec or indirect, every
// site loads the slots' base first (initial-exec: its offset from the GOT;
// indirect: this thread's array, tested for 0): two loads, and for indirect
// a test and a branch, which in a leaf accessor (`return v->data[i]`) are
// most of what a site costs. The next site of the same block can use the
// register the previous one loaded, when it still holds it: the register
// was dead at the first site (kit.Scratch chose it so), no instruction in
// between references it (no call, syscall or unmodelled instruction
// either), nothing else is inserted in between, and the first site's cache
// probe left it alone. The later site then reads its slot through the
// register, as the sites of a spilled loop do (spill.go, loopRegs), and
// passes the register on.
//
// What runs between two sites of a block is known before any code is
// inserted only when every site of the block is an ordinary one (no sweep,
// vector, rep or exact site, whose code may take any dead register or
// sits on the block's edges); a site's base goes to the site whose code
// runs next (by placement, which need not be the sites' order), at a later
// instruction; edge code (spilled loops, sweeps) goes at a block's last
// instruction, so a site there starts no chain. baseChains works that out
// per function before any site is instrumented; instrument then checks the
// register itself.

// baseLink is where a site stands in its block's chain.
type baseLink struct {
	prev *site // the block's previous site, whose base the site may use
	at   int   // where the site's code goes (placement)
	keep bool  // a later site may use this one's base: its probe must not take it
}

// baseChains links the ordinary sites of each block of g. ordinary(k)
// tells whether sites[k] gets the default slot code; sites of exact mode
// do not count as such here (their code may take any dead register).
func (st *objState) baseChains(g *cfg.Graph, sites []*site, ordinary func(k int) bool) map[*site]baseLink {
	if st.tls == kit.LocalExec {
		return nil
	}
	type entry struct {
		s  *site
		at int
	}
	blocks := make(map[*cfg.Block][]entry)
	bad := make(map[*cfg.Block]bool)
	for k, s := range sites {
		b := g.BlockOf(s.inst)
		if b == nil {
			continue
		}
		at, ok := st.placement(s, g)
		if !ordinary(k) || s.exact || !ok || g.BlockOf(at) != b {
			bad[b] = true
			continue
		}
		blocks[b] = append(blocks[b], entry{s, at})
	}
	links := make(map[*site]baseLink)
	for b, es := range blocks {
		if bad[b] {
			continue
		}
		// In the order their code runs: by placement, and at one
		// instruction in the order it is inserted (the sites' order).
		// The sites' order alone is not it: a site may be placed before
		// an earlier site's instruction, and its code would run between
		// that site's and the next one's.
		slices.SortStableFunc(es, func(x, y entry) int { return cmp.Compare(x.at, y.at) })
		last := b.End - 1
		for i, e := range es {
			l := baseLink{at: e.at}
			if i > 0 && es[i-1].at < e.at && e.at < last {
				l.prev = es[i-1].s
				p := links[l.prev]
				p.keep = true
				links[l.prev] = p
			}
			links[e.s] = l
		}
	}
	return links
}

// chainedBase returns the register holding the slot base that site s may
// use at instruction at (its previous site's, still intact), if any.
// live are the registers live there.
func (st *objState) chainedBase(g *cfg.Graph, s *site, at int, live effect.RegSet) (effect.Reg, bool) {
	l, ok := st.chain[s]
	if !ok || l.prev == nil {
		return 0, false
	}
	r, ok := st.bases[l.prev]
	if !ok || live.Has(r) {
		return 0, false
	}
	lv := st.live[g]
	for j := st.chain[l.prev].at; j < at; j++ {
		e := lv.Effect(j)
		if !e.Known || e.Ctrl != effect.None || (e.Use|e.Def|e.Partial)&r.Set() != 0 {
			return 0, false
		}
	}
	return r, true
}

package vptrace

import (
	"bytes"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/preset/kit"
)

// Regions: registers saved once along straight-line code. Outside loops a
// register-starved function pushes and pops what its sites borrow at
// every access: bzip2's mainGtU compares up to 12 pairs of bytes before
// its loop, in 12 blocks that each leave the function early, and every
// byte's check pushed and popped a register and loaded the slot base.
// A region is saved around as a loop is (spill.go): the registers are
// pushed on its entry edges and popped on its exit edges, and its sites
// find the slot base in one of them.
//
// A region is acyclic: a header outside loops with a site that borrows a
// register, entered only on edges from outside (or, for the function's
// first block, by the call), and the blocks outside loops whose every
// predecessor control reaches is in the region, grown from it; then
// trimmed to those from which a site that borrows a register can be
// reached (a register popped as soon as no site wants it), and of those
// whose exit edges take no code (kit.EdgeToOrTaken: fall-through, jump or
// a conditional jump's taken path, an edge no other spill uses) and the
// blocks depending on them. Each block as a spilled loop's (spillBlock):
// no rsp reference, call, function exit or unmodelled instruction, no
// other way in. Worth it where at least two sites of the region would
// borrow: a path through it then saves at least as often as its sites
// would, and its sites share one slot base.

// spillRegions finds the regions of g outside loops and outside spilled
// ones, inserts their entry and exit code, and records in free what their
// blocks have (nd: what the sites want; used: edges no spill code may
// share; reach: blocks control reaches).
func (st *objState) spillRegions(g *cfg.Graph, nd spillNeeds, used map[kit.Edge]bool, free map[int]loopRegs, reach []bool) error {
	lv := st.live[g]
	n := len(g.Blocks)
	ok := make([]bool, n)
	refs := make([]effect.RegSet, n)
	worth := false
	for x, b := range g.Blocks {
		if _, spilled := free[x]; spilled || !reach[x] || st.analysis.Info(b).LoopDepth > 0 {
			continue
		}
		refs[x], ok[x] = spillBlock(lv, g.Sec, b, nil)
		worth = worth || ok[x] && nd.short[x] > 0
	}
	if !worth {
		return nil
	}
	taken := make([]bool, n) // in a region, or a header tried
	member := make([]bool, n)
	for h, hb := range g.Blocks {
		if !ok[h] || taken[h] || nd.short[h] == 0 {
			continue
		}
		taken[h] = true
		entries, good := st.regionEntries(g, hb, used, reach)
		if !good {
			continue
		}
		nodes := growRegion(g, h, ok, taken, member, reach)
		nodes, exits := trimRegion(g, nodes, member, nd, used)
		if len(nodes) == 0 {
			continue
		}
		var all effect.RegSet
		short := 0
		for _, x := range nodes {
			all |= refs[x]
			short += nd.short[x]
		}
		regs := saveable(lv.Before(hb.Start).Regs, all)
		for _, x := range nodes {
			member[x] = false
		}
		if short < 2 || len(regs) == 0 || len(exits) == 0 {
			continue
		}
		for _, x := range nodes {
			taken[x] = true
		}
		need, needC, slot, probes := nd.of(nodes)
		hasBase := st.tls != kit.LocalExec && slot
		if _, err := st.spillAround(g, nodes, regs, entries, exits, nil, need, needC, hasBase, probes, used, free); err != nil {
			return err
		}
	}
	return nil
}

// endbr64 starts the functions an indirect branch may enter under CET.
var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// regionEntries returns the edges into header hb from the blocks control
// reaches, or for the function's first block, entered by its callers and
// by nothing in it, its start (after an endbr64, which must stay first).
func (st *objState) regionEntries(g *cfg.Graph, hb *cfg.Block, used map[kit.Edge]bool, reach []bool) ([]kit.Edge, bool) {
	var entries []kit.Edge
	for _, p := range hb.Preds {
		if !reach[p.Index] {
			continue
		}
		e, ok := kit.EdgeToOrTaken(g, p, hb.Index)
		if !ok || used[e] {
			return nil, false
		}
		entries = append(entries, e)
	}
	if !hb.External {
		return entries, len(entries) > 0
	}
	if hb.Index != 0 || len(entries) > 0 {
		return nil, false // (a label other code jumps to; or a jump back to the start)
	}
	e := kit.Edge{Inst: hb.Start}
	if bytes.Equal(g.Sec.Bytes(hb.Start), endbr64) {
		if hb.Start+1 >= hb.End {
			return nil, false
		}
		e = kit.Edge{Inst: hb.Start, After: true}
	}
	if used[e] || (!e.After && !g.Sec.CanInsertBefore(e.Inst)) || (e.After && !g.Sec.CanInsertAfter(e.Inst)) {
		return nil, false
	}
	return []kit.Edge{e}, true
}

// growRegion returns the region grown from header h: h, and every block ok
// and not taken whose predecessors that control reaches are all in it
// (member, set for the blocks returned).
func growRegion(g *cfg.Graph, h int, ok, taken, member, reach []bool) []int {
	nodes := []int{h}
	member[h] = true
	for k := 0; k < len(nodes); k++ {
		for _, s := range g.Blocks[nodes[k]].Succs {
			x := s.Index
			if member[x] || !ok[x] || taken[x] || s.External {
				continue
			}
			in := true
			for _, p := range s.Preds {
				if reach[p.Index] && !member[p.Index] {
					in = false
					break
				}
			}
			if in {
				member[x] = true
				nodes = append(nodes, x)
			}
		}
	}
	return nodes
}

// trimRegion keeps of the region nodes (the header first; member set for
// them) the blocks from which a block with a site that borrows can be
// reached in it, and then drops blocks with an exit edge that takes no
// code, with the blocks that depend on them (a predecessor dropped). It
// returns the blocks kept (member still set for them, cleared for the
// others), none if the header goes, and the edges out of them.
func trimRegion(g *cfg.Graph, nodes []int, member []bool, nd spillNeeds, used map[kit.Edge]bool) ([]int, []kit.Edge) {
	// useful: reaches a block with a short site, backwards from them
	useful := make(map[int]bool, len(nodes))
	var work []int
	for _, x := range nodes {
		if nd.short[x] > 0 {
			useful[x] = true
			work = append(work, x)
		}
	}
	for len(work) > 0 {
		x := work[len(work)-1]
		work = work[:len(work)-1]
		for _, p := range g.Blocks[x].Preds {
			if member[p.Index] && !useful[p.Index] {
				useful[p.Index] = true
				work = append(work, p.Index)
			}
		}
	}
	for _, x := range nodes {
		member[x] = useful[x]
	}
	// Drop blocks with an exit that takes no code, and what depends on
	// them, until none is left; the exits of the pass that dropped none
	// are the region's.
	var exits []kit.Edge
	for changed := true; changed; {
		changed = false
		exits = exits[:0]
		for _, x := range nodes {
			if !member[x] {
				continue
			}
			b := g.Blocks[x]
			drop := false
			if x != nodes[0] {
				for _, p := range b.Preds {
					if !member[p.Index] && useful[p.Index] {
						drop = true // (a predecessor was dropped)
					}
				}
			}
			for _, s := range b.Succs {
				if member[s.Index] {
					continue
				}
				e, ok := kit.EdgeToOrTaken(g, b, s.Index)
				if !ok || used[e] {
					drop = true
				}
				exits = append(exits, e)
			}
			if drop {
				member[x] = false
				changed = true
			}
		}
	}
	if !member[nodes[0]] {
		for _, x := range nodes {
			member[x] = false
		}
		return nil, nil
	}
	kept := nodes[:0]
	for _, x := range nodes {
		if member[x] {
			kept = append(kept, x)
		}
	}
	return kept, exits
}

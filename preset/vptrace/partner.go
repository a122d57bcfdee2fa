package vptrace

import (
	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/loops"
	"hijack/preset/kit"
)

// Partners: redundancy elimination across blocks (Ding and Zhong,
// selective monitoring). An access dominated by an access through the same
// base register, unchanged in between, is usually on the page that one was on: in `b = &t[h]; if
// (b->key == k) v = b->val;` the second access repeats the first's page.
// Such a site compares its page with the dominating site's last-page slot
// first, and when they agree it needs neither its own slot nor the cache:
// the partner's slot holds a page the partner recorded for at least every
// kind of this access (or found recorded), exactly what the site's own
// slot would say. The choice only decides how often the compare hits, never
// what is recorded; the base register is required unchanged between the
// two (no instruction on a path from the partner to the site writes it)
// only so that the compare is worth its two instructions: a pointer chase
// through one register would miss every time.

// partners finds, for the sites of one function in instrumentation
// order, the partner of each: the nearest earlier slot site whose block
// dominates the site's (or the same block), through the same base
// register left unchanged in between, with every kind of access the site
// has and a slot that holds what the site's does (a page's number or its
// base: site.byAddr).
type partners struct {
	g    *cfg.Graph
	lv   *cfg.Liveness
	idom []int
	// byBase holds the sites added, in order, by base register (those
	// sameBase can match only): find looks at one register's sites, not
	// every site of the function before it.
	byBase map[x86asm.Reg][]partnerSite
	// unchanged's scratch, kept across its calls: seen[b] == gen marks
	// block b visited by the current call.
	seen []uint32
	gen  uint32
	work []*cfg.Block
}

type partnerSite struct {
	s *site
	k int
}

func newPartners(g *cfg.Graph, lv *cfg.Liveness) *partners {
	return &partners{g: g, lv: lv, byBase: make(map[x86asm.Reg][]partnerSite)}
}

// sameBase reports whether two accesses go through the same base register
// (not RIP; no segment). Their indices may differ: `x->n` and then
// `x->keys[j]` are on one page mostly.
func sameBase(a, b x86asm.Mem) bool {
	return a.Base != 0 && a.Base != x86asm.RIP && a.Segment == 0 && b.Segment == 0 && a.Base == b.Base
}

// find returns s's partner as 1 + its site index, or 0. A candidate
// whose index comes from the same unchanged register as the site's (see
// indexRoot) is preferred to the nearest one through the same base: in an
// unrolled `a[i] ... a[i+1] ...` (`lea 1(%rdi),%edx; movzbl (%rax,%rdx)`)
// every access is on the first one's page, while the nearest same-base
// access may be another array's (`a[j]`). Among those, one that is not
// itself chained to such a partner comes first: a site that matched its
// partner leaves its own slot as it was, so its slot may hold an older
// page. Two accesses through the same base with indices from different
// values (`a[i1]` and `a[i2]`, two positions a sort compares) are no
// partners: they are on two pages mostly, and the compare with the other's
// slot would miss before the site's own (bzip2's mainGtU: 0.91x the CPU
// of bzip2 -9). find sets s.chained where it chose a partner by index.
func (p *partners) find(s *site) int {
	b := p.g.BlockOf(s.inst)
	if b == nil || !sameBase(s.acc.Mem, s.acc.Mem) {
		return 0
	}
	near, byIndex := 0, 0
	cands := p.byBase[s.acc.Mem.Base]
	for i := len(cands) - 1; i >= 0; i-- {
		c := cands[i]
		if c.s.kind&kindBits(s.kind) != kindBits(s.kind) || c.s.byAddr != s.byAddr {
			continue
		}
		cb := p.g.BlockOf(c.s.inst)
		if cb == nil {
			continue
		}
		if (cb == b && c.s.inst < s.inst || cb != b && p.dominates(cb.Index, b.Index)) &&
			p.unchanged(c.s.inst, cb, s.inst, b, kit.AddrRegs(x86asm.Mem{Base: s.acc.Mem.Base})) {
			same := p.sameIndex(c.s, cb, s, b)
			switch {
			case same && !c.s.chained:
				s.chained = true
				return c.k + 1
			case same && byIndex == 0:
				byIndex = c.k + 1
			case near == 0 && (c.s.acc.Mem.Index == 0 || s.acc.Mem.Index == 0):
				near = c.k + 1
			}
		}
	}
	if byIndex != 0 {
		s.chained = true
		return byIndex
	}
	return near
}

// sameIndex reports whether the indices of two accesses (c's in block cb,
// dominating s's in block b) are computed from one register holding the
// same value at both computations, with the same scale; or neither access
// has an index.
func (p *partners) sameIndex(c *site, cb *cfg.Block, s *site, b *cfg.Block) bool {
	ci, si := c.acc.Mem.Index, s.acc.Mem.Index
	if ci == 0 || si == 0 {
		return ci == si
	}
	if c.acc.Mem.Scale != s.acc.Mem.Scale {
		return false
	}
	cr, cat, ok1 := p.indexRoot(c.inst, cb, ci)
	sr, sat, ok2 := p.indexRoot(s.inst, b, si)
	if !ok1 || !ok2 || cr != sr || cat >= sat && cb == b {
		return false
	}
	return p.unchanged(cat, cb, sat, b, cr.Set())
}

// indexRoot follows index register r of the access at instruction i back
// to the register its value was computed from within i's block, by one
// copy or constant add (`mov %edi,%edx`, `movslq %edi,%rdx`,
// `lea 1(%rdi),%edx`): that register and the instruction that read it
// (i itself when r is not written in the block before i). ok is false when
// r was computed some other way.
func (p *partners) indexRoot(i int, b *cfg.Block, r x86asm.Reg) (root effect.Reg, at int, ok bool) {
	reg, _, ok := effect.GPR(r)
	if !ok {
		return 0, 0, false
	}
	for j := i - 1; j >= b.Start; j-- {
		e := p.lv.Effect(j)
		if !e.Known {
			return 0, 0, false
		}
		if (e.Def|e.Partial)&reg.Set() == 0 {
			continue
		}
		a := p.g.Sec.Asm(j)
		if a == nil {
			return 0, 0, false
		}
		var src x86asm.Reg
		switch a.Op {
		case x86asm.MOV, x86asm.MOVSXD:
			src, _ = a.Args[1].(x86asm.Reg)
		case x86asm.LEA:
			if m, isMem := a.Args[1].(x86asm.Mem); isMem && m.Segment == 0 && m.Base != x86asm.RIP {
				switch {
				case m.Index == 0:
					src = m.Base
				case m.Base == 0 && m.Scale == 1:
					src = m.Index
				}
			}
		}
		root, w, ok := effect.GPR(src)
		if !ok || w < 4 {
			return 0, 0, false
		}
		return root, j, true
	}
	return reg, i, true
}

// add notes a site instrumented with a last-page slot, index k.
func (p *partners) add(s *site, k int) {
	if m := s.acc.Mem; sameBase(m, m) {
		p.byBase[m.Base] = append(p.byBase[m.Base], partnerSite{s, k})
	}
}

func (p *partners) dominates(a, b int) bool {
	if p.idom == nil {
		p.idom = loops.Dominators(loops.Succs(p.g))
	}
	return loops.Dominates(p.idom, a, b)
}

// unchanged reports whether no instruction on a path from instruction pi
// (of block pb, which dominates sb or is sb with pi before si) to
// instruction si (of block sb) writes a register of regs, or does what
// liveness cannot model.
func (p *partners) unchanged(pi int, pb *cfg.Block, si int, sb *cfg.Block, regs effect.RegSet) bool {
	writes := func(from, to int) bool { // in [from, to)
		for j := from; j < to; j++ {
			if e := p.lv.Effect(j); !e.Known || (e.Def|e.Partial)&regs != 0 {
				return true
			}
		}
		return false
	}
	if pb == sb {
		return !writes(pi+1, si)
	}
	if writes(sb.Start, si) || writes(pi+1, pb.End) {
		return false
	}
	// Backwards from the site to the partner's block (every path gets
	// there: it dominates), every block in between whole; the site's own
	// block too if a path comes around to it again.
	if len(p.seen) < len(p.g.Blocks) {
		p.seen, p.gen = make([]uint32, len(p.g.Blocks)), 0
	}
	p.gen++
	if p.gen == 0 { // wrapped: stale marks could equal it
		clear(p.seen)
		p.gen = 1
	}
	seen, gen := p.seen, p.gen
	seen[pb.Index] = gen
	work := append(p.work[:0], sb.Preds...)
	defer func() { p.work = work[:0] }()
	for len(work) > 0 {
		b := work[len(work)-1]
		work = work[:len(work)-1]
		if seen[b.Index] == gen {
			continue
		}
		seen[b.Index] = gen
		if writes(b.Start, b.End) {
			return false
		}
		work = append(work, b.Preds...)
	}
	return true
}

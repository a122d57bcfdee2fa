package loops

import (
	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg"
	"hijack/ibr"
)

// Info is what the analysis knows of one block.
type Info struct {
	// LoopDepth is the number of loops of its own function containing
	// the block.
	LoopDepth int
	// Loop is the innermost of those loops, nil outside loops: the
	// presets ask it per access, and a search of the forest per access
	// grows with the square of a function's size.
	Loop *Loop
	// Cycles is LoopDepth plus the deepest loop context the function is
	// called from (its inherited participation).
	Cycles int
	Insns  int // instructions
	MemOps int // instructions that access memory explicitly
	// MemFeature is the thesis's memory-operation feature:
	// (mem/insns) * (mem / most memory operations of a block of the
	// function).
	MemFeature float64
	// Weight is Cycles + MemFeature; Score is Weight divided by the
	// heaviest weight of the object, in [0, 1].
	Weight, Score float64
}

// Analysis holds loops and scores of every function of a program.
type Analysis struct {
	Prog  *cfg.Program
	Loops map[*cfg.Graph][]*Loop
	// Inherited is, per function, the deepest loop context it is called
	// from in this object.
	Inherited map[*cfg.Graph]int
	info      map[*cfg.Block]*Info
}

// Info returns the analysis of block b.
func (a *Analysis) Info(b *cfg.Block) *Info { return a.info[b] }

// Analyze finds the loops of every function, propagates loop participation
// along the call graph and scores every block.
func Analyze(p *cfg.Program) *Analysis {
	a := &Analysis{Prog: p, Loops: make(map[*cfg.Graph][]*Loop), Inherited: make(map[*cfg.Graph]int), info: make(map[*cfg.Block]*Info)}
	for _, g := range p.Graphs {
		succs := Succs(g)
		ls, depth := Forest(succs)
		a.Loops[g] = ls
		inner := Innermost(ls, len(g.Blocks))
		for _, b := range g.Blocks {
			in := &Info{LoopDepth: depth[b.Index], Loop: inner[b.Index]}
			for i := b.Start; i < b.End; i++ {
				if g.Sec.Insts[i].Kind != ibr.Code {
					continue
				}
				in.Insns++
				if accessesMemory(g.Sec, i) {
					in.MemOps++
				}
			}
			a.info[b] = in
		}
	}
	a.propagate()
	maxW := 0.0
	for _, g := range p.Graphs {
		maxMem := 0
		for _, b := range g.Blocks {
			maxMem = max(maxMem, a.info[b].MemOps)
		}
		for _, b := range g.Blocks {
			in := a.info[b]
			in.Cycles = in.LoopDepth + a.Inherited[g]
			if in.Insns > 0 && maxMem > 0 {
				in.MemFeature = float64(in.MemOps) / float64(in.Insns) * float64(in.MemOps) / float64(maxMem)
			}
			in.Weight = float64(in.Cycles) + in.MemFeature
			maxW = max(maxW, in.Weight)
		}
	}
	for _, in := range a.info {
		if maxW > 0 {
			in.Score = in.Weight / maxW
		}
	}
	return a
}

// Succs returns the successor lists of a graph by block index.
func Succs(g *cfg.Graph) [][]int {
	succs := make([][]int, len(g.Blocks))
	for i, b := range g.Blocks {
		for _, s := range b.Succs {
			succs[i] = append(succs[i], s.Index)
		}
	}
	return succs
}

// propagate computes, for every function, the deepest loop context it is
// called from: the maximum over its call sites of the site block's loop
// depth plus the caller's own inherited context. Recursion terminates:
// the call graph is condensed into strongly connected components, and
// within a component each call site counts once, with the context the
// component inherits from outside.
func (a *Analysis) propagate() {
	p := a.Prog
	idx := make(map[*cfg.Graph]int, len(p.Graphs))
	for i, g := range p.Graphs {
		idx[g] = i
	}
	callees := make([][]int, len(p.Graphs))
	for callee, sites := range p.Callers {
		for _, s := range sites {
			callees[idx[s.Graph]] = append(callees[idx[s.Graph]], idx[callee])
		}
	}
	nodes := make([]int, len(p.Graphs))
	for i := range nodes {
		nodes[i] = i
	}
	comps := newTarjan(callees).sccs(nodes)
	// Tarjan emits components callees-first; callers must go first.
	comp := make([]int, len(p.Graphs))
	for ci, c := range comps {
		for _, v := range c {
			comp[v] = ci
		}
	}
	for ci := len(comps) - 1; ci >= 0; ci-- {
		c := comps[ci]
		outside := 0
		for _, v := range c {
			g := p.Graphs[v]
			for _, s := range p.Callers[g] {
				if comp[idx[s.Graph]] != ci {
					outside = max(outside, a.info[s.Block].LoopDepth+a.Inherited[s.Graph])
				}
			}
		}
		for _, v := range c {
			g := p.Graphs[v]
			in := outside
			for _, s := range p.Callers[g] {
				if comp[idx[s.Graph]] == ci {
					in = max(in, a.info[s.Block].LoopDepth+outside)
				}
			}
			a.Inherited[g] = in
		}
	}
}

// accessesMemory reports whether instruction i has an explicit memory
// operand that is accessed (lea and no-ops only compute addresses).
func accessesMemory(s *ibr.Section, i int) bool {
	in := s.Asm(i)
	switch in.Op {
	case 0, x86asm.LEA, x86asm.NOP, x86asm.PREFETCHNTA, x86asm.PREFETCHT0, x86asm.PREFETCHT1, x86asm.PREFETCHT2, x86asm.PREFETCHW:
		return false
	}
	for _, arg := range in.Args {
		if arg == nil {
			break
		}
		if _, ok := arg.(x86asm.Mem); ok {
			return true
		}
	}
	return false
}

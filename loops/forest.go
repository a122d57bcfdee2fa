// Package loops finds the loops of control-flow graphs, nested, including
// irreducible ones, and computes the block scores hijack's presets use to
// choose where to instrument: loop participation (the loop depth of a block
// plus the deepest loop context its function is called from, propagated
// along the call graph) and the memory-operation feature of the vptracer
// thesis, summed and normalised so that the heaviest block scores 1.
package loops

import "slices"

// Loop is one loop of a graph: a strongly connected region entered at one
// header (a natural loop) or at several (irreducible).
type Loop struct {
	// Headers are the nodes through which the loop is entered from
	// outside; exactly one for a reducible (natural) loop.
	Headers []int
	// Nodes are all nodes of the loop, nested loops included, sorted.
	Nodes    []int
	Parent   *Loop
	Children []*Loop
	Depth    int // 1 for an outermost loop
}

// Irreducible reports whether the loop is entered at more than one node.
func (l *Loop) Irreducible() bool { return len(l.Headers) > 1 }

// Innermost returns, for each of n nodes, the deepest of loops containing
// it (nil for a node in none).
func Innermost(loops []*Loop, n int) []*Loop {
	inner := make([]*Loop, n)
	for _, l := range loops {
		for _, v := range l.Nodes {
			if v < n && (inner[v] == nil || l.Depth > inner[v].Depth) {
				inner[v] = l
			}
		}
	}
	return inner
}

// Within reports whether l is nested, at any depth, in outer (strictly).
func (l *Loop) Within(outer *Loop) bool {
	for x := l; x != nil; x = x.Parent {
		if x.Parent == outer {
			return outer != nil
		}
	}
	return false
}

// Forest computes the loop nesting forest of a graph (successor lists,
// entry 0) by recursive decomposition into strongly connected components:
// each non-trivial component is a loop; its headers are the nodes entered
// from outside it (or the entry itself), counting only edges from code the
// entry reaches; removing the edges back to the
// headers exposes the nested loops. On reducible graphs this is the natural
// loop forest (loops sharing a header merged); irreducible cycles are
// loops too. depth[v] is the number of loops containing v.
func Forest(succs [][]int) (loops []*Loop, depth []int) {
	n := len(succs)
	depth = make([]int, n)
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	preds := make([][]int, n)
	for u, ss := range succs {
		for _, w := range ss {
			preds[w] = append(preds[w], u)
		}
	}
	// Code nothing reaches (alignment no-ops after a jump, falling into a
	// loop) does not make an entry.
	reach := make([]bool, n)
	if n > 0 {
		reach[0] = true
		stack := []int{0}
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, w := range succs[v] {
				if !reach[w] {
					reach[w] = true
					stack = append(stack, w)
				}
			}
		}
	}
	t := newTarjan(succs)
	first, cut := t.first, t.cut // removed back edges, by edge number
	// member[v] == l marks v as a node of loop l while its headers and
	// cut edges are found.
	member := make([]*Loop, n)
	var visit func(nodes []int, parent *Loop, d int)
	visit = func(nodes []int, parent *Loop, d int) {
		for _, c := range t.sccs(nodes) {
			if len(c) == 1 {
				v := c[0]
				self := false
				for i, w := range succs[v] {
					if w == v && !cut[first[v]+i] {
						self = true
					}
				}
				if !self {
					continue
				}
			}
			slices.Sort(c)
			l := &Loop{Nodes: c, Parent: parent, Depth: d + 1}
			for _, v := range c {
				member[v] = l
			}
			for _, v := range c {
				if v == 0 {
					l.Headers = append(l.Headers, v)
					continue
				}
				for _, u := range preds[v] {
					if member[u] != l && (reach[u] || !reach[v]) {
						l.Headers = append(l.Headers, v)
						break
					}
				}
			}
			if len(l.Headers) == 0 {
				// A cycle not reachable from outside it: any node will do.
				l.Headers = []int{c[0]}
			}
			for _, v := range c {
				depth[v] = d + 1
				for i, w := range succs[v] {
					if member[w] == l && slices.Contains(l.Headers, w) {
						cut[first[v]+i] = true
					}
				}
			}
			if parent != nil {
				parent.Children = append(parent.Children, l)
			}
			loops = append(loops, l)
			visit(c, l, d+1)
		}
	}
	visit(all, nil, 0)
	return loops, depth
}

// tarjan holds the state of sccs, by node, kept across its calls: a
// function's loops are found by one call per loop, each over a subset of
// the nodes, and maps per call were most of the analysis's time on large
// functions.
type tarjan struct {
	succs [][]int
	// Edges are numbered by their place in succs: edge first[v]+i is
	// succs[v][i]. cut marks the edges sccs ignores (none at first).
	first []int
	cut   []bool
	// gen[v] == cur marks v as in the current call's node set; index,
	// low and onStack are valid for such nodes once visited (index[v]
	// >= 0).
	gen        []uint32
	cur        uint32
	index, low []int
	onStack    []bool
	stack      []int
}

// newTarjan prepares sccs over succs.
func newTarjan(succs [][]int) *tarjan {
	n := len(succs)
	first := make([]int, n+1)
	for v, ss := range succs {
		first[v+1] = first[v] + len(ss)
	}
	return &tarjan{succs: succs, first: first, cut: make([]bool, first[n]), gen: make([]uint32, n), index: make([]int, n), low: make([]int, n), onStack: make([]bool, n)}
}

// sccs returns the strongly connected components of the subgraph induced
// by nodes, ignoring cut edges (Tarjan, iterative).
func (t *tarjan) sccs(nodes []int) [][]int {
	t.cur++
	for _, v := range nodes {
		t.gen[v] = t.cur
		t.index[v] = -1
		t.onStack[v] = false
	}
	succs, index, low, onStack := t.succs, t.index, t.low, t.onStack
	stack := t.stack[:0]
	var out [][]int
	next := 0
	type frame struct{ v, i int }
	var call []frame
	for _, root := range nodes {
		if index[root] >= 0 {
			continue
		}
		call = append(call[:0], frame{root, 0})
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			top := &call[len(call)-1]
			v := top.v
			if top.i < len(succs[v]) {
				w := succs[v][top.i]
				e := t.first[v] + top.i
				top.i++
				if t.gen[w] != t.cur || t.cut[e] {
					continue
				}
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, 0})
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				u := call[len(call)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] == index[v] {
				var c []int
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					c = append(c, w)
					if w == v {
						break
					}
				}
				out = append(out, c)
			}
		}
	}
	t.stack = stack
	return out
}

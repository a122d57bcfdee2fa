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
	inSet := make([]bool, n)
	cut := make(map[[2]int]bool) // removed back edges
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
	var visit func(nodes []int, parent *Loop, d int)
	visit = func(nodes []int, parent *Loop, d int) {
		for _, v := range nodes {
			inSet[v] = true
		}
		comps := sccs(succs, nodes, inSet, cut)
		for _, v := range nodes {
			inSet[v] = false
		}
		for _, c := range comps {
			if len(c) == 1 {
				v := c[0]
				self := false
				for _, w := range succs[v] {
					if w == v && !cut[[2]int{v, v}] {
						self = true
					}
				}
				if !self {
					continue
				}
			}
			slices.Sort(c)
			l := &Loop{Nodes: c, Parent: parent, Depth: d + 1}
			member := make(map[int]bool, len(c))
			for _, v := range c {
				member[v] = true
			}
			for _, v := range c {
				if v == 0 {
					l.Headers = append(l.Headers, v)
					continue
				}
				for _, u := range preds[v] {
					if !member[u] && (reach[u] || !reach[v]) {
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
				for _, w := range succs[v] {
					if member[w] && slices.Contains(l.Headers, w) {
						cut[[2]int{v, w}] = true
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

// sccs returns the strongly connected components of the subgraph induced
// by nodes (marked in inSet), ignoring cut edges (Tarjan, iterative).
func sccs(succs [][]int, nodes []int, inSet []bool, cut map[[2]int]bool) [][]int {
	index := make(map[int]int, len(nodes))
	low := make(map[int]int, len(nodes))
	onStack := make(map[int]bool, len(nodes))
	var stack []int
	var out [][]int
	next := 0
	type frame struct{ v, i int }
	for _, root := range nodes {
		if _, ok := index[root]; ok {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			top := &call[len(call)-1]
			v := top.v
			if top.i < len(succs[v]) {
				w := succs[v][top.i]
				top.i++
				if !inSet[w] || cut[[2]int{v, w}] {
					continue
				}
				if _, ok := index[w]; !ok {
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
	return out
}

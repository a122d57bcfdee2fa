package loops

// Dominators computes the immediate dominator of every node of a graph
// given as successor lists, with entry node 0, by the iterative algorithm of
// Cooper, Harvey and Kennedy ("A Simple, Fast Dominance Algorithm"). The
// result idom[v] is -1 for nodes unreachable from the entry; idom[0] = 0.
func Dominators(succs [][]int) []int {
	n := len(succs)
	idom := make([]int, n)
	for i := range idom {
		idom[i] = -1
	}
	if n == 0 {
		return idom
	}
	// Reverse postorder from the entry.
	order := make([]int, 0, n) // postorder
	post := make([]int, n)     // node -> postorder number
	seen := make([]bool, n)
	type frame struct{ v, i int }
	stack := []frame{{0, 0}}
	seen[0] = true
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.i < len(succs[top.v]) {
			w := succs[top.v][top.i]
			top.i++
			if !seen[w] {
				seen[w] = true
				stack = append(stack, frame{w, 0})
			}
			continue
		}
		post[top.v] = len(order)
		order = append(order, top.v)
		stack = stack[:len(stack)-1]
	}
	preds := make([][]int, n)
	for v, ss := range succs {
		if !seen[v] {
			continue
		}
		for _, w := range ss {
			preds[w] = append(preds[w], v)
		}
	}
	intersect := func(a, b int) int {
		for a != b {
			for post[a] < post[b] {
				a = idom[a]
			}
			for post[b] < post[a] {
				b = idom[b]
			}
		}
		return a
	}
	idom[0] = 0
	for changed := true; changed; {
		changed = false
		for k := len(order) - 1; k >= 0; k-- {
			v := order[k]
			if v == 0 {
				continue
			}
			nd := -1
			for _, p := range preds[v] {
				if idom[p] < 0 {
					continue
				}
				if nd < 0 {
					nd = p
				} else {
					nd = intersect(p, nd)
				}
			}
			if nd != idom[v] {
				idom[v] = nd
				changed = true
			}
		}
	}
	return idom
}

// Dominates reports whether a dominates b under idom.
func Dominates(idom []int, a, b int) bool {
	if idom[b] < 0 || idom[a] < 0 {
		return false
	}
	for {
		if a == b {
			return true
		}
		if b == 0 {
			return false
		}
		b = idom[b]
	}
}

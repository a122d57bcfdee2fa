package loops_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"hijack/cfg"
	"hijack/internal/testutil"
	"hijack/loops"
)

// bruteDominates decides dominance by definition: a dominates b if b is
// unreachable from the entry once a is removed (a == b dominates itself).
func bruteDominates(succs [][]int, a, b int) bool {
	if a == b {
		return true
	}
	seen := make([]bool, len(succs))
	var stack []int
	if a != 0 {
		stack = []int{0}
		seen[0] = true
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range succs[v] {
			if w != a && !seen[w] {
				seen[w] = true
				stack = append(stack, w)
			}
		}
	}
	return !seen[b]
}

func reachable(succs [][]int) []bool {
	seen := make([]bool, len(succs))
	stack := []int{0}
	seen[0] = true
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range succs[v] {
			if !seen[w] {
				seen[w] = true
				stack = append(stack, w)
			}
		}
	}
	return seen
}

func randomGraph(r *rand.Rand, n int) [][]int {
	succs := make([][]int, n)
	for v := range succs {
		for k := r.IntN(4); k > 0; k-- {
			succs[v] = append(succs[v], r.IntN(n))
		}
	}
	return succs
}

func TestDominatorsBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 500; iter++ {
		n := 1 + r.IntN(25)
		succs := randomGraph(r, n)
		idom := loops.Dominators(succs)
		reach := reachable(succs)
		for b := 0; b < n; b++ {
			if !reach[b] {
				if idom[b] != -1 {
					t.Fatalf("graph %v: unreachable %d has idom %d", succs, b, idom[b])
				}
				continue
			}
			for a := 0; a < n; a++ {
				if !reach[a] {
					continue
				}
				if got, want := loops.Dominates(idom, a, b), bruteDominates(succs, a, b); got != want {
					t.Fatalf("graph %v: Dominates(%d,%d) = %v, want %v (idom %v)", succs, a, b, got, want, idom)
				}
			}
		}
	}
}

// TestForestProperties checks the loop forest of random graphs: every
// loop is strongly connected, its headers are exactly its nodes entered
// from outside it, nested loops are inside their parents, every cycle
// lies in some loop, and on reducible loops the header dominates the body.
func TestForestProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 500; iter++ {
		n := 1 + r.IntN(20)
		succs := randomGraph(r, n)
		ls, depth := loops.Forest(succs)
		idom := loops.Dominators(succs)
		for _, l := range ls {
			member := map[int]bool{}
			for _, v := range l.Nodes {
				member[v] = true
			}
			if l.Parent != nil {
				for _, v := range l.Nodes {
					if !slices.Contains(l.Parent.Nodes, v) {
						t.Fatalf("loop %v not inside its parent %v", l.Nodes, l.Parent.Nodes)
					}
				}
				if l.Depth != l.Parent.Depth+1 {
					t.Fatal("depth")
				}
			}
			for _, v := range l.Nodes {
				if depth[v] < l.Depth {
					t.Fatalf("node %d depth %d inside loop of depth %d", v, depth[v], l.Depth)
				}
			}
			reach := reachable(succs)
			if !l.Irreducible() && reach[l.Headers[0]] {
				for _, v := range l.Nodes {
					if reach[v] && !loops.Dominates(idom, l.Headers[0], v) {
						t.Fatalf("graph %v: header %d of reducible loop %v does not dominate %d", succs, l.Headers[0], l.Nodes, v)
					}
				}
			}
		}
		// Innermost: the deepest loop whose nodes hold v, by search; its
		// depth is v's. Within: a strict ancestor, by the nodes.
		inner := loops.Innermost(ls, n)
		for v := 0; v < n; v++ {
			var want *loops.Loop
			for _, l := range ls {
				if slices.Contains(l.Nodes, v) && (want == nil || l.Depth > want.Depth) {
					want = l
				}
			}
			if inner[v] != want || (want != nil && want.Depth != depth[v]) {
				t.Fatalf("graph %v: innermost loop of %d is %v, want %v (depth %d)", succs, v, inner[v], want, depth[v])
			}
		}
		for _, l := range ls {
			for _, o := range ls {
				want := o != l && o.Depth < l.Depth && !slices.ContainsFunc(l.Nodes, func(v int) bool { return !slices.Contains(o.Nodes, v) })
				if got := l.Within(o); got != want {
					t.Fatalf("graph %v: loop %v within %v: %v, want %v", succs, l.Nodes, o.Nodes, got, want)
				}
			}
			if l.Within(nil) {
				t.Fatalf("loop %v within no loop", l.Nodes)
			}
		}
		// Every node on a cycle has depth > 0, every other node 0.
		for v := 0; v < n; v++ {
			onCycle := cycleThrough(succs, v)
			if onCycle != (depth[v] > 0) {
				t.Fatalf("graph %v: node %d on cycle %v but depth %d", succs, v, onCycle, depth[v])
			}
		}
	}
}

func cycleThrough(succs [][]int, v int) bool {
	seen := make([]bool, len(succs))
	stack := append([]int{}, succs[v]...)
	for len(stack) > 0 {
		w := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if w == v {
			return true
		}
		if seen[w] {
			continue
		}
		seen[w] = true
		stack = append(stack, succs[w]...)
	}
	return false
}

func analyze(t *testing.T, cc, src string, flags ...string) (*loops.Analysis, *cfg.Program) {
	t.Helper()
	obj := testutil.Compile(t, t.TempDir(), cc, src, flags...)
	p := cfg.Build(testutil.BuildIBR(t, obj))
	return loops.Analyze(p), p
}

func graphOf(t *testing.T, p *cfg.Program, name string) *cfg.Graph {
	for _, g := range p.Graphs {
		if g.Func.Name == name {
			return g
		}
	}
	t.Fatalf("no function %s", name)
	return nil
}

func maxDepth(a *loops.Analysis, g *cfg.Graph) int {
	d := 0
	for _, b := range g.Blocks {
		d = max(d, a.Info(b).LoopDepth)
	}
	return d
}

// TestKnownStructure checks loop depths, irreducibility and inherited
// participation on functions of known shape, at several optimisation
// levels.
func TestKnownStructure(t *testing.T) {
	for _, opt := range []string{"-O0", "-O1", "-O2"} {
		for _, cc := range []string{"gcc", "clang"} {
			t.Run(cc+opt, func(t *testing.T) {
				a, p := analyze(t, cc, "../testdata/src/loops.c", opt, "-fno-inline")
				want := map[string]int{
					"straight": 0, "single": 1, "nested2": 2, "nested3": 3, "with_break": 1,
					"with_continue": 1, "goto_loop": 1, "switch_in_loop": 1, "recursive": 0,
					"deep_callee": 0, "caller_depth2": 2, "irreducible": 1,
				}
				if opt == "-O2" {
					// -O2 may merge the two outer loops of nested3 into
					// one header (natural loops sharing a header are
					// one loop) and turns recursive's tail call into a
					// loop.
					delete(want, "nested3")
					delete(want, "recursive")
					if d := maxDepth(a, graphOf(t, p, "nested3")); d < 2 {
						t.Errorf("nested3: loop depth %d, want >= 2", d)
					}
				}
				for name, d := range want {
					g := graphOf(t, p, name)
					if got := maxDepth(a, g); got != d {
						t.Errorf("%s: loop depth %d, want %d", name, got, d)
					}
				}
				// A callee called only from a depth-2 loop inherits 2.
				if got := a.Inherited[graphOf(t, p, "deep_callee")]; got != 2 {
					t.Errorf("deep_callee inherits %d, want 2", got)
				}
				// Recursion terminates and inherits from the outside.
				if got := a.Inherited[graphOf(t, p, "recursive")]; got != 1 && opt != "-O2" || got < 1 {
					t.Errorf("recursive inherits %d, want 1", got)
				}
				irr := false
				for _, l := range a.Loops[graphOf(t, p, "irreducible")] {
					irr = irr || l.Irreducible()
				}
				switch {
				case !irr && opt == "-O0":
					t.Errorf("irreducible: no irreducible loop found at -O0")
				case !irr:
					// Optimisers may duplicate code to make it
					// reducible, which is fine.
					t.Logf("irreducible: compiler made the loop reducible")
				}
				// Scores are in [0, 1] and the heaviest block scores 1.
				top := 0.0
				for _, g := range p.Graphs {
					for _, b := range g.Blocks {
						s := a.Info(b).Score
						if s < 0 || s > 1 {
							t.Fatalf("score %v out of range", s)
						}
						top = max(top, s)
					}
				}
				if top != 1 {
					t.Errorf("top score %v, want 1", top)
				}
			})
		}
	}
}

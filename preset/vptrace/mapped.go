package vptrace

import (
	"hijack/cfg"
	"hijack/loops"
)

// With tls indirect, a site's code loads this thread's slot array from the
// object's TLS word and tests it for 0 (kit.Slots.At: the thread may have
// none yet), two instructions at every site. The runtime unmaps a thread's
// array only at the thread's exit or when the object goes away, neither
// while a function of the object runs; so code that runs, in one call of a
// function, only after other inserted code of that call tested the array
// finds it there and needs no test: all but the first site's code on a
// path (ABI.md "Per-thread last-page slots").

// arrayTests tracks, for the function being instrumented, the inserted
// code that tests the slot array (code before instruction tested[k]). A
// nil *arrayTests (other TLS models) knows of none and records none.
type arrayTests struct {
	idom   []int // the function's block dominators, nil where unknown
	tested []int
}

// newArrayTests starts the tracking for g. Dominance from the entry says
// nothing where control may enter another block from elsewhere (a label
// other code jumps to, an exception landing pad): there every site tests.
func newArrayTests(g *cfg.Graph) *arrayTests {
	for _, b := range g.Blocks[1:] {
		if b.External {
			return &arrayTests{}
		}
	}
	return &arrayTests{idom: loops.Dominators(loops.Succs(g))}
}

// mapped reports whether code inserted before instruction at runs only
// after code inserted before a tested instruction of the same call: one
// earlier in its block, or in a block that dominates its block.
func (a *arrayTests) mapped(g *cfg.Graph, at int) bool {
	if a == nil || a.idom == nil {
		return false
	}
	b := g.BlockOf(at).Index
	for _, t := range a.tested {
		tb := g.BlockOf(t).Index
		if tb == b && t < at || tb != b && loops.Dominates(a.idom, tb, b) {
			return true
		}
	}
	return false
}

// tests records that the code inserted before instruction at tests the
// array.
func (a *arrayTests) tests(at int) {
	if a != nil {
		a.tested = append(a.tested, at)
	}
}

// loopEntered records that code on every entry edge of a loop with header
// block h tested the array or found it tested: every run of the loop
// starts on one, so the code at h and after it finds it there. Not where
// h is the function's entry block, which calls enter too.
func (a *arrayTests) loopEntered(g *cfg.Graph, h int) {
	if h != 0 {
		a.tests(g.Blocks[h].Start)
	}
}

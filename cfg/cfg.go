// Package cfg builds control-flow graphs of the functions of an IBR object
// and the call graph between them, and computes register and flag
// liveness.
//
// Blocks are maximal: they are split only at branch targets (including
// jump-table entries and other address-taken labels) and after control
// transfers. What the code does is represented, not guessed: jump tables
// are recovered exactly from their relocations, calls to functions that do
// not return end a block, tail calls and calls through pointers are marked
// as such, and an indirect jump whose targets are not known stays
// Unresolved (analyses must then be conservative).
package cfg

import (
	"fmt"
	"slices"

	"golang.org/x/arch/x86/x86asm"

	"hijack/elfobj"
	"hijack/ibr"
)

// Program is the analysis of one object: a graph per function and the
// call graph.
type Program struct {
	Obj    *ibr.Object
	Graphs []*Graph
	ByFunc map[*ibr.Func]*Graph
	// Callers lists, per function, the call sites (including tail calls)
	// that reach it from this object.
	Callers map[*Graph][]Site
}

// Site is a call site: a block of a caller and its call instruction.
type Site struct {
	Graph *Graph
	Block *Block
	Call  *Call
}

// Graph is the control-flow graph of one function.
type Graph struct {
	Func *ibr.Func
	Sec  *ibr.Section
	// Blocks are in address order; Blocks[0] is the entry.
	Blocks []*Block
	// Unresolved holds the indices of indirect jumps whose targets are
	// not known.
	Unresolved []int
	// Calls are the calls and tail calls of the function, in address order.
	Calls []*Call
	block []int32 // instruction index - Func.Start -> block index
}

// Exit says how control leaves a block other than to its successors.
type Exit uint8

const (
	ExitReturn   Exit = 1 << iota // ret
	ExitTailCall                  // jump to another function
	ExitNoReturn                  // call to a function that does not return
	ExitIndirect                  // indirect jump with unknown targets
	ExitTrap                      // ud2, hlt, int3
	ExitFallOff                   // falls off the end of the function
)

func (e Exit) String() string {
	var s []string
	for i, n := range []string{"return", "tailcall", "noreturn", "indirect", "trap", "falloff"} {
		if e&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	return fmt.Sprint(s)
}

// Block is a basic block.
type Block struct {
	Index int
	// Start and End delimit the block's instructions in Graph.Sec.Insts.
	Start, End int
	Succs      []*Block
	Preds      []*Block
	Exits      Exit
	// Table is set when the block ends in an indirect jump through a
	// recovered jump table.
	Table bool
}

// Call is a call or tail call instruction.
type Call struct {
	Inst int // instruction index in the section
	// Callee is the called function when it is defined in this object.
	Callee *ibr.Func
	// Name is the called symbol's name ("" for calls through pointers).
	Name     string
	Indirect bool
	Tail     bool // a jump to another function
	NoReturn bool
}

// Build analyses every function of o.
func Build(o *ibr.Object) *Program {
	p := &Program{Obj: o, ByFunc: make(map[*ibr.Func]*Graph), Callers: make(map[*Graph][]Site)}
	tables := findTables(o)
	starts := make(map[*ibr.Section]map[int]*ibr.Func)
	for _, s := range o.Code {
		m := make(map[int]*ibr.Func)
		for _, fn := range s.Funcs {
			m[fn.Start] = fn
		}
		starts[s] = m
	}
	addrTaken := addressTaken(o)
	for _, fn := range o.Funcs {
		g := buildGraph(o, fn, tables, starts, addrTaken)
		p.Graphs = append(p.Graphs, g)
		p.ByFunc[fn] = g
	}
	for _, g := range p.Graphs {
		for _, c := range g.Calls {
			if c.Callee == nil {
				continue
			}
			if cg := p.ByFunc[c.Callee]; cg != nil {
				p.Callers[cg] = append(p.Callers[cg], Site{g, g.BlockOf(c.Inst), c})
			}
		}
	}
	return p
}

// BlockOf returns the block holding instruction i.
func (g *Graph) BlockOf(i int) *Block {
	k := i - g.Func.Start
	if k < 0 || k >= len(g.block) || g.block[k] < 0 {
		return nil
	}
	return g.Blocks[g.block[k]]
}

// noReturn names functions that never return to their caller.
var noReturn = map[string]bool{
	"exit": true, "_exit": true, "_Exit": true, "abort": true, "quick_exit": true,
	"__stack_chk_fail": true, "__stack_chk_fail_local": true, "__fortify_fail": true, "__chk_fail": true,
	"longjmp": true, "_longjmp": true, "siglongjmp": true, "__longjmp_chk": true,
	"__cxa_throw": true, "__cxa_rethrow": true, "__cxa_bad_cast": true, "__cxa_bad_typeid": true,
	"__cxa_pure_virtual": true, "__cxa_call_unexpected": true, "__cxa_throw_bad_array_new_length": true,
	"_Unwind_Resume": true, "__assert_fail": true, "__assert_perror_fail": true, "__assert": true,
	"err": true, "errx": true, "verr": true, "verrx": true, "pthread_exit": true,
	"__libc_fatal": true, "__ubsan_handle_builtin_unreachable": true,
	"_ZSt9terminatev": true, "__clang_call_terminate": true, "__cxa_call_terminate": true,
}

// NoReturn reports whether a called symbol never returns.
func NoReturn(name string) bool {
	if noReturn[name] {
		return true
	}
	// std::__throw_* helpers of libstdc++: _ZSt19__throw_logic_errorPKc ...
	if len(name) > 6 && name[:4] == "_ZSt" {
		i := 4
		for i < len(name) && name[i] >= '0' && name[i] <= '9' {
			i++
		}
		return len(name) >= i+8 && name[i:i+8] == "__throw_"
	}
	return false
}

// control classifies how an instruction transfers control.
type control uint8

const (
	ctlNone control = iota
	ctlJump
	ctlCondJump
	ctlIndirectJump
	ctlCall
	ctlIndirectCall
	ctlReturn
	ctlTrap
)

func classify(s *ibr.Section, i int) control {
	in := &s.Insts[i]
	if in.Kind != ibr.Code || in.Flags&ibr.Prefix != 0 {
		return ctlNone
	}
	a := s.Asm(i)
	switch a.Op {
	case x86asm.JMP:
		if in.Layout.RelSize > 0 {
			return ctlJump
		}
		return ctlIndirectJump
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JG, x86asm.JGE, x86asm.JL,
		x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JS,
		x86asm.JCXZ, x86asm.JECXZ, x86asm.JRCXZ, x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE, x86asm.XBEGIN:
		return ctlCondJump
	case x86asm.CALL:
		if in.Layout.RelSize > 0 {
			return ctlCall
		}
		return ctlIndirectCall
	case x86asm.RET, x86asm.LRET, x86asm.IRET, x86asm.IRETD, x86asm.IRETQ, x86asm.SYSRET:
		return ctlReturn
	case x86asm.UD2, x86asm.UD1, x86asm.HLT, x86asm.INT:
		return ctlTrap
	}
	if a.Op == 0 && in.Layout.RelSize > 0 {
		// A branch x86asm could not decode: take it as conditional,
		// which keeps both paths.
		return ctlCondJump
	}
	if a.Op == 0 && in.Layout.Map == 0 && in.Layout.Opcode == 0xcc {
		return ctlTrap
	}
	return ctlNone
}

// callTarget resolves the target of a direct call or jump: a function of
// this object or an external symbol.
func callTarget(o *ibr.Object, s *ibr.Section, i int, starts map[*ibr.Section]map[int]*ibr.Func) (*ibr.Func, string) {
	in := &s.Insts[i]
	if in.Link != nil && in.Link.Kind == ibr.LinkBranch {
		if fn := starts[s][in.Link.Target]; fn != nil {
			return fn, fn.Name
		}
		return nil, ""
	}
	for _, fr := range in.Relocs {
		if fr.Off != in.Layout.RelOff {
			continue
		}
		r := o.File.Sections[fr.Sec].Relocs[fr.Index]
		sym := &o.File.Symbols[r.Sym]
		if ts := o.BySection[int(sym.Shndx)]; ts != nil && sym.Shndx < 0xffff0000 {
			t := int64(sym.Value) + r.Addend + int64(in.Len) - int64(fr.Off)
			if t >= 0 {
				if fn := starts[ts][ts.Find(uint64(t))]; fn != nil && uint64(ts.Insts[fn.Start].Off) == uint64(t) {
					return fn, fn.Name
				}
			}
		}
		return nil, sym.Name
	}
	return nil, ""
}

func buildGraph(o *ibr.Object, fn *ibr.Func, tables *tableIndex, starts map[*ibr.Section]map[int]*ibr.Func, addrTaken map[*ibr.Section]map[int]bool) *Graph {
	s := fn.Section
	g := &Graph{Func: fn, Sec: s}
	n := fn.End - fn.Start
	leader := make([]bool, n+1)
	leader[0] = true
	inFunc := func(t int) bool { return t >= fn.Start && t < fn.End }
	ctl := make([]control, n)
	tableOf := make(map[int][]int) // indirect jump -> targets
	for i := fn.Start; i < fn.End; i++ {
		c := classify(s, i)
		ctl[i-fn.Start] = c
		in := &s.Insts[i]
		if in.Kind != ibr.Code {
			leader[i-fn.Start] = true
			leader[i-fn.Start+1] = true
			continue
		}
		switch c {
		case ctlJump, ctlCondJump:
			if in.Link != nil && in.Link.Kind == ibr.LinkBranch && inFunc(in.Link.Target) {
				leader[in.Link.Target-fn.Start] = true
			}
			leader[i-fn.Start+1] = true
		case ctlIndirectJump:
			if ts, ok := tables.targetsFor(s, fn, i); ok {
				tableOf[i] = ts
				for _, t := range ts {
					if inFunc(t) {
						leader[t-fn.Start] = true
					}
				}
			}
			leader[i-fn.Start+1] = true
		case ctlReturn, ctlTrap:
			leader[i-fn.Start+1] = true
		case ctlCall:
			if _, name := callTarget(o, s, i, starts); NoReturn(name) {
				leader[i-fn.Start+1] = true
			}
		}
		if addrTaken[s][i] {
			leader[i-fn.Start] = true
		}
	}
	g.block = make([]int32, n)
	for i := 0; i < n; i++ {
		if leader[i] {
			g.Blocks = append(g.Blocks, &Block{Index: len(g.Blocks), Start: fn.Start + i})
		}
		b := g.Blocks[len(g.Blocks)-1]
		b.End = fn.Start + i + 1
		g.block[i] = int32(b.Index)
	}
	edge := func(from *Block, t int) {
		to := g.Blocks[g.block[t-fn.Start]]
		if !slices.Contains(from.Succs, to) {
			from.Succs = append(from.Succs, to)
			to.Preds = append(to.Preds, from)
		}
	}
	for bi, b := range g.Blocks {
		last := b.End - 1
		in := &s.Insts[last]
		fall := true
		switch ctl[last-fn.Start] {
		case ctlJump:
			fall = false
			if in.Link != nil && in.Link.Kind == ibr.LinkBranch && inFunc(in.Link.Target) {
				edge(b, in.Link.Target)
			} else {
				b.Exits |= ExitTailCall
				callee, name := callTarget(o, s, last, starts)
				g.Calls = append(g.Calls, &Call{Inst: last, Callee: callee, Name: name, Tail: true})
			}
		case ctlCondJump:
			if in.Link != nil && in.Link.Kind == ibr.LinkBranch && inFunc(in.Link.Target) {
				edge(b, in.Link.Target)
			} else {
				b.Exits |= ExitTailCall
				callee, name := callTarget(o, s, last, starts)
				g.Calls = append(g.Calls, &Call{Inst: last, Callee: callee, Name: name, Tail: true})
			}
		case ctlIndirectJump:
			fall = false
			ts, ok := tableOf[last]
			if !ok {
				// An indirect jump can only land on an instruction
				// whose address is taken. With no such instruction in
				// the function it leaves it: a tail call through a
				// pointer. Otherwise every address-taken instruction
				// of the function is a possible target.
				var inside []int
				for i := fn.Start + 1; i < fn.End; i++ {
					if addrTaken[s][i] {
						inside = append(inside, i)
					}
				}
				if len(inside) == 0 {
					b.Exits |= ExitTailCall
					g.Calls = append(g.Calls, &Call{Inst: last, Indirect: true, Tail: true})
					break
				}
				b.Exits |= ExitIndirect
				g.Unresolved = append(g.Unresolved, last)
				for _, t := range inside {
					edge(b, t)
				}
				break
			}
			b.Table = true
			for _, t := range ts {
				if inFunc(t) {
					edge(b, t)
				} else {
					b.Exits |= ExitTailCall
				}
			}
		case ctlReturn:
			fall = false
			b.Exits |= ExitReturn
		case ctlTrap:
			fall = false
			b.Exits |= ExitTrap
		}
		// Calls anywhere in the block.
		for i := b.Start; i < b.End; i++ {
			switch ctl[i-fn.Start] {
			case ctlCall:
				callee, name := callTarget(o, s, i, starts)
				c := &Call{Inst: i, Callee: callee, Name: name, NoReturn: NoReturn(name)}
				g.Calls = append(g.Calls, c)
				if c.NoReturn && i == last {
					fall = false
					b.Exits |= ExitNoReturn
				}
			case ctlIndirectCall:
				g.Calls = append(g.Calls, &Call{Inst: i, Indirect: true})
			}
		}
		if fall {
			if bi+1 < len(g.Blocks) {
				edge(b, g.Blocks[bi+1].Start)
			} else {
				b.Exits |= ExitFallOff
			}
		}
	}
	slices.SortFunc(g.Calls, func(a, b *Call) int { return a.Inst - b.Inst })
	return g
}

// addressTaken marks instructions whose address is taken by a relocation
// (jump tables, computed-goto tables, function pointers): they start
// blocks.
func addressTaken(o *ibr.Object) map[*ibr.Section]map[int]bool {
	m := make(map[*ibr.Section]map[int]bool)
	for _, r := range o.Refs {
		if r.Delta != 0 || r.Inst >= len(r.Target.Insts) {
			continue
		}
		if m[r.Target] == nil {
			m[r.Target] = make(map[int]bool)
		}
		m[r.Target][r.Inst] = true
	}
	return m
}

// relocTarget returns the section and offset a relocation in a code
// section designates (counting PC-relative fields from the instruction
// end).
func relocTarget(f *elfobj.File, s *ibr.Section, in *ibr.Inst, fr ibr.FieldReloc) (uint32, int64, bool) {
	r := f.Sections[fr.Sec].Relocs[fr.Index]
	sym := &f.Symbols[r.Sym]
	if sym.Shndx == elfobj.ShnUndef || sym.Shndx >= 0xffff0000 {
		return 0, 0, false
	}
	t := int64(sym.Value) + r.Addend
	switch ibr.ClassOf(r.Type) {
	case ibr.RelocPC:
		t += int64(in.Len) - int64(fr.Off)
	case ibr.RelocAbs:
	default:
		return 0, 0, false
	}
	return sym.Shndx, t, true
}

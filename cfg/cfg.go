// Package cfg builds control-flow graphs of the functions of an IBR object
// and the call graph between them, and computes register and flag
// liveness.
//
// Blocks are maximal: they are split only at branch targets (including
// jump-table entries and other address-taken labels) and after control
// transfers. What the code does is represented, not guessed: a jump table
// is matched to its dispatch by data flow (the one definition of the
// table's address that reaches the jump, a range check on the index) and
// its entries are decoded from their relocations; calls to functions that
// do not return end a block, tail calls and calls through pointers are
// marked as such, and an indirect jump that is not a proven table
// dispatch stays Unresolved (analyses are then conservative).
package cfg

import (
	"debug/elf"
	"fmt"
	"slices"

	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg/effect"
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
	// Tables are the jump tables of the function's table dispatches, in
	// address order of the jumps.
	Tables []*JumpTable
	// Unresolved holds the indices of the indirect jumps that are not
	// proven table dispatches; Indirect says what became of each.
	Unresolved []int
	Indirect   []IndirectJump
	// Calls are the calls and tail calls of the function, in address order.
	Calls []*Call
	block []int32         // instruction index - Func.Start -> block index
	eff   []effect.Effect // by instruction index - Func.Start
}

// IndirectJump is an indirect jump hijack could not prove to be a table
// dispatch. Analyses treat it conservatively: it may reach every
// address-taken instruction of the function, and leave it with every
// register and flag live, or (TailCall) with what a call needs live.
type IndirectJump struct {
	Inst int
	// TailCall is set when the jump leaves the function as a tail call
	// would: the stack is at its entry height on every path, and no label
	// outside the function other code may jump to exists in the object.
	TailCall bool
	// Reason says why it is not a table dispatch.
	Reason string
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
	// proven jump table (Graph.Tables).
	Table bool
	// External is set when control may enter the block other than
	// through Preds: the function's entry, a label other code refers to,
	// an exception landing pad (a block the edges do not reach).
	External bool
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
	ix := newObjIndex(o)
	starts := make(map[*ibr.Section]map[int]*ibr.Func)
	for _, s := range o.Code {
		m := make(map[int]*ibr.Func)
		for _, fn := range s.Funcs {
			m[fn.Start] = fn
		}
		starts[s] = m
	}
	ix.starts = starts
	for _, fn := range o.Funcs {
		g := ix.graph(fn)
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
		if fr.Off != int(in.Layout.RelOff) {
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

func buildGraph(ix *objIndex, fn *ibr.Func, starts map[*ibr.Section]map[int]*ibr.Func) *Graph {
	o := ix.o
	s := fn.Section
	g := &Graph{Func: fn, Sec: s}
	n := fn.End - fn.Start
	leader := make([]bool, n+1)
	leader[0] = true
	inFunc := func(t int) bool { return t >= fn.Start && t < fn.End }
	ctl := make([]control, n)
	taken := ix.taken[s]
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
		case ctlIndirectJump, ctlReturn, ctlTrap:
			// Whatever an indirect jump reaches has its address
			// taken, and so starts a block already.
			leader[i-fn.Start+1] = true
		case ctlCall:
			if _, name := callTarget(o, s, i, starts); NoReturn(name) {
				leader[i-fn.Start+1] = true
			}
		}
		if taken[i] {
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

	// Static successors: fall-through and direct branches. Indirect
	// jumps get theirs below, once they are resolved or not.
	static := make([][]int, len(g.Blocks)) // successor instructions per block
	var pending []int                      // indirect jumps, in address order
	local := make(map[int]*ibr.Func)
	for bi, b := range g.Blocks {
		last := b.End - 1
		in := &s.Insts[last]
		fall := true
		switch ctl[last-fn.Start] {
		case ctlJump:
			fall = false
			if in.Link != nil && in.Link.Kind == ibr.LinkBranch && inFunc(in.Link.Target) {
				static[bi] = append(static[bi], in.Link.Target)
			} else {
				b.Exits |= ExitTailCall
				callee, name := callTarget(o, s, last, starts)
				g.Calls = append(g.Calls, &Call{Inst: last, Callee: callee, Name: name, Tail: true})
			}
		case ctlCondJump:
			if in.Link != nil && in.Link.Kind == ibr.LinkBranch && inFunc(in.Link.Target) {
				static[bi] = append(static[bi], in.Link.Target)
			} else {
				b.Exits |= ExitTailCall
				callee, name := callTarget(o, s, last, starts)
				g.Calls = append(g.Calls, &Call{Inst: last, Callee: callee, Name: name, Tail: true})
			}
		case ctlIndirectJump:
			fall = false
			pending = append(pending, last)
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
				if callee != nil {
					local[i] = callee
				}
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
				static[bi] = append(static[bi], g.Blocks[bi+1].Start)
			} else {
				b.Exits |= ExitFallOff
			}
		}
	}

	// Every instruction of the function (but its entry) whose address is
	// taken: what an indirect jump not proven to be a table dispatch may
	// reach within the function.
	var inside []int
	for i := fn.Start + 1; i < fn.End; i++ {
		if taken[i] {
			inside = append(inside, i)
		}
	}
	g.eff = Effects(g)
	r := &resolver{ix: ix, g: g, s: s, fn: fn, eff: g.eff, local: local}
	// Resolve the indirect jumps on a graph where those not resolved yet
	// reach every such instruction: more edges than there are, so what
	// data flow proves on it holds. Each jump resolved removes edges, which
	// may let others be proved: repeat until nothing changes.
	tables := make(map[int]*JumpTable)
	why := make(map[int]string)
	dynamic := func(j int) []int {
		if t := tables[j]; t != nil {
			return t.Targets()
		}
		return inside
	}
	for {
		g.link(static, pending, dynamic)
		r.external = g.externalBlocks(ix)
		changed := false
		for _, j := range pending {
			if tables[j] != nil {
				continue
			}
			t, w := r.resolve(j)
			if t == nil {
				why[j] = w
				continue
			}
			tables[j] = t
			changed = true
		}
		if !changed {
			break
		}
	}
	var frames []frame
	for _, j := range pending {
		b := g.BlockOf(j)
		if t := tables[j]; t != nil {
			b.Table = true
			g.Tables = append(g.Tables, t)
			continue
		}
		// Not a table dispatch. It leaves the function if the stack
		// is back at its entry height and no label outside the
		// function can be its target: a tail call, with the argument
		// and callee-saved registers live. Otherwise it may go
		// anywhere: everything is live. Either way it may also reach
		// every address-taken instruction of the function.
		if frames == nil {
			frames = r.heights()
		}
		ij := IndirectJump{Inst: j, Reason: why[j]}
		name := gotName(o, s, j)
		if r.intoCode[j] {
			ij.Reason += " (into other code of the object)"
		}
		if !r.intoCode[j] && r.atEntryHeight(frames, j) && (name != "" || !ix.strayLabels(fn)) {
			ij.TailCall = true
			b.Exits |= ExitTailCall
			g.Calls = append(g.Calls, &Call{Inst: j, Name: name, Indirect: true, Tail: true})
		} else {
			b.Exits |= ExitIndirect
		}
		g.Unresolved = append(g.Unresolved, j)
		g.Indirect = append(g.Indirect, ij)
	}
	for _, b := range g.Blocks {
		b.External = r.external[b.Index]
	}
	slices.SortFunc(g.Calls, func(a, b *Call) int { return a.Inst - b.Inst })
	return g
}

// link sets the edges of the graph: the static successors of every block
// and, for the indirect jump ending a block, the targets dynamic gives.
func (g *Graph) link(static [][]int, pending []int, dynamic func(int) []int) {
	for _, b := range g.Blocks {
		b.Succs, b.Preds = b.Succs[:0], b.Preds[:0]
	}
	edge := func(from *Block, t int) {
		to := g.BlockOf(t)
		if to == nil || to.Start != t {
			return
		}
		if !slices.Contains(from.Succs, to) {
			from.Succs = append(from.Succs, to)
			to.Preds = append(to.Preds, from)
		}
	}
	for bi, b := range g.Blocks {
		for _, t := range static[bi] {
			edge(b, t)
		}
	}
	for _, j := range pending {
		b := g.BlockOf(j)
		for _, t := range dynamic(j) {
			edge(b, t)
		}
	}
}

// externalBlocks marks the blocks control may enter other than through
// the graph's edges: the entry, blocks that start at a label other code
// refers to, and blocks the graph does not reach from those (exception
// landing pads, which only the unwinder enters) other than alignment
// padding. Values in registers there may come from anywhere.
//
// A landing pad that the graph also reaches is not seen as one: cfg does
// not read the LSDA. At a landing pad the callee-saved registers hold what
// they held at the call that threw, and compilers use nothing else there
// that they did not define on the way.
func (g *Graph) externalBlocks(ix *objIndex) []bool {
	ext := make([]bool, len(g.Blocks))
	foreign := ix.foreign[g.Sec]
	for _, b := range g.Blocks {
		ext[b.Index] = b.Index == 0 || foreign[b.Start]
	}
	reached := g.Reachable(func(b *Block) bool { return ext[b.Index] })
	for _, b := range g.Blocks {
		if !reached[b.Index] && !g.padding(b) {
			ext[b.Index] = true
		}
	}
	return ext
}

// Reachable returns, by block index, which blocks control can reach from
// the blocks root selects.
func (g *Graph) Reachable(root func(*Block) bool) []bool {
	seen := make([]bool, len(g.Blocks))
	var work []*Block
	for _, b := range g.Blocks {
		if root(b) {
			seen[b.Index] = true
			work = append(work, b)
		}
	}
	for len(work) > 0 {
		b := work[len(work)-1]
		work = work[:len(work)-1]
		for _, s := range b.Succs {
			if !seen[s.Index] {
				seen[s.Index] = true
				work = append(work, s)
			}
		}
	}
	return seen
}

// padding reports whether a block holds only no-ops: the alignment
// padding compilers put after an unconditional jump, which nothing enters.
func (g *Graph) padding(b *Block) bool {
	for i := b.Start; i < b.End; i++ {
		switch a := g.Sec.Asm(i); a.Op {
		case x86asm.NOP:
		case x86asm.XCHG:
			// xchg %ax,%ax (66 90)
			if args(a) != 2 || a.Args[0] != a.Args[1] {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// gotName returns the symbol an indirect jump through its GOT slot goes
// to (jmp *foo@GOTPCREL(%rip), gcc's -fno-plt tail calls), or "".
func gotName(o *ibr.Object, s *ibr.Section, j int) string {
	in := &s.Insts[j]
	if !in.Layout.RIPRelative {
		return ""
	}
	f := o.File
	for _, fr := range in.Relocs {
		if fr.Off != int(in.Layout.DispOff) || fr.Sec >= len(f.Sections) || fr.Index >= len(f.Sections[fr.Sec].Relocs) {
			continue
		}
		r := f.Sections[fr.Sec].Relocs[fr.Index]
		switch r.Type {
		case elf.R_X86_64_GOTPCREL, elf.R_X86_64_GOTPCRELX, elf.R_X86_64_REX_GOTPCRELX:
			if int(r.Sym) < len(f.Symbols) {
				return f.Symbols[r.Sym].Name
			}
		}
	}
	return ""
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

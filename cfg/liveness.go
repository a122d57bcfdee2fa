package cfg

import (
	"slices"
	"strings"

	"hijack/cfg/effect"
	"hijack/ibr"
)

// Live is a set of live general registers and flags.
type Live struct {
	Regs  effect.RegSet
	Flags effect.Flags
}

// Union returns the union of two sets.
func (l Live) Union(m Live) Live { return Live{l.Regs | m.Regs, l.Flags | m.Flags} }

// allLive is what an unknown continuation may use: everything.
var allLive = Live{effect.AllRegs, effect.AllFlags}

// ABI sets (System V x86-64). Calls and tail calls also count R10, the
// static chain of nested functions, as an argument, and DF, which must be
// clear at every call and return, is always live: nothing may clobber it.
// Calls also keep the callee-saved registers live where an exception may
// land in the calling function (callUsesEH): its landing pad expects
// them as they were at the call that threw. Elsewhere a call keeps those
// that may still hold the caller's values (callerHeld): an exception
// passing through takes them from the registers, the others from where
// the function saved them.
var (
	callUses   = Live{effect.ArgRegs | 1<<effect.R10 | 1<<effect.RSP, effect.DF}
	callUsesEH = Live{callUses.Regs | effect.CalleeSaved, effect.DF}
	retUses    = Live{effect.ReturnRegs | effect.CalleeSaved | 1<<effect.RSP, effect.DF}
)

// mayLand reports whether an exception may land in a function of object
// o: it has a .gcc_except_table section (an LSDA: the call sites whose
// exceptions a landing pad catches or cleans up after), as C++, and C
// with -fexceptions and cleanups, have. Without one the unwinder only
// passes through: it restores the callee-saved registers a function
// saved from where it saved them, and takes the others (still the
// caller's) from the registers, which callerHeld keeps live at calls.
func mayLand(o *ibr.Object) bool {
	if o == nil || o.File == nil {
		return true
	}
	for _, s := range o.File.Sections {
		if s.Name == ".gcc_except_table" || strings.HasPrefix(s.Name, ".gcc_except_table.") {
			return true
		}
	}
	return false
}

// Liveness holds the registers and flags live before and after every
// instruction of a function.
type Liveness struct {
	g             *Graph
	before, after []Live // by instruction index - Func.Start
	eff           []effect.Effect
}

// Before returns what is live immediately before instruction i (an index
// into the section's instructions within the function).
func (l *Liveness) Before(i int) Live { return l.before[i-l.g.Func.Start] }

// After returns what is live immediately after instruction i.
func (l *Liveness) After(i int) Live { return l.after[i-l.g.Func.Start] }

// Effect returns the effect of instruction i as liveness modelled it.
func (l *Liveness) Effect(i int) *effect.Effect { return &l.eff[i-l.g.Func.Start] }

// Effects computes the effect of every instruction of the function.
// Elements that are not instructions (data) are unknown. A split-off
// prefix (ibr.Prefix) has no effect of its own when it is a lock or
// segment prefix; effect.Of makes any other (rep, 66, 67) unknown, since the
// instruction after it was decoded without it.
func Effects(g *Graph) []effect.Effect {
	s, fn := g.Sec, g.Func
	out := make([]effect.Effect, fn.End-fn.Start)
	for i := fn.Start; i < fn.End; i++ {
		in := &s.Insts[i]
		switch {
		case in.Kind != ibr.Code:
			out[i-fn.Start] = effect.Effect{Use: effect.AllRegs, Partial: effect.AllRegs, FlagsUse: effect.AllFlags, FlagsMay: effect.AllFlags}
		default:
			out[i-fn.Start] = effect.Of(s.Asm(i), &in.Layout, s.Bytes(i))
		}
	}
	return out
}

// transfer computes what is live before an instruction from what is live
// after it. local is set for a direct call to a function of this object.
func transfer(e *effect.Effect, after Live, local bool, calls Live) Live {
	switch e.Ctrl {
	case effect.Call, effect.IndirectCall:
		// An unknown callee may clobber every caller-saved register
		// and the status flags. A callee in this object may not:
		// compilers that see its body (gcc's -fipa-ra) keep values in
		// the caller-saved registers it leaves alone, so across such a
		// call nothing is killed. Argument registers are used either
		// way; callee-saved registers stay live where an exception may
		// land in this function's handler, which expects them (calls
		// is callUsesEH there).
		if !local {
			after.Regs &^= effect.CallerSaved
		}
		after.Flags &^= effect.Status
		after = after.Union(calls)
	}
	// (the effect's own rules: a partial write reads the register, and a
	// flag a shift by CL may leave as it was passes through, live before
	// it only where live after it)
	return Live{e.LiveIn(after.Regs), e.FlagsLiveIn(after.Flags) | effect.DF}
}

// exitLive is what is live after the last instruction of b because of how
// it leaves the function; ret is what the function's callers need at its
// returns, out what the code of this object that b jumps to needs (see
// Program.Liveness).
func exitLive(b *Block, ret Live, out map[int]Live) Live {
	l := out[b.Index]
	if b.Exits&(ExitIndirect|ExitFallOff) != 0 {
		return allLive
	}
	if b.Exits&ExitReturn != 0 {
		l = l.Union(ret)
	}
	if b.Exits&ExitTailCall != 0 {
		// The tail-called function returns to our caller.
		l = l.Union(callUses).Union(ret)
	}
	return l
}

// liveness computes register and flag liveness for the function by
// backward data flow over its blocks, to a fixed point. ret is what is
// live at its returns; localCall reports direct calls to functions of
// this object; held, where no exception lands in the object, what
// callerHeld found at each call (nil: calls keep all callee-saved
// registers).
func (g *Graph) liveness(ret Live, localCall map[int]bool, out map[int]Live, held map[int]effect.RegSet) *Liveness {
	fn := g.Func
	n := fn.End - fn.Start
	eff := g.effects()
	l := &Liveness{g: g, before: make([]Live, n), after: make([]Live, n), eff: eff}
	in := make([]Live, len(g.Blocks))
	for changed := true; changed; {
		changed = false
		for k := len(g.Blocks) - 1; k >= 0; k-- {
			b := g.Blocks[k]
			live := exitLive(b, ret, out)
			for _, s := range b.Succs {
				live = live.Union(in[s.Index])
			}
			for i := b.End - 1; i >= b.Start; i-- {
				e := &l.eff[i-fn.Start]
				if i == b.End-1 && e.Ctrl == effect.Return {
					live = live.Union(ret)
				}
				l.after[i-fn.Start] = live
				// (localCall only matters to calls: the map read at
				// every instruction was a tenth of liveness's time)
				call := e.Ctrl == effect.Call || e.Ctrl == effect.IndirectCall
				calls := callUsesEH
				if call && held != nil {
					calls.Regs = callUses.Regs | held[i]
				}
				live = transfer(e, live, call && localCall[i], calls)
				l.before[i-fn.Start] = live
			}
			if live != in[b.Index] {
				in[b.Index] = live
				changed = true
			}
		}
	}
	return l
}

// effects returns the effect of every instruction of the function, as
// Build computed them (or now, for a graph built otherwise).
func (g *Graph) effects() []effect.Effect {
	if len(g.eff) == g.Func.End-g.Func.Start {
		return g.eff
	}
	return Effects(g)
}

// callerHeld returns, at each call of the function (by instruction
// index), the callee-saved registers that may still hold its caller's
// values there: written by no instruction on some path from the entry
// (or from a block entered from outside, where nothing is known), a
// forward data flow to a fixed point. A function saves such a register
// before it writes it (its prologue, or a shrink-wrapped save on the
// paths that write it), so an exception passing through a call finds the
// caller's value in its save slot, or, where none was written yet, in the
// register itself, which must then be kept.
func (g *Graph) callerHeld(eff []effect.Effect) map[int]effect.RegSet {
	start := g.Func.Start
	in := make([]effect.RegSet, len(g.Blocks))
	outs := make([]effect.RegSet, len(g.Blocks))
	for _, b := range g.Blocks {
		if b.External {
			in[b.Index] = effect.CalleeSaved
		}
	}
	written := func(b *Block, v effect.RegSet) effect.RegSet {
		for i := b.Start; i < b.End; i++ {
			v &^= eff[i-start].Def
		}
		return v
	}
	for changed := true; changed; {
		changed = false
		for _, b := range g.Blocks {
			v := in[b.Index]
			for _, p := range b.Preds {
				v |= outs[p.Index]
			}
			in[b.Index] = v
			if o := written(b, v); o != outs[b.Index] {
				outs[b.Index] = o
				changed = true
			}
		}
	}
	held := make(map[int]effect.RegSet)
	for _, b := range g.Blocks {
		v := in[b.Index]
		for i := b.Start; i < b.End; i++ {
			e := &eff[i-start]
			if e.Ctrl == effect.Call || e.Ctrl == effect.IndirectCall {
				held[i] = v
			}
			v &^= e.Def
		}
	}
	return held
}

// Liveness computes liveness for every function of the program. It is
// interprocedural where the object allows it to matter: what is live at a
// function's returns includes what its callers in this object keep live
// across their calls to it (compilers that see both bodies rely on the
// callee leaving those registers alone); what is live where a function
// jumps to code of another function of the object includes what that code
// needs there (gcc's .cold parts are the same function to its register
// allocator: any register or flag may be live across the jump into one,
// and back); iterated to a fixed point.
func (p *Program) Liveness() map[*Graph]*Liveness {
	ret := make(map[*Graph]Live, len(p.Graphs))
	local := make(map[*Graph]map[int]bool, len(p.Graphs))
	jumps := make(map[*Graph][]jumpOut, len(p.Graphs))
	into := make(map[*Graph][]*Graph, len(p.Graphs)) // who jumps into a function
	for _, g := range p.Graphs {
		ret[g] = retUses
		m := make(map[int]bool)
		for _, c := range g.Calls {
			if c.Callee != nil && !c.Tail {
				m[c.Inst] = true
			}
		}
		local[g] = m
		for _, b := range g.Blocks {
			if b.Exits&ExitTailCall == 0 {
				continue
			}
			ts, ti, ok := branchTarget(p.Obj, g.Sec, b.End-1)
			if !ok {
				continue
			}
			tg := p.ByFunc[funcOf(ts, ti)]
			if tg == nil || tg.BlockOf(ti) == nil {
				continue
			}
			jumps[g] = append(jumps[g], jumpOut{b.Index, tg, ti})
			if !slices.Contains(into[tg], g) {
				into[tg] = append(into[tg], g)
			}
		}
	}
	exits := make(map[*Graph]map[int]Live, len(p.Graphs))
	out := make(map[*Graph]*Liveness, len(p.Graphs))
	// (what callers hold at calls does not change between rounds)
	held := make(map[*Graph]map[int]effect.RegSet, len(p.Graphs))
	if !mayLand(p.Obj) {
		for _, g := range p.Graphs {
			held[g] = g.callerHeld(g.effects())
		}
	}
	for round := 0; ; round++ {
		for _, g := range p.Graphs {
			out[g] = g.liveness(ret[g], local[g], exits[g], held[g])
		}
		changed := false
		for _, g := range p.Graphs {
			r := retUses
			for _, s := range p.Callers[g] {
				if s.Call.Tail {
					r.Regs |= ret[s.Graph].Regs
				} else {
					r.Regs |= out[s.Graph].After(s.Call.Inst).Regs
				}
			}
			// Code jumped into returns to the jumper's callers.
			for _, from := range into[g] {
				r.Regs |= ret[from].Regs
			}
			if r != ret[g] {
				ret[g] = r
				changed = true
			}
			for _, j := range jumps[g] {
				need := out[j.to].Before(j.at)
				if exits[g] == nil {
					exits[g] = make(map[int]Live)
				}
				if cur := exits[g][j.block]; cur.Union(need) != cur {
					exits[g][j.block] = cur.Union(need)
					changed = true
				}
			}
		}
		if !changed {
			return out
		}
	}
}

// jumpOut is a block that leaves its function by a direct jump to
// instruction at of function to (in this object).
type jumpOut struct {
	block int
	to    *Graph
	at    int
}

// branchTarget returns the instruction of this object that the direct
// jump or call i goes to: a branch the assembler resolved, or one whose
// relocation designates a code section.
func branchTarget(o *ibr.Object, s *ibr.Section, i int) (*ibr.Section, int, bool) {
	in := &s.Insts[i]
	if in.Kind != ibr.Code || in.Layout.RelSize == 0 {
		return nil, 0, false
	}
	if in.Link != nil && in.Link.Kind == ibr.LinkBranch {
		if in.Link.Target < 0 || in.Link.Target >= len(s.Insts) || in.Link.Delta != 0 {
			return nil, 0, false
		}
		return s, in.Link.Target, true
	}
	f := o.File
	for _, fr := range in.Relocs {
		if fr.Off != int(in.Layout.RelOff) || fr.Sec >= len(f.Sections) || fr.Index >= len(f.Sections[fr.Sec].Relocs) {
			continue
		}
		r := f.Sections[fr.Sec].Relocs[fr.Index]
		if int(r.Sym) >= len(f.Symbols) {
			return nil, 0, false
		}
		sym := &f.Symbols[r.Sym]
		ts := o.BySection[int(sym.Shndx)]
		if ts == nil || sym.Shndx == 0 || sym.Shndx >= 0xff00 || ibr.ClassOf(r.Type) != ibr.RelocPC {
			return nil, 0, false
		}
		t := int64(sym.Value) + r.Addend + int64(in.Len) - int64(fr.Off)
		if t < 0 {
			return nil, 0, false
		}
		ti := ts.Find(uint64(t))
		if ti < 0 || ti >= len(ts.Insts) || int64(ts.Insts[ti].Off) != t {
			return nil, 0, false
		}
		return ts, ti, true
	}
	return nil, 0, false
}

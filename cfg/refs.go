package cfg

import (
	"cmp"
	"debug/elf"
	"slices"
	"strings"

	"hijack/cfg/effect"
	"hijack/elfobj"
	"hijack/ibr"
)

// objIndex is what the analysis of every function needs to know about the
// whole object: which instructions control may reach other than by
// falling through or by a direct branch of their own function, and the
// relocations of the data sections, by offset, to decode jump tables.
type objIndex struct {
	o *ibr.Object
	// taken marks instructions whose address is taken at run time: the
	// target of a relocation in an allocated section (code, jump tables,
	// function pointers) or of a branch or RIP-relative operand of
	// another function. They start blocks, and are what an indirect jump
	// may reach. References from debug information are not addresses a
	// program can jump to, and do not count.
	taken map[*ibr.Section]map[int]bool
	// foreign marks the instructions of taken that control may reach from
	// outside their function: referenced by the code of another function,
	// or by data that other code (or data) may read. Entries of a table
	// that only its own function refers to are not foreign.
	foreign map[*ibr.Section]map[int]bool
	// nforeign counts foreign instructions that do not start a function
	// and whose address data or an address computation holds (not only
	// a direct branch), per function (key nil: outside every function),
	// and in all.
	nforeign      map[*ibr.Func]int
	nforeignTotal int
	// in says, for each foreign instruction, where control comes from.
	in map[*ibr.Section]map[int]*inbound
	// rela maps a data section to the relocations that apply to it, by
	// offset (-1 when two relocations share one offset).
	rela map[uint32]map[uint64]relaRef
	// ref maps a relocation (RELA section, index) to the reference into
	// code ibr made of it.
	ref map[[2]int]*ibr.CodeRef
	// starts maps each code section's function starts to the function.
	starts map[*ibr.Section]map[int]*ibr.Func
	// clobber caches clobbers.
	clobber map[*ibr.Func]effect.RegSet
	// graphs holds the graphs built, building those being built (a
	// callee's graph is built when its caller's analysis needs it).
	graphs   map[*ibr.Func]*Graph
	building map[*ibr.Func]bool
}

// graph returns the graph of fn, building it if need be; nil while it is
// being built (a call cycle), which callers must take as knowing nothing.
func (ix *objIndex) graph(fn *ibr.Func) *Graph {
	if g := ix.graphs[fn]; g != nil {
		return g
	}
	if ix.building[fn] {
		return nil
	}
	ix.building[fn] = true
	g := buildGraph(ix, fn, ix.starts)
	delete(ix.building, fn)
	ix.graphs[fn] = g
	return g
}

// inbound lists the references into an instruction from outside its
// function: branches of other functions, or anything else (data, a
// RIP-relative address).
type inbound struct {
	from  []site
	other bool
}

// site is an instruction of a code section.
type site struct {
	s *ibr.Section
	i int
}

type relaRef struct {
	sec   int // ELF index of the SHT_RELA section
	index int // -1: ambiguous
}

// anchorUse is a place in a data section that code or data refers to,
// and which function refers to it (nil and data set when something else
// does, or more than one function).
type anchorUse struct {
	off  uint64
	fn   *ibr.Func
	many bool
}

func funcOf(s *ibr.Section, i int) *ibr.Func {
	if s == nil || i < 0 || i >= len(s.Insts) {
		return nil
	}
	if f := s.Insts[i].Func; f >= 0 && int(f) < len(s.Funcs) {
		return s.Funcs[f]
	}
	return nil
}

func allocated(f *elfobj.File, sec uint32) bool {
	return int(sec) < len(f.Sections) && f.Sections[sec].Flags&elf.SHF_ALLOC != 0
}

func newObjIndex(o *ibr.Object) *objIndex {
	f := o.File
	ix := &objIndex{o: o, taken: make(map[*ibr.Section]map[int]bool), foreign: make(map[*ibr.Section]map[int]bool),
		nforeign: make(map[*ibr.Func]int), in: make(map[*ibr.Section]map[int]*inbound), rela: make(map[uint32]map[uint64]relaRef), ref: make(map[[2]int]*ibr.CodeRef),
		clobber: make(map[*ibr.Func]effect.RegSet), graphs: make(map[*ibr.Func]*Graph), building: make(map[*ibr.Func]bool)}
	mark := func(m map[*ibr.Section]map[int]bool, s *ibr.Section, i int) {
		if m[s] == nil {
			m[s] = make(map[int]bool)
		}
		m[s][i] = true
	}
	enter := func(s *ibr.Section, i int, from *ibr.Section, fi int) {
		mark(ix.foreign, s, i)
		if ix.in[s] == nil {
			ix.in[s] = make(map[int]*inbound)
		}
		ib := ix.in[s][i]
		if ib == nil {
			ib = &inbound{}
			ix.in[s][i] = ib
		}
		if from == nil {
			ib.other = true
		} else {
			ib.from = append(ib.from, site{from, fi})
		}
	}

	// Relocations of data sections, by offset.
	for ri, rs := range f.Sections {
		if rs.Type != elf.SHT_RELA || o.BySection[int(rs.Info)] != nil || !allocated(f, rs.Info) {
			continue
		}
		m := ix.rela[rs.Info]
		if m == nil {
			m = make(map[uint64]relaRef)
			ix.rela[rs.Info] = m
		}
		for k, r := range rs.Relocs {
			if _, dup := m[r.Off]; dup {
				m[r.Off] = relaRef{ri, -1}
			} else {
				m[r.Off] = relaRef{ri, k}
			}
		}
	}

	// Anchors: places in data that code or data refers to, with who does.
	anchors := make(map[uint32][]anchorUse)
	addAnchor := func(sec uint32, off uint64, fn *ibr.Func) {
		anchors[sec] = append(anchors[sec], anchorUse{off: off, fn: fn, many: fn == nil})
	}
	for _, rs := range f.Sections {
		if rs.Type != elf.SHT_RELA || !allocated(f, rs.Info) {
			continue
		}
		from := o.BySection[int(rs.Info)]
		for _, r := range rs.Relocs {
			if int(r.Sym) >= len(f.Symbols) {
				continue
			}
			sym := &f.Symbols[r.Sym]
			if sym.Shndx == elfobj.ShnUndef || sym.Shndx >= 0xffff0000 || o.BySection[int(sym.Shndx)] != nil {
				continue
			}
			t := int64(sym.Value) + r.Addend
			var fn *ibr.Func
			if from != nil {
				i := from.Find(r.Off)
				fn = funcOf(from, i)
				if ibr.ClassOf(r.Type) == ibr.RelocPC && i >= 0 && i < len(from.Insts) {
					t += int64(from.Insts[i].End()) - int64(r.Off)
				}
			}
			switch ibr.ClassOf(r.Type) {
			case ibr.RelocPC, ibr.RelocAbs:
			default:
				continue
			}
			if t >= 0 {
				addAnchor(sym.Shndx, uint64(t), fn)
			}
		}
	}
	for sec, as := range anchors {
		slices.SortFunc(as, func(a, b anchorUse) int { return cmp.Compare(a.off, b.off) })
		// Merge uses of one place.
		out := as[:0]
		for _, a := range as {
			if n := len(out); n > 0 && out[n-1].off == a.off {
				if out[n-1].fn != a.fn {
					out[n-1].many = true
				}
				continue
			}
			out = append(out, a)
		}
		anchors[sec] = out
	}
	// owner returns the function that alone refers to the data that an
	// entry at off belongs to (the nearest anchor at or below it).
	owner := func(sec uint32, off uint64) *ibr.Func {
		as := anchors[sec]
		i, found := slices.BinarySearchFunc(as, off, func(a anchorUse, v uint64) int { return cmp.Compare(a.off, v) })
		if !found {
			i--
		}
		if i < 0 || as[i].many {
			return nil
		}
		return as[i].fn
	}

	for k := range o.Refs {
		r := &o.Refs[k]
		ix.ref[[2]int{r.RelaSec, r.Index}] = r
		if r.Delta != 0 || r.Inst >= len(r.Target.Insts) || r.RelaSec >= len(f.Sections) {
			continue
		}
		rs := f.Sections[r.RelaSec]
		if !allocated(f, rs.Info) || r.Index >= len(rs.Relocs) || unwindInfo(f, rs.Info) {
			continue
		}
		mark(ix.taken, r.Target, r.Inst)
		to := funcOf(r.Target, r.Inst)
		off := rs.Relocs[r.Index].Off
		if from := o.BySection[int(rs.Info)]; from != nil {
			fi := from.Find(off)
			if by := funcOf(from, fi); to == nil || by != to {
				if branchField(from, fi, off) {
					enter(r.Target, r.Inst, from, fi)
				} else {
					enter(r.Target, r.Inst, nil, 0)
				}
			}
		} else if by := owner(rs.Info, off); to == nil || by != to {
			enter(r.Target, r.Inst, nil, 0)
		}
	}
	// Branches and RIP-relative operands the assembler resolved: from one
	// function into another (shared tails of hand-written code).
	for _, s := range o.Code {
		for i := range s.Insts {
			l := s.Insts[i].Link
			if l == nil || l.Target < 0 || l.Target >= len(s.Insts) {
				continue
			}
			from, to := funcOf(s, i), funcOf(s, l.Target)
			switch {
			case l.Kind == ibr.LinkRIP:
				mark(ix.taken, s, l.Target)
				enter(s, l.Target, nil, 0)
			case from != to:
				mark(ix.taken, s, l.Target)
				enter(s, l.Target, s, i)
			}
		}
	}
	for s, m := range ix.foreign {
		for i := range m {
			fn := funcOf(s, i)
			if fn != nil && fn.Start == i && !strings.Contains(fn.Name, ".cold") || !ix.in[s][i].other {
				// A function's entry follows the ABI. A label only
				// direct branches of other functions enter (a .cold
				// part's way back) has an address no value holds: no
				// indirect jump lands there. The entry of a .cold part
				// (gcc's, clang's split functions) does neither when a
				// table holds it.
				continue
			}
			ix.nforeign[fn]++
			ix.nforeignTotal++
		}
	}
	return ix
}

// unwindInfo reports whether section sec is call-frame information,
// whose references to code (an FDE's initial location) are not a way into
// it.
func unwindInfo(f *elfobj.File, sec uint32) bool {
	if int(sec) >= len(f.Sections) {
		return false
	}
	d := f.Sections[sec]
	return d.Name == ".eh_frame" || d.Type == 0x70000001 // SHT_X86_64_UNWIND
}

// strayLabels reports whether an indirect jump may enter, from outside,
// an instruction that does not start a function and is not in fn: one
// whose address is in data or computed by code (a table shared by
// functions, code that takes a label's address); an indirect jump of fn
// that hijack cannot resolve may then land in the middle of other code.
// Labels only direct branches enter (the way back from a .cold part gcc
// split off, shared tails of hand-written assembly) do not count: no
// value holds their address.
func (ix *objIndex) strayLabels(fn *ibr.Func) bool {
	return ix.nforeignTotal-ix.nforeign[fn] > 0
}

// branchField reports whether off is the displacement of branch i of s.
func branchField(s *ibr.Section, i int, off uint64) bool {
	if i < 0 || i >= len(s.Insts) || s.Insts[i].Kind != ibr.Code {
		return false
	}
	in := &s.Insts[i]
	return in.Layout.RelSize > 0 && uint64(in.Off)+uint64(in.Layout.RelOff) == off
}

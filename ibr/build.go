package ibr

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"golang.org/x/arch/x86/x86asm"

	"hijack/elfobj"
	"hijack/ibr/x86len"
)

// Build decodes every code section of f and links every reference into
// code. It returns an error only for inputs that are malformed; code it does
// not understand makes the section not rewritable (Section.Problem).
func Build(f *elfobj.File) (*Object, error) {
	o := &Object{File: f, BySection: make(map[int]*Section)}
	relocs := f.RelocSections()
	for i, es := range f.Sections {
		if !es.IsCode() || len(es.Data) == 0 {
			continue
		}
		if uint64(len(es.Data)) > math.MaxUint32 {
			// Inst offsets are 32-bit; no compiler emits 4 GiB of code
			// in one section.
			return nil, fmt.Errorf("section %d (%s): %d bytes of code, more than hijack handles in one section (4 GiB)", i, es.Name, len(es.Data))
		}
		s := &Section{Index: i, Elf: es}
		s.decode(f)
		o.Code = append(o.Code, s)
		o.BySection[i] = s
	}
	for _, s := range o.Code {
		if s.Problem == "" {
			for _, r := range relocs[s.Index] {
				s.attachRelocs(f, r)
			}
			s.glueTLSCalls(f)
		}
		if s.Problem == "" {
			s.link()
		}
		o.Funcs = append(o.Funcs, s.Funcs...)
	}
	if err := o.resolveRefs(relocs); err != nil {
		return nil, err
	}
	return o, nil
}

// fail records the first reason a section cannot be rewritten.
func (s *Section) fail(format string, args ...any) {
	if s.Problem == "" {
		s.Problem = fmt.Sprintf(format, args...)
	}
}

// region is a range of a code section with a known role.
type region struct {
	start, end uint64
	kind       Kind
	syms       []uint32 // function symbols starting code in the region
}

// decode splits the section into functions, data and padding, and decodes
// the functions.
func (s *Section) decode(f *elfobj.File) {
	size := uint64(len(s.Elf.Data))
	var funcs, labels []uint32
	var data []region
	for i := 1; i < len(f.Symbols); i++ {
		sym := &f.Symbols[i]
		if !sym.IsDefinedIn(s.Index) {
			continue
		}
		switch sym.Type() {
		case elf.STT_FUNC, elf.STT_GNU_IFUNC:
			if sym.Value < size {
				funcs = append(funcs, uint32(i))
			}
		case elf.STT_OBJECT, elf.STT_TLS, elf.STT_COMMON:
			if sym.Size > 0 && sym.Value < size {
				data = append(data, region{start: sym.Value, end: sym.Value + min(sym.Size, size-sym.Value), kind: Data})
			}
		case elf.STT_NOTYPE:
			if sym.Name != "" && sym.Value < size {
				labels = append(labels, uint32(i))
			}
		}
	}
	// Starts of anything: an unsized function extends to the next start.
	var starts []uint64
	for _, k := range funcs {
		starts = append(starts, f.Symbols[k].Value)
	}
	for _, d := range data {
		starts = append(starts, d.start)
	}
	slices.Sort(starts)
	nextStart := func(v uint64) uint64 {
		i, _ := slices.BinarySearch(starts, v+1)
		if i < len(starts) {
			return starts[i]
		}
		return size
	}
	var code []region
	for _, k := range funcs {
		sym := &f.Symbols[k]
		end := size
		switch {
		case sym.Size == 0:
			end = nextStart(sym.Value)
		case sym.Size > size-sym.Value:
			s.fail("function %s at 0x%x has size 0x%x beyond the end of the section", sym.Name, sym.Value, sym.Size)
		default:
			end = sym.Value + sym.Size
		}
		code = append(code, region{start: sym.Value, end: end, kind: Code, syms: []uint32{k}})
	}
	// Untyped labels outside every function start code of their own (hand
	// written assembly without .type); inside a function they are labels.
	slices.SortFunc(code, func(a, b region) int { return cmp.Compare(a.start, b.start) })
	for _, k := range labels {
		v := f.Symbols[k].Value
		if !inRegions(code, v) && !inRegions(data, v) && f.Symbols[k].Bind() != elf.STB_LOCAL {
			code = append(code, region{start: v, end: nextStart(v), kind: Code, syms: []uint32{k}})
		}
	}
	slices.SortFunc(code, func(a, b region) int { return cmp.Compare(a.start, b.start) })
	// Merge overlapping code (aliases, nested entry points).
	var merged []region
	for _, r := range code {
		if n := len(merged); n > 0 && r.start < merged[n-1].end {
			m := &merged[n-1]
			m.end = max(m.end, r.end)
			m.syms = append(m.syms, r.syms...)
			continue
		}
		merged = append(merged, r)
	}
	slices.SortFunc(data, func(a, b region) int { return cmp.Compare(a.start, b.start) })
	all := append(merged, data...)
	slices.SortFunc(all, func(a, b region) int { return cmp.Compare(a.start, b.start) })

	// Compiled code averages about four bytes an instruction; sizing the
	// chain up front avoids copying it as it grows.
	s.Insts = make([]Inst, 0, size/3+8)
	var pos uint64
	for _, r := range all {
		if r.start < pos {
			if r.kind == Data {
				s.fail("data object at 0x%x overlaps code or data", r.start)
			} else {
				s.fail("code at 0x%x overlaps data", r.start)
			}
			continue
		}
		if r.start > pos {
			s.gap(pos, r.start)
		}
		if r.kind == Data {
			s.Insts = append(s.Insts, Inst{Off: uint32(r.start), Len: uint32(r.end - r.start), Kind: Data, Func: -1})
		} else {
			s.decodeCode(r)
		}
		pos = r.end
	}
	if pos < size {
		s.gap(pos, size)
	}
	s.splitPrefixTargets()
	s.makeFuncs(f, merged)
}

func inRegions(rs []region, v uint64) bool {
	for _, r := range rs {
		if v >= r.start && v < r.end {
			return true
		}
	}
	return false
}

// gap classifies bytes that belong to no symbol: alignment padding, or bytes
// hijack cannot account for.
func (s *Section) gap(start, end uint64) {
	b := s.Elf.Data[start:end]
	if !isPadding(b) {
		s.fail("bytes at 0x%x..0x%x belong to no function or object", start, end)
		s.Insts = append(s.Insts, Inst{Off: uint32(start), Len: uint32(end - start), Kind: Data, Func: -1})
		return
	}
	s.Insts = append(s.Insts, Inst{Off: uint32(start), Len: uint32(end - start), Kind: Pad, Func: -1})
}

// isPadding reports whether b consists of no-ops, int3 or zero bytes, as
// assemblers emit for alignment.
func isPadding(b []byte) bool {
	for len(b) > 0 {
		if b[0] == 0xcc || b[0] == 0x00 || b[0] == 0x90 {
			b = b[1:]
			continue
		}
		lay, err := x86len.Decode(b)
		if err != nil || !isNop(&lay) {
			return false
		}
		b = b[lay.Len:]
	}
	return true
}

// isNop reports whether an instruction is a no-op of those assemblers pad
// with: 90 (not xchg with r8: REX.B), 0f 1f /0, with any prefixes.
func isNop(lay *x86len.Layout) bool {
	return lay.Escape == x86len.NoEscape &&
		(lay.Map == x86len.Map0F && lay.Opcode == 0x1f || lay.Map == x86len.Map1Byte && lay.Opcode == 0x90 && lay.Rex&1 == 0)
}

// Nop reports whether instruction i is code that does nothing, of the
// kinds assemblers pad with inside functions (before a loop the compiler
// aligned).
func (s *Section) Nop(i int) bool {
	return s.Insts[i].Kind == Code && isNop(&s.Insts[i].Layout)
}

// decodeCode decodes a code region linearly.
func (s *Section) decodeCode(r region) {
	data := s.Elf.Data
	for off := r.start; off < r.end; {
		lay, err := x86len.Decode(data[off:r.end])
		if err != nil {
			s.fail("cannot decode instruction at 0x%x (% x): %v", off, data[off:min(off+8, r.end)], err)
			s.Insts = append(s.Insts, Inst{Off: uint32(off), Len: uint32(r.end - off), Kind: Data, Func: -1})
			return
		}
		s.Insts = append(s.Insts, Inst{Off: uint32(off), Len: uint32(lay.Len), Kind: Code, Func: -1, Layout: lay})
		off += uint64(lay.Len)
	}
}

// splitPrefixTargets splits instructions that a branch enters after their
// legacy prefixes into a Prefix element and a Glued instruction.
func (s *Section) splitPrefixTargets() {
	data := s.Elf.Data
	split := make(map[uint64]bool)
	for i := range s.Insts {
		in := &s.Insts[i]
		l := &in.Layout
		if in.Kind != Code || l.RelSize == 0 || l.RelSize == 2 {
			continue
		}
		disp := int64(int8(data[int(in.Off)+int(l.RelOff)]))
		if l.RelSize == 4 {
			disp = int64(int32(binary.LittleEndian.Uint32(data[int(in.Off)+int(l.RelOff):])))
		}
		t := int64(in.End()) + disp
		if t <= 0 || t >= int64(len(data)) {
			continue
		}
		ti := s.Find(uint64(t))
		tgt := &s.Insts[ti]
		if tgt.Kind != Code || int64(tgt.Off) == t || t-int64(tgt.Off) > int64(tgt.Layout.Prefixes) {
			continue
		}
		split[uint64(t)] = true
	}
	if len(split) == 0 {
		return
	}
	out := make([]Inst, 0, len(s.Insts)+len(split))
	for _, in := range s.Insts {
		var cut uint64
		for k := uint64(in.Off) + 1; in.Kind == Code && k < uint64(in.End()); k++ {
			if split[k] {
				cut = k
			}
		}
		if cut == 0 {
			out = append(out, in)
			continue
		}
		lay, err := x86len.Decode(data[cut:in.End()])
		if err != nil || uint64(lay.Len) != uint64(in.End())-cut {
			s.fail("branch into the prefixes of the instruction at 0x%x", in.Off)
			out = append(out, in)
			continue
		}
		n := int(cut - uint64(in.Off))
		pre := Inst{Off: in.Off, Len: uint32(n), Kind: Code, Func: -1, Flags: Prefix,
			Layout: x86len.Layout{Len: int8(n), Prefixes: int8(n), OpcodeOff: int8(n), ModRMOff: -1, SIBOff: -1, SuffixOff: -1}}
		out = append(out, pre, Inst{Off: uint32(cut), Len: uint32(lay.Len), Kind: Code, Func: -1, Flags: Glued, Layout: lay})
	}
	s.Insts = out
}

// makeFuncs creates the functions of the section from the merged code
// regions.
func (s *Section) makeFuncs(f *elfobj.File, regions []region) {
	// One Func per distinct start; aliases share it (the global name wins,
	// then the first one).
	type entry struct {
		sym        uint32
		start, end uint64
	}
	var es []entry
	for _, r := range regions {
		for _, k := range r.syms {
			sym := &f.Symbols[k]
			end := r.end
			if sym.Size != 0 && sym.Size < r.end-sym.Value {
				end = sym.Value + sym.Size
			}
			es = append(es, entry{k, sym.Value, end})
		}
	}
	slices.SortStableFunc(es, func(a, b entry) int { return cmp.Compare(a.start, b.start) })
	for i := 0; i < len(es); i++ {
		e := es[i]
		for i+1 < len(es) && es[i+1].start == e.start {
			i++
			n := es[i]
			if f.Symbols[e.sym].Bind() == elf.STB_LOCAL && f.Symbols[n.sym].Bind() != elf.STB_LOCAL {
				e.sym = n.sym
			}
			e.end = max(e.end, n.end)
		}
		start := s.Find(e.start)
		if start < 0 || start >= len(s.Insts) || uint64(s.Insts[start].Off) != e.start {
			s.fail("function %s starts at 0x%x inside an instruction", f.Symbols[e.sym].Name, e.start)
			continue
		}
		end := s.Find(e.end)
		if end < len(s.Insts) && uint64(s.Insts[end].Off) != e.end {
			end++
		}
		fn := &Func{Name: f.Symbols[e.sym].Name, Sym: e.sym, Section: s, Start: start, End: end}
		idx := int32(len(s.Funcs))
		s.Funcs = append(s.Funcs, fn)
		for k := start; k < end; k++ {
			if s.Insts[k].Func < 0 && s.Insts[k].Kind == Code {
				s.Insts[k].Func = idx
			}
		}
	}
}

// attachRelocs attaches the relocations of RELA section ri (which applies
// to s) to the fields they patch.
func (s *Section) attachRelocs(f *elfobj.File, ri int) {
	rs := f.Sections[ri]
	for k, r := range rs.Relocs {
		i := s.Find(r.Off)
		if i < 0 || i >= len(s.Insts) {
			s.fail("relocation %s at 0x%x lies outside the section", r.Type, r.Off)
			return
		}
		in := &s.Insts[i]
		w := elfobj.RelocSize(r.Type)
		fo := int(r.Off - uint64(in.Off))
		if in.Kind == Code && !isField(&in.Layout, fo, w) {
			s.fail("relocation %s at 0x%x is not on a field of the instruction at 0x%x", r.Type, r.Off, in.Off)
			return
		}
		if in.Kind == Pad {
			s.fail("relocation %s at 0x%x lies in padding", r.Type, r.Off)
			return
		}
		in.Relocs = append(in.Relocs, FieldReloc{Index: k, Sec: ri, Off: fo, Size: w})
	}
}

// glueTLSCalls marks the call that follows a general- or local-dynamic TLS
// address load (an instruction with an R_X86_64_TLSGD or TLSLD relocation:
// "[data16] lea x@tlsgd(%rip),%rdi", then "call __tls_get_addr@PLT" or
// "call *__tls_get_addr@GOTPCREL(%rip)") Glued: the linker relaxes the
// pair as one sequence of fixed bytes (GD to IE or LE, LD to LE) and fails
// ("TLS transition ... failed") or miscompiles when anything lies between
// the two, so no code may be inserted before the call or after the load.
func (s *Section) glueTLSCalls(f *elfobj.File) {
	for i := 0; i+1 < len(s.Insts); i++ {
		in := &s.Insts[i]
		if in.Kind != Code || s.Insts[i+1].Kind != Code {
			continue
		}
		for _, fr := range in.Relocs {
			switch f.Sections[fr.Sec].Relocs[fr.Index].Type {
			case elf.R_X86_64_TLSGD, elf.R_X86_64_TLSLD:
				s.Insts[i+1].Flags |= Glued
			}
		}
	}
}

// isField reports whether bytes [off, off+w) are exactly a displacement,
// immediate or branch field of the instruction. A zero-width relocation
// (R_X86_64_NONE, TLSDESC_CALL) marks the instruction itself.
func isField(l *x86len.Layout, off, w int) bool {
	switch {
	case w == 0:
		return off == 0
	case l.DispSize > 0 && off == int(l.DispOff) && w == int(l.DispSize):
		return true
	case l.ImmSize > 0 && off == int(l.ImmOff) && w <= int(l.ImmSize):
		// enter iw,ib is one 3-byte immediate region of which a relocation
		// may patch the first two bytes.
		return true
	case l.RelSize > 0 && off == int(l.RelOff) && w == int(l.RelSize):
		return true
	}
	return false
}

// hasReloc reports whether a relocation patches the field at off.
func (in *Inst) hasReloc(off int) bool {
	for _, r := range in.Relocs {
		if r.Off == off {
			return true
		}
	}
	return false
}

// link turns the PC-relative fields the assembler resolved into links.
func (s *Section) link() {
	data := s.Elf.Data
	for i := range s.Insts {
		in := &s.Insts[i]
		if in.Kind != Code {
			continue
		}
		l := &in.Layout
		var kind LinkKind
		var foff, fsize int
		switch {
		case l.RelSize > 0:
			kind, foff, fsize = LinkBranch, int(l.RelOff), int(l.RelSize)
		case l.RIPRelative:
			kind, foff, fsize = LinkRIP, int(l.DispOff), int(l.DispSize)
		default:
			continue
		}
		if in.hasReloc(foff) {
			continue
		}
		field := data[int(in.Off)+foff:]
		var disp int64
		switch fsize {
		case 1:
			disp = int64(int8(field[0]))
		case 2:
			disp = int64(int16(binary.LittleEndian.Uint16(field)))
		case 4:
			disp = int64(int32(binary.LittleEndian.Uint32(field)))
		default:
			s.fail("instruction at 0x%x has a %d-byte PC-relative field", in.Off, fsize)
			return
		}
		if fsize == 2 {
			s.fail("instruction at 0x%x uses a 16-bit branch displacement", in.Off)
			return
		}
		t := int64(in.End()) + disp
		if t < 0 || t > int64(len(data)) {
			s.fail("instruction at 0x%x refers to 0x%x outside its section", in.Off, t)
			return
		}
		ti := s.Find(uint64(t))
		lk := &Link{Kind: kind, Target: ti}
		if ti < len(s.Insts) {
			tgt := &s.Insts[ti]
			lk.Delta = t - int64(tgt.Off)
			switch {
			case kind == LinkBranch && (tgt.Kind == Data || lk.Delta != 0):
				// A branch to the end of a function (the start of the
				// padding after it) is fine: compilers emit them after
				// calls that do not return.
				s.fail("branch at 0x%x goes to 0x%x, which is not the start of an instruction", in.Off, t)
				return
			case kind == LinkRIP && tgt.Kind == Code:
				// The address of code: fine for a function entry. Reading
				// code bytes, or taking the address of a label inside a
				// function, is not: label differences (computed goto
				// tables) are folded into constants hijack cannot see.
				if lk.Delta != 0 || !s.isFuncStart(ti) || semantics(data[in.Off:in.End()], l).Op != x86asm.LEA {
					s.fail("instruction at 0x%x takes the address of code at 0x%x inside a function (computed goto or code read as data)", in.Off, t)
					return
				}
			case kind == LinkRIP && tgt.Kind == Pad:
				s.fail("instruction at 0x%x refers to padding at 0x%x", in.Off, t)
				return
			}
		}
		in.Link = lk
	}
}

func (s *Section) isFuncStart(i int) bool {
	for _, fn := range s.Funcs {
		if fn.Start == i {
			return true
		}
	}
	return false
}

// FuncAt returns the function instruction i belongs to, or nil.
func (s *Section) FuncAt(i int) *Func {
	if i < 0 || i >= len(s.Insts) || s.Insts[i].Func < 0 {
		return nil
	}
	return s.Funcs[s.Insts[i].Func]
}

// Where describes a location for messages: ".text+0x4a (func+0x12)".
func (s *Section) Where(off uint64) string {
	w := fmt.Sprintf("%s+0x%x", s.Elf.Name, off)
	if fn := s.FuncAt(s.Find(off)); fn != nil {
		w += fmt.Sprintf(" (%s+0x%x)", fn.Name, off-uint64(s.Insts[fn.Start].Off))
	}
	return w
}

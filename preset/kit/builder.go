package kit

import (
	"debug/elf"
	"fmt"
	"strconv"
	"strings"

	"github.com/twitchyliquid64/golang-asm/obj"

	"hijack/cfg/effect"
	"hijack/ibr"
	"hijack/snippet"
)

// A Ref is what a relocated field of inserted code refers to. The zero
// Ref refers to nothing; build one with Named, Indexed or Link.
type Ref struct {
	kind   refKind
	name   string
	index  uint32
	target int
	delta  int64
}

type refKind uint8

const (
	refNone refKind = iota
	refNamed
	refIndexed
	refLink
)

// Named refers to the symbol called name: one the object defines (a local
// symbol a preset added with Object.AddLocal), or an undefined one (a
// runtime entry point), which the relocation adds as a global symbol when
// the object has none of that name.
func Named(name string) Ref { return Ref{kind: refNamed, name: name} }

// Indexed refers to the object's symbol number k, as relocations number
// symbols: typically what the relocation of an instrumented instruction
// names. Local symbols added later renumber the symbols after them: add
// them before any code refers to symbols by index.
func Indexed(k uint32) Ref { return Ref{kind: refIndexed, index: k} }

// Link refers to the byte delta bytes after the start of instruction
// target of the section the code goes into (ibr.Link's Target and Delta):
// a RIP-relative operand the instrumented instruction has without a
// relocation. emit resolves it after layout; a target with delta 0 is the
// start of the code inserted before that instruction, as for branches.
func Link(target int, delta int64) Ref { return Ref{kind: refLink, target: target, delta: delta} }

// String describes the reference, for messages.
func (r Ref) String() string {
	switch r.kind {
	case refNamed:
		return r.name
	case refIndexed:
		return "symbol #" + strconv.FormatUint(uint64(r.index), 10)
	case refLink:
		return fmt.Sprintf("instruction #%d%+d", r.target, r.delta)
	}
	return "no reference"
}

// Builder assembles inserted code: a snippet.Builder (all its instruction
// methods are Builder's) whose operands may also refer to Refs, and whose
// Assemble returns an *ibr.Snippet ready for ibr.Section.InsertBefore or
// InsertAfter.
//
// References that are not names (Indexed, Link) travel through the
// assembler as placeholder symbols that only this Builder hands out and
// looks up again: Assemble turns their relocations into SymIndex
// relocations and Links, and no name is ever parsed. Like a
// snippet.Builder, a Builder is reused from snippet to snippet by one
// goroutine.
type Builder struct {
	*snippet.Builder
	uses   map[string]use // placeholder symbol -> what it stands for
	fields []field        // relocated fields of raw bytes
	n      int            // placeholders and internal labels handed out
	err    error
	labels map[string]int // of the last Assemble, internal ones too (Labels filters); the snippet.Builder's
}

// use is one operand's reference: off is the offset the operand adds to
// it, which a link needs to find the end of its instruction.
type use struct {
	ref Ref
	off int64
}

// field is a relocated field of raw bytes, at label + at.
type field struct {
	label  string
	at     int
	typ    elf.R_X86_64
	ref    Ref
	addend int64
}

// internal starts the names of placeholders and of the labels a Builder
// makes itself: no ELF symbol name can contain a NUL byte, and Labels
// leaves them out.
const internal = "\x00"

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{Builder: snippet.New(), uses: make(map[string]use)}
}

func (b *Builder) fail(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf("kit: "+format, args...)
	}
}

// sym returns the symbol name operands use for r: the name itself, or a
// placeholder standing for r (with the operand's offset off).
func (b *Builder) sym(r Ref, off int64) string {
	switch r.kind {
	case refNamed:
		if r.name == "" || strings.HasPrefix(r.name, internal) {
			b.fail("bad symbol name %q", r.name)
		}
		return r.name
	case refIndexed:
		if r.index == 0 {
			b.fail("reference to symbol 0 (the null symbol)")
		}
	case refLink:
	default:
		b.fail("operand without reference")
	}
	b.n++
	name := internal + "ref" + strconv.Itoa(b.n)
	b.uses[name] = use{r, off}
	return name
}

// use returns what the placeholder symbol sym stands for; false for a
// symbol's own name (most relocations: not looked up).
func (b *Builder) use(sym string) (use, bool) {
	if !strings.HasPrefix(sym, internal) {
		return use{}, false
	}
	u, ok := b.uses[sym]
	return u, ok
}

// label returns a label name unique in the snippet, for the code kit
// emits itself.
func (b *Builder) label(what string) string {
	b.n++
	return internal + what + strconv.Itoa(b.n)
}

// RIP returns the RIP-relative memory operand r+off(%rip): an
// R_X86_64_PC32 relocation against a symbol, or a link to a place in the
// section. LeaQ takes it to compute the address.
func (b *Builder) RIP(r Ref, off int64) snippet.Operand {
	return snippet.RIP(b.sym(r, off), off)
}

// Abs returns the memory operand whose displacement is r+off, relocated
// with typ: R_X86_64_32S (an absolute address; R_X86_64_32 gives it too:
// a displacement is sign-extended), R_X86_64_TPOFF32 (a thread-local
// variable's offset from the thread pointer: the operand is %fs:-based)
// or R_X86_64_DTPOFF32 (its offset in its module's TLS block). Add
// registers with Base and Index. A link has no absolute address.
func (b *Builder) Abs(r Ref, typ elf.R_X86_64, off int64) snippet.Operand {
	if r.kind == refLink {
		b.fail("%v has no absolute address", r)
	}
	name := b.sym(r, off)
	switch typ {
	case elf.R_X86_64_32S, elf.R_X86_64_32:
		return snippet.SymAbs(name, off)
	case elf.R_X86_64_TPOFF32:
		return snippet.TPOFF(name, off)
	case elf.R_X86_64_DTPOFF32:
		return snippet.DTPOFF(name, off)
	}
	b.fail("displacement relocated with %v", typ)
	return snippet.SymAbs(name, off)
}

// Field appends raw machine code whose bytes at..at+3 (at..at+7 for
// R_X86_64_64) are a field relocated with typ against r and addend: what
// the snippet package cannot assemble itself, such as the RIP-relative
// nopl some runtimes read their call site's record from.
func (b *Builder) Field(code []byte, at int, typ elf.R_X86_64, r Ref, addend int64) {
	size := 4
	if typ == elf.R_X86_64_64 {
		size = 8
	}
	if at < 0 || at+size > len(code) {
		b.fail("relocated field at %d outside %d bytes of code", at, len(code))
		return
	}
	switch {
	case r.kind == refIndexed && r.index != 0:
	case r.kind == refNamed && r.name != "" && !strings.HasPrefix(r.name, internal):
	default:
		b.fail("raw code cannot refer to %v", r)
		return
	}
	l := b.label("field")
	b.Builder.Label(l)
	b.Bytes(code...)
	b.fields = append(b.fields, field{l, at, typ, r, addend})
}

// Save steps rsp over the red zone and pushes regs, in order; it returns
// how far rsp moved (RedZone plus 8 per register), which rsp-based
// addresses of the interrupted code must add while it is moved. With no
// registers it only steps over the red zone. Restore undoes it.
func (b *Builder) Save(regs ...effect.Reg) int32 {
	b.LeaQ(snippet.Mem(snippet.RSP, -RedZone), snippet.RSP)
	for _, r := range regs {
		b.PushQ(Reg(r))
	}
	return SaveSize(len(regs))
}

// SaveSize returns how far Save of n registers moves rsp down: the red
// zone and 8 bytes a register.
func SaveSize(n int) int32 { return RedZone + 8*int32(n) }

// Restore pops what Save(regs...) pushed and steps back over the red zone.
func (b *Builder) Restore(regs ...effect.Reg) {
	for i := len(regs) - 1; i >= 0; i-- {
		b.PopQ(Reg(regs[i]))
	}
	b.LeaQ(snippet.Mem(snippet.RSP, RedZone), snippet.RSP)
}

// CallGOT calls sym through the GOT: `call *sym@GOTPCREL(%rip)`
// (R_X86_64_GOTPCRELX, 6 bytes). Unlike a call through the PLT it never
// runs the lazy-binding resolver, which would run with the interrupted
// code's registers and clobbers some (r10, r11, the flags); the loader
// fills the GOT entry before the object's code runs, and a static link
// turns the call into a direct one. Step over the red zone first.
func (b *Builder) CallGOT(sym string) { b.Call(snippet.GOTPCRELX(sym)) }

// JmpGOT jumps to sym through the GOT (a tail call), as CallGOT calls.
func (b *Builder) JmpGOT(sym string) { b.Inst(obj.AJMP, snippet.GOTPCRELX(sym)) }

// Assemble encodes the code built since the last Assemble or Reset into a
// snippet, with a relocation for every reference to a symbol (SymIndex
// for Indexed ones, Sym for names) and a link for every reference to a
// place in the section, and resets the Builder. Relocations come in code
// order, then those of Field in the order of the calls. Code written
// between Cold and Hot goes into the snippet's Cold part, with its own
// relocations and links; jumps between the parts become links to the
// other part.
func (b *Builder) Assemble() (*ibr.Snippet, error) {
	defer b.reset()
	code, err := b.Builder.AssembleReusing() // (its Relocs and Labels until the next)
	if b.err != nil {
		return nil, b.err
	}
	if err != nil {
		return nil, err
	}
	split := code.Split
	var sn *ibr.Snippet
	if split < len(code.Bytes) {
		// (the parts in one allocation, as their relocations and links
		// below: a vptrace rewrite keeps a few per site until emit)
		parts := new([2]ibr.Snippet)
		sn = &parts[0]
		sn.Code, sn.Cold = code.Bytes[:split:split], &parts[1]
		sn.Cold.Code = code.Bytes[split:]
	} else {
		sn = &ibr.Snippet{Code: code.Bytes}
	}
	b.labels = code.Labels
	// side returns the part (0 hot, 1 cold) offset off of the code is
	// in; part the part itself and off from its start.
	side := func(off int) int {
		if off >= split {
			return 1
		}
		return 0
	}
	parts := [2]*ibr.Snippet{sn, sn.Cold}
	part := func(off int) (*ibr.Snippet, int) {
		k := side(off)
		return parts[k], off - k*split
	}
	// Each part's relocations and links, counted first: one allocation
	// each (a vptrace rewrite assembles a few snippets per site).
	var nrel, nlink [2]int
	for _, r := range code.Relocs {
		if u, ok := b.use(r.Sym); ok && u.ref.kind == refLink {
			nlink[side(r.Off)]++
		} else {
			nrel[side(r.Off)]++
		}
	}
	for _, f := range b.fields {
		nrel[side(code.Labels[f.label]+f.at)]++
	}
	for _, c := range code.Crossings {
		nlink[side(c.Off)]++
	}
	if n := nrel[0] + nrel[1]; n > 0 {
		rs := make([]ibr.SnippetReloc, 0, n)
		sn.Relocs = rs[:0:nrel[0]]
		if sn.Cold != nil {
			sn.Cold.Relocs = rs[nrel[0]:nrel[0]:n]
		}
	}
	if n := nlink[0] + nlink[1]; n > 0 {
		ls := make([]ibr.SnippetLink, 0, n)
		sn.Links = ls[:0:nlink[0]]
		if sn.Cold != nil {
			sn.Cold.Links = ls[nlink[0]:nlink[0]:n]
		}
	}
	for _, r := range code.Relocs {
		p, off := part(r.Off)
		u, ok := b.use(r.Sym)
		if !ok {
			p.Relocs = append(p.Relocs, ibr.SnippetReloc{Off: off, Type: r.Type, Sym: r.Sym, Addend: r.Addend})
			continue
		}
		switch u.ref.kind {
		case refIndexed:
			p.Relocs = append(p.Relocs, ibr.SnippetReloc{Off: off, Type: r.Type, SymIndex: u.ref.index, Addend: r.Addend})
		case refLink:
			if r.Type != elf.R_X86_64_PC32 {
				return nil, fmt.Errorf("kit: a link as %v", r.Type)
			}
			// The addend is the operand's offset minus the distance
			// from the field to the end of its instruction.
			p.Links = append(p.Links, ibr.SnippetLink{Off: off, End: off + int(u.off-r.Addend), Target: u.ref.target, Delta: u.ref.delta + u.off})
		}
	}
	for _, f := range b.fields {
		p, off := part(code.Labels[f.label] + f.at)
		r := ibr.SnippetReloc{Off: off, Type: f.typ, Addend: f.addend}
		if f.ref.kind == refIndexed {
			r.SymIndex = f.ref.index
		} else {
			r.Sym = f.ref.name
		}
		p.Relocs = append(p.Relocs, r)
	}
	// Jumps between the parts become links to the other part.
	for _, c := range code.Crossings {
		p, off := part(c.Off)
		l := ibr.SnippetLink{Off: off, End: off + c.End - c.Off, To: ibr.LinkCold, Delta: int64(c.Target - split)}
		if p == sn.Cold {
			l.To, l.Delta = ibr.LinkHot, int64(c.Target)
		}
		if sn.Cold == nil || l.Delta < 0 {
			return nil, fmt.Errorf("kit: a jump to the end of an empty cold part")
		}
		clear(p.Code[off : off+4]) // (emit fills it in; what the assembler put is for the parts together)
		p.Links = append(p.Links, l)
	}
	return sn, nil
}

// Labels returns the offsets of the labels (Label) of the snippet last
// assembled, nil if it had none. A label of the cold part counts from
// the hot part's start, as if the cold part followed it. (Made on demand:
// presets ask for few snippets' labels.)
func (b *Builder) Labels() map[string]int {
	var out map[string]int
	for name, off := range b.labels {
		if !strings.HasPrefix(name, internal) {
			if out == nil {
				out = make(map[string]int)
			}
			out[name] = off
		}
	}
	return out
}

// Reset discards the code built so far.
func (b *Builder) Reset() {
	b.Builder.Reset()
	b.reset()
	b.labels = nil
}

func (b *Builder) reset() {
	clear(b.uses)
	b.fields = b.fields[:0]
	b.n = 0
	b.err = nil
}

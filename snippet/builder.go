package snippet

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/twitchyliquid64/golang-asm/obj"
	"github.com/twitchyliquid64/golang-asm/obj/x86"
	"github.com/twitchyliquid64/golang-asm/objabi"

	"hijack/ibr/x86len"
)

// Reloc is a relocation inside an assembled snippet. Type is debug/elf's
// R_X86_64 (a uint32), so uint32(r.Type) is the ELF r_type.
type Reloc struct {
	Off    int          // byte offset of the relocated field within the snippet
	Type   elf.R_X86_64 // ELF relocation type (R_X86_64_PC32, ...)
	Sym    string       // symbol the relocation refers to
	Addend int64        // ELF (RELA) addend; for PC-relative types already biased by the field-to-instruction-end distance
}

// Size returns the width in bytes of the relocated field.
func (r Reloc) Size() int {
	if r.Type == elf.R_X86_64_64 {
		return 8
	}
	return 4
}

// Code is an assembled snippet: machine code that may be placed at any
// address (jumps inside it are relative), whose symbolic fields are zero
// and described by Relocs (sorted by Off).
type Code struct {
	Bytes  []byte
	Relocs []Reloc
	// Labels maps each label defined with Builder.Label to its offset in
	// Bytes. It is nil when the snippet defines no label.
	Labels map[string]int
	// Split is where the cold part (the code written after
	// Builder.Cold) starts in Bytes: len(Bytes) when there is none.
	Split int
	// Crossings are the jumps between the hot and the cold part, which
	// are always rel32: a caller that places the parts apart rewrites
	// their fields.
	Crossings []Crossing
}

// Crossing is a jump from one part of a snippet to the other: its rel32
// field at Off, the end of the jump (what the field counts from) and the
// offset of its target, all in Code.Bytes.
type Crossing struct {
	Off, End, Target int
}

// Builder collects instructions and assembles them with golang-asm.
//
// Operands are written in AT&T (gas) order, source first, destination last,
// everywhere, including CmpQ and friends, whose Go-assembly operand order
// is the reverse (Builder swaps them); Inst is the exception, it takes Go
// assembly operand order.
//
// Methods record errors instead of returning them; Assemble reports the
// first one. A Builder owns its golang-asm context and is not safe for
// concurrent use, but separate Builders may be used concurrently.
type Builder struct {
	ctxt  *obj.Link
	diags []string

	chunks [][]obj.Prog // Prog arena, reused across snippets
	nprog  int

	insts  []inst
	labels map[string]int // label -> index of the instruction it precedes (coldLabel: of cold)
	err    error
	// cold holds the instructions written after Cold (while inCold),
	// which Assemble lays out after insts.
	cold   []inst
	inCold bool

	// encodings holds the instructions encoded so far (encode), by the
	// key opKey or branchSym builds in key.
	encodings map[string]*encoded
	lsyms     map[string]*obj.LSym // lsym
	keys      []byte               // the keys of the snippet's instructions inst did not find
	// AssembleReusing's Relocs, Crossings and Labels
	relocBuf []Reloc
	crossBuf []Crossing
	labelBuf map[string]int
	key      []byte
	// scratch of Assemble and encode, reused
	enc  []*encoded
	at   []int
	long []bool
	sym  *obj.LSym
	fn   *obj.FuncInfo
}

// inst is one instruction as the caller wrote it: a chain of Progs
// (an optional segment-prefix BYTE, then the instruction itself).
type inst struct {
	first, last *obj.Prog
	p           *obj.Prog // the instruction proper; nil for raw bytes
	mem         Operand   // symbolic memory operand (kindMem with sym, or kindRIP)
	imm         Operand   // symbolic immediate
	branchSym   string    // call/jmp to a symbol
	label       string    // jump to a label
	dispPH      int32     // placeholder displacement for a symbolic kindMem
	nImm        int       // number of plain (non-symbolic) immediates
	imm0        int64     // the plain immediate, when nImm == 1
	// disp is the displacement of a plain memory operand (no symbol),
	// which opKey leaves out of the key but for its size class
	// (dispClass): Assemble patches it into the bytes (encoded.dispOff).
	disp      int64
	dispClass int8 // 0: no such operand or disp 0; 1: disp8; 4: disp32
	// enc is the instruction's bytes, found by its key when inst made
	// it; else the key is Builder.keys[keyOff:][:keyLen] (keyed), under
	// which encode keeps them.
	enc            *encoded
	keyOff, keyLen int32
	keyed          bool
}

// Placeholders put into symbolic fields golang-asm cannot relocate itself.
// Their bytes are pairwise distinct, so an occurrence cannot overlap itself.
const (
	dispPH1 = 0x7b3d5e19
	dispPH2 = 0x1f6e2d4c
	immPH32 = 0x6c2a4f17
	immPH64 = 0x6c2a4f175e3d1b09
)

var initTables sync.Once

// noPos matches the position golang-asm puts in its error messages;
// compiled on first use: most runs never see an error.
var noPos = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\d+ \(<unknown line number>\)\t`) })

// New returns an empty Builder with its own golang-asm context.
func New() *Builder {
	// golang-asm's x86 back end keeps its opcode tables in package variables
	// that instinit fills in on first use, unsynchronised. Fill them exactly
	// once; afterwards they are only read.
	initTables.Do(func() {
		x86.Linkamd64.Init(&obj.Link{Arch: &x86.Linkamd64, Headtype: objabi.Hlinux})
	})
	b := &Builder{sym: &obj.LSym{}, fn: &obj.FuncInfo{}}
	b.ctxt = &obj.Link{
		Arch:     &x86.Linkamd64,
		Headtype: objabi.Hlinux, // explicit: obj.Linknew would read $GOOS
		// IsAsm disables golang-asm's 32-byte jump alignment padding
		// (objabi.GOAMD64 is hard-wired to "alignedjumps"), which would
		// insert NOPs gas does not.
		IsAsm: true,
		DiagFunc: func(format string, args ...interface{}) {
			b.diags = append(b.diags, fmt.Sprintf(format, args...))
		},
	}
	return b
}

// Reset discards the instructions added so far. Assemble resets the Builder
// itself, so Reset is only needed to abandon a snippet.
func (b *Builder) Reset() {
	for i := range b.insts {
		b.insts[i] = inst{}
	}
	b.insts = b.insts[:0]
	for i := range b.cold {
		b.cold[i] = inst{}
	}
	b.cold = b.cold[:0]
	b.inCold = false
	b.keys = b.keys[:0]
	clear(b.labels)
	b.err = nil
	b.diags = b.diags[:0]
	b.ctxt.Errors = 0
	for i := 0; i*chunkSize < b.nprog; i++ {
		clear(b.chunks[i][:min(chunkSize, b.nprog-i*chunkSize)])
	}
	b.nprog = 0
}

// Err returns the first error recorded since the last Assemble or Reset.
func (b *Builder) Err() error { return b.err }

func (b *Builder) fail(format string, args ...interface{}) {
	if b.err == nil {
		b.err = fmt.Errorf("snippet: "+format, args...)
	}
}

const chunkSize = 32

func (b *Builder) newProg() *obj.Prog {
	c, i := b.nprog/chunkSize, b.nprog%chunkSize
	if c == len(b.chunks) {
		b.chunks = append(b.chunks, make([]obj.Prog, chunkSize))
	}
	b.nprog++
	p := &b.chunks[c][i]
	p.Ctxt = b.ctxt
	return p
}

func (b *Builder) push(in inst) {
	if b.inCold {
		b.cold = append(b.cold, in)
		return
	}
	b.insts = append(b.insts, in)
}

// coldLabel marks a label of the cold part in Builder.labels.
const coldLabel = 1 << 30

// Label defines name at the position of the next instruction (or the end of
// the snippet). Labels are local to the snippet; jump to them with Jmp and
// Jcc. Code.Labels reports their offsets.
func (b *Builder) Label(name string) {
	if b.labels == nil {
		b.labels = make(map[string]int)
	}
	if _, dup := b.labels[name]; dup {
		b.fail("label %q defined twice", name)
		return
	}
	if b.inCold {
		b.labels[name] = coldLabel | len(b.cold)
		return
	}
	b.labels[name] = len(b.insts)
}

// Cold makes the instructions and labels that follow, until Hot, part of
// the snippet's cold part: code that runs rarely, which Assemble lays out
// after all the others (Code.Split) for a caller to place out of line.
// Control must not fall from one part into the other: the hot part ends
// where the code it was inserted before starts, and the cold part ends
// with a jump. Jumps from one part to the other are rel32 (listed in
// Code.Crossings).
func (b *Builder) Cold() { b.inCold = true }

// Hot makes the instructions that follow part of the hot part again.
func (b *Builder) Hot() { b.inCold = false }

// IsCold reports whether the instructions that follow go into the cold
// part (between Cold and Hot).
func (b *Builder) IsCold() bool { return b.inCold }

// Bytes appends raw machine code. It must not contain relocated fields.
func (b *Builder) Bytes(code ...byte) {
	if len(code) == 0 {
		return
	}
	var in inst
	for _, c := range code {
		p := b.newProg()
		p.As = x86.ABYTE
		p.From = obj.Addr{Type: obj.TYPE_CONST, Offset: int64(c)}
		if in.first == nil {
			in.first = p
		} else {
			in.last.Link = p
		}
		in.last = p
	}
	b.push(in)
}

// Inst appends the instruction as with operands in Go assembly order: for
// two operands (from, to), which is AT&T order except for the CMP family
// (Go's `CMPQ AX, $1` is gas's `cmp $1, %rax`); for three or more, from,
// the middle operands, to (Go's `IMUL3Q $8, AX, BX`). A single operand goes
// where Go assembly puts it (To for branches and x86.Linkamd64.UnaryDst
// instructions, From otherwise). as is an obj.A* or x86.A* opcode.
func (b *Builder) Inst(as obj.As, args ...Arg) {
	var ops [4]Operand
	if len(args) > len(ops) {
		b.fail("%v: too many operands", as)
		return
	}
	for i, a := range args {
		var ok bool
		if ops[i], ok = b.arg(as, a); !ok {
			return
		}
	}
	switch n := len(args); n {
	case 0:
		b.inst(as, Operand{}, nil, Operand{})
	case 1:
		if x86.Linkamd64.UnaryDst[as] || isBranch(as) {
			b.inst(as, Operand{}, nil, ops[0])
		} else {
			b.inst(as, ops[0], nil, Operand{})
		}
	default:
		b.inst(as, ops[0], ops[1:n-1], ops[n-1])
	}
}

func isBranch(as obj.As) bool {
	switch as {
	case obj.ACALL, obj.AJMP, obj.ARET:
		return true
	}
	for _, j := range jccAs {
		if as == j {
			return true
		}
	}
	return false
}

// inst validates the operands and appends one instruction. from and to are
// absent when their kind is kindNone; rest are Go's RestArgs.
func (b *Builder) inst(as obj.As, from Operand, rest []Operand, to Operand) {
	in := inst{dispPH: dispPH1}
	var seg Seg
	nmem := 0
	check := func(o *Operand) bool {
		if err := o.validate(); err != nil {
			b.fail("%v: %v", as, err)
			return false
		}
		switch o.kind {
		case kindMem, kindRIP:
			nmem++
			seg = o.seg
			if o.sym != "" {
				in.mem = *o
			}
		case kindImm:
			if o.sym != "" {
				if in.imm.kind != kindNone {
					b.fail("%v: two symbolic immediates", as)
					return false
				}
				in.imm = *o
			} else {
				in.nImm++
				in.imm0 = o.off
				if int32(o.off) == dispPH1 {
					in.dispPH = dispPH2
				}
			}
		}
		return true
	}
	if from.kind != kindNone && !check(&from) {
		return
	}
	for i := range rest {
		if !check(&rest[i]) {
			return
		}
	}
	if to.kind != kindNone && !check(&to) {
		return
	}
	if nmem > 1 {
		b.fail("%v: more than one memory operand", as)
		return
	}
	if in.nImm == 1 {
		if err := immRange(as, in.imm0, to); err != nil {
			b.fail("%v", err)
			return
		}
	}
	if in.imm.rel == elf.R_X86_64_64 && (as != x86.AMOVQ || to.kind != kindReg || !to.reg.isGPR()) {
		b.fail("%v: a 64-bit symbolic immediate needs MovQ into a general-purpose register", as)
		return
	}
	// An instruction encoded before needs no Progs: its key, from the
	// operands, finds the bytes (Assemble). Else its Progs go to
	// golang-asm (encode), and the bytes are kept under the key.
	if key, ok := b.opKey(as, seg, &from, rest, &to, &in); ok {
		if b.lookup(&in, key) {
			b.push(in)
			return
		}
	}
	if seg != NoSeg {
		p := b.newProg()
		p.As = x86.ABYTE
		p.From = obj.Addr{Type: obj.TYPE_CONST, Offset: int64(seg.prefix())}
		in.first, in.last = p, p
	}
	p := b.newProg()
	p.As = as
	p.From = b.addr(&from, in.dispPH)
	if len(rest) > 0 {
		p.RestArgs = make([]obj.Addr, len(rest))
		for i := range rest {
			p.RestArgs[i] = b.addr(&rest[i], in.dispPH)
		}
	}
	p.To = b.addr(&to, in.dispPH)
	if in.first == nil {
		in.first = p
	} else {
		in.last.Link = p
	}
	in.last, in.p = p, p
	b.push(in)
}

// lookup finds the bytes of in by its key (in.enc) and reports whether it
// did; else it keeps the key for encode (keyed), in keys, not as a string
// of its own: an earlier instruction of the snippet may encode it.
func (b *Builder) lookup(in *inst, key []byte) bool {
	if e, hit := b.encodings[string(key)]; hit {
		in.enc = e
		return true
	}
	in.keyOff, in.keyLen, in.keyed = int32(len(b.keys)), int32(len(key)), true
	b.keys = append(b.keys, key...)
	return false
}

// opKey puts into b.key what decides the bytes of instruction as with
// those operands (checked by inst, which set in's symbolic operands and
// dispPH): everything but the symbols' offsets, which go into relocation
// addends, and but a plain memory operand's displacement, of which its
// size class (in.dispClass; encode finds where it is in the bytes, and
// Assemble patches it). It reports false if the key cannot say it all.
// Its keys start ff fe; branchSym's ff fd, raw bytes' ff ff.
func (b *Builder) opKey(as obj.As, seg Seg, from *Operand, rest []Operand, to *Operand, in *inst) ([]byte, bool) {
	key := append(b.key[:0], 0xff, 0xfe, byte(as), byte(as>>8), byte(seg), byte(len(rest)))
	key = binary.LittleEndian.AppendUint32(key, uint32(in.dispPH))
	ok := len(rest) < 4
	op := func(o *Operand) {
		key = append(key, byte(o.kind), byte(o.reg), byte(o.index), o.scale, byte(o.seg), byte(o.rel), byte(len(o.sym)))
		key = append(key, o.sym...)
		ok = ok && len(o.sym) < 256
		switch {
		case o.kind == kindImm && o.sym == "":
			key = binary.AppendVarint(key, o.off)
		case o.kind == kindMem && o.sym == "" && o.off != 0:
			in.disp, in.dispClass = o.off, 4
			if o.off == int64(int8(o.off)) {
				in.dispClass = 1
			}
			key = append(key, byte(in.dispClass))
		case o.kind == kindMem && o.sym == "":
			key = append(key, 0)
		}
	}
	op(from)
	for i := range rest {
		op(&rest[i])
	}
	op(to)
	b.key = key
	return key, ok
}

func (o Operand) validate() error {
	okGPR := func(r Reg) bool { return r == NoReg || r.isGPR() }
	switch o.kind {
	case kindReg:
		if o.reg == NoReg || o.reg > maxReg {
			return fmt.Errorf("bad register %v", o.reg)
		}
	case kindImm:
		if o.seg != NoSeg || o.reg != NoReg || o.index != NoReg {
			return fmt.Errorf("immediate %v with segment or registers", o)
		}
	case kindMem:
		if !okGPR(o.reg) || !okGPR(o.index) || o.index == RSP {
			return fmt.Errorf("bad base or index register in %v", o)
		}
		if o.index != NoReg && o.scale != 1 && o.scale != 2 && o.scale != 4 && o.scale != 8 {
			return fmt.Errorf("bad scale in %v", o)
		}
		if o.sym == "" && o.off != int64(int32(o.off)) {
			return fmt.Errorf("displacement out of range in %v", o)
		}
		if o.sym != "" && o.rel != elf.R_X86_64_32S && o.rel != elf.R_X86_64_TPOFF32 && o.rel != elf.R_X86_64_DTPOFF32 {
			return fmt.Errorf("bad relocation in %v", o)
		}
	case kindRIP:
		if o.reg != NoReg || o.index != NoReg {
			return fmt.Errorf("RIP-relative operand %v cannot have registers", o)
		}
		if o.sym == "" {
			return errors.New("RIP-relative operand without symbol")
		}
	default:
		return errors.New("invalid (zero) operand")
	}
	if o.seg > GS {
		return fmt.Errorf("bad segment in %v", o)
	}
	if o.seg != NoSeg && o.kind != kindMem && o.kind != kindRIP {
		return fmt.Errorf("segment override on non-memory operand %v", o)
	}
	return nil
}

// addr converts a validated operand to golang-asm's form. Symbolic fields
// golang-asm cannot express get placeholders that Assemble finds and zeroes.
func (b *Builder) addr(o *Operand, dispPH int32) obj.Addr {
	switch o.kind {
	case kindNone:
		return obj.Addr{}
	case kindReg:
		return obj.Addr{Type: obj.TYPE_REG, Reg: o.reg.AsmReg()}
	case kindImm:
		a := obj.Addr{Type: obj.TYPE_CONST, Offset: o.off}
		switch {
		case o.sym == "":
		case o.rel == elf.R_X86_64_64:
			a.Offset = immPH64
		default:
			a.Offset = immPH32
		}
		return a
	case kindMem:
		a := obj.Addr{Type: obj.TYPE_MEM, Reg: o.reg.AsmReg(), Index: o.index.AsmReg(), Offset: o.off}
		if o.index != NoReg {
			a.Scale = int16(o.scale)
		}
		if o.sym != "" {
			a.Offset = int64(dispPH)
		}
		return a
	case kindRIP:
		// The offset stays out of golang-asm (its field is zero either way):
		// Assemble computes the ELF addend from o.off.
		a := obj.Addr{Type: obj.TYPE_MEM, Name: obj.NAME_EXTERN, Sym: b.lsym(o.sym)}
		if o.rel == elf.R_X86_64_GOTPCREL || o.rel == elf.R_X86_64_GOTPCRELX {
			a.Name = obj.NAME_GOTREF
		}
		return a
	}
	panic("unreachable")
}

// Assemble encodes the instructions added since the last Assemble or Reset,
// and resets the Builder for the next snippet.
//
// golang-asm encodes each instruction other than a jump to a label, alone
// (encode: the Builder keeps what it encoded, by instruction, so that the
// instructions a preset repeats at every site are encoded once); Assemble
// lays them out and sizes the jumps as golang-asm's span6 does for a whole
// function: every jump short (rel8) at first, a jump that does not reach
// its label long from then on, until nothing changes.
func (b *Builder) Assemble() (code Code, err error) { return b.assemble(false) }

// AssembleReusing is Assemble, but the Relocs, Crossings and Labels of
// the Code it returns are the Builder's own, valid until its next
// Assemble, AssembleReusing or Reset: for a caller that turns them into
// something else right away (preset/kit), which saves making them for
// every snippet. Bytes are the caller's, as with Assemble.
func (b *Builder) AssembleReusing() (code Code, err error) { return b.assemble(true) }

func (b *Builder) assemble(reuse bool) (code Code, err error) {
	defer b.Reset()
	if b.err != nil {
		return Code{}, b.err
	}
	// The cold part after the hot one. label returns the index in both
	// of the instruction a label precedes, and whether it is in the cold
	// part (a hot label at the hot part's end has the index of the cold
	// part's start).
	nHot := len(b.insts)
	b.insts = append(b.insts, b.cold...)
	label := func(name string) (int, bool) {
		i := b.labels[name]
		if i&coldLabel != 0 {
			return nHot + i&^coldLabel, true
		}
		return i, false
	}
	labelAt := func(name string) int { i, _ := label(name); return i }
	// crosses reports whether jump i goes from one part to the other.
	crosses := func(i int) bool {
		_, cold := label(b.insts[i].label)
		return (i >= nHot) != cold
	}
	n := len(b.insts)
	b.enc = slices.Grow(b.enc[:0], n)[:n]
	enc := b.enc
	clear(enc)
	for i := range b.insts {
		in := &b.insts[i]
		if in.label != "" {
			if _, ok := b.labels[in.label]; !ok {
				return Code{}, fmt.Errorf("snippet: jump to undefined label %q", in.label)
			}
			continue
		}
		if in.enc != nil {
			enc[i] = in.enc
			continue
		}
		if enc[i], err = b.encode(in); err != nil {
			return Code{}, err
		}
	}
	// at[i] is where instruction i starts; at[n] is the end (a label
	// there binds to it).
	b.at = slices.Grow(b.at[:0], n+1)[:n+1]
	b.long = slices.Grow(b.long[:0], n)[:n]
	at, long := b.at, b.long
	clear(long)
	for i := range b.insts {
		if enc[i] == nil && crosses(i) {
			long[i] = true
		}
	}
	size := func(i int) int {
		switch {
		case enc[i] != nil:
			return len(enc[i].bytes)
		case !long[i]:
			return 2
		case b.insts[i].p.As == obj.AJMP:
			return 5 // e9 rel32
		}
		return 6 // 0f 8x rel32
	}
	for changed := true; changed; {
		pos := 0
		for i := 0; i < n; i++ {
			at[i] = pos
			pos += size(i)
		}
		at[n] = pos
		changed = false
		for i := range b.insts {
			if enc[i] != nil || long[i] {
				continue
			}
			if d := at[labelAt(b.insts[i].label)] - (at[i] + 2); d < -128 || d > 127 {
				long[i], changed = true, true
			}
		}
	}
	code.Bytes = make([]byte, 0, at[n])
	nrel := 0
	for _, e := range enc {
		if e != nil {
			nrel += len(e.relocs)
		}
	}
	switch {
	case reuse:
		b.relocBuf = slices.Grow(b.relocBuf[:0], nrel)
		code.Relocs = b.relocBuf
	case nrel > 0:
		code.Relocs = make([]Reloc, 0, nrel)
	}
	if reuse && nHot < n {
		code.Crossings = b.crossBuf[:0]
	}
	for i := range b.insts {
		in := &b.insts[i]
		e := enc[i]
		if e == nil {
			code.Bytes = appendJump(code.Bytes, in.p.As, long[i], at[labelAt(in.label)]-at[i+1])
			if crosses(i) {
				code.Crossings = append(code.Crossings, Crossing{Off: at[i+1] - 4, End: at[i+1], Target: at[labelAt(in.label)]})
			}
			continue
		}
		code.Bytes = append(code.Bytes, e.bytes...)
		if e.templ {
			e.patchDisp(code.Bytes[at[i]:], in.disp, in.dispClass)
		}
		for k, r := range e.relocs {
			r.Off += at[i]
			switch e.from[k] {
			case offMem:
				r.Addend += in.mem.off
			case offImm:
				r.Addend += in.imm.off
			}
			code.Relocs = append(code.Relocs, r)
		}
	}
	if reuse {
		b.relocBuf = code.Relocs[:0]
		if len(code.Relocs) == 0 {
			code.Relocs = nil // (as Assemble's)
		}
	}
	if reuse && code.Crossings != nil {
		b.crossBuf = code.Crossings[:0]
	}
	if len(b.labels) > 0 {
		if reuse {
			if b.labelBuf == nil {
				b.labelBuf = make(map[string]int)
			}
			clear(b.labelBuf)
			code.Labels = b.labelBuf
		} else {
			code.Labels = make(map[string]int, len(b.labels))
		}
		for name := range b.labels {
			code.Labels[name] = at[labelAt(name)]
		}
	}
	code.Split = at[nHot]
	return code, nil
}

// appendJump appends a jump (as: obj.AJMP or a conditional jump) by rel,
// the distance from the end of the jump to its target, in the form long
// says.
func appendJump(code []byte, as obj.As, long bool, rel int) []byte {
	cc := -1
	for c, j := range jccAs {
		if j == as {
			cc = c
		}
	}
	switch {
	case !long && cc < 0:
		return append(code, 0xeb, byte(int8(rel)))
	case !long:
		return append(code, 0x70+byte(cc), byte(int8(rel)))
	case cc < 0:
		return binary.LittleEndian.AppendUint32(append(code, 0xe9), uint32(int32(rel)))
	}
	return binary.LittleEndian.AppendUint32(append(code, 0x0f, 0x80+byte(cc)), uint32(int32(rel)))
}

// encoded is one instruction as golang-asm encodes it, with its
// relocations (Off from the instruction's start; the addends without the
// operands' symbolic offsets, which from says whose they are).
type encoded struct {
	bytes  []byte
	relocs []Reloc
	from   []uint8
	// dispOff is where the displacement of a plain memory operand is in
	// bytes, for an instruction of dispClass 1 or 4 (kept for every
	// displacement of the class; templ says it is).
	dispOff int8
	templ   bool
}

// Which symbolic offset a relocation's addend adds: none (a call's), the
// memory operand's or the immediate's.
const (
	offNone = iota
	offMem
	offImm
)

// encode returns the bytes of instruction in (not a jump to a label),
// from the Builder's cache or from golang-asm.
func (b *Builder) encode(in *inst) (*encoded, error) {
	if in.p == nil { // raw bytes, kept by their bytes
		key := append(b.key[:0], 0xff, 0xff)
		for p := in.first; p != nil; p = p.Link {
			key = append(key, byte(p.From.Offset))
			if p == in.last {
				break
			}
		}
		b.key = key
		if e, hit := b.encodings[string(key)]; hit {
			return e, nil
		}
		e := &encoded{bytes: slices.Clone(key[2:])}
		b.keep(string(key), e)
		return e, nil
	}
	// An instruction without a key (a symbol name too long for it) is
	// encoded every time.
	ok := in.keyed
	key := b.keys[in.keyOff:][:in.keyLen]
	if ok {
		// (looked up when it was added; an earlier instruction of the
		// snippet may have been encoded since)
		if e, hit := b.encodings[string(key)]; hit {
			return e, nil
		}
	}
	in.last.Link = nil
	// (one symbol for every instruction, zeroed: span6 leaves nothing of
	// one run in it that the next needs, and e takes s.P)
	*b.fn = obj.FuncInfo{Text: in.first}
	*b.sym = obj.LSym{Func: b.fn}
	s := b.sym
	if err := b.span(s); err != nil {
		return nil, err
	}
	e := &encoded{bytes: s.P}
	if e.bytes == nil {
		e.bytes = []byte{}
	}
	var err error
	if e.relocs, e.from, err = b.relocs(in, s); err != nil {
		return nil, err
	}
	if ok && in.dispClass != 0 {
		// Kept for every displacement of its class: where the bytes
		// hold this one, they take the others (Assemble patches them).
		// Where not (a compressed EVEX disp8, say), kept for none.
		ok = e.findDisp(in)
	}
	if ok {
		b.keep(string(key), e)
	}
	return e, nil
}

// findDisp locates in e's bytes the displacement in.disp of its plain
// memory operand, of in.dispClass bytes, and reports whether it found it
// there (then e.dispOff is where).
func (e *encoded) findDisp(in *inst) bool {
	lay, err := x86len.Decode(e.bytes)
	if err != nil || int(lay.Len) != len(e.bytes) || lay.DispSize != in.dispClass || lay.RIPRelative {
		return false
	}
	off := int(lay.DispOff)
	switch in.dispClass {
	case 1:
		if int64(int8(e.bytes[off])) != in.disp {
			return false
		}
	case 4:
		if int64(int32(binary.LittleEndian.Uint32(e.bytes[off:]))) != in.disp {
			return false
		}
	}
	e.dispOff, e.templ = int8(off), true
	return true
}

// patchDisp writes disp into code, the bytes of e as Assemble appended
// them.
func (e *encoded) patchDisp(code []byte, disp int64, class int8) {
	switch class {
	case 1:
		code[e.dispOff] = byte(int8(disp))
	case 4:
		binary.LittleEndian.PutUint32(code[e.dispOff:], uint32(int32(disp)))
	}
}

// lsym returns the golang-asm symbol named name, one per name and
// Builder: a snippet names the same few symbols at every site, and an
// LSym is large. golang-asm only reads its name (relocs maps the
// relocations it makes back to ELF ones by name).
func (b *Builder) lsym(name string) *obj.LSym {
	if s, ok := b.lsyms[name]; ok {
		return s
	}
	if b.lsyms == nil {
		b.lsyms = make(map[string]*obj.LSym)
	}
	s := &obj.LSym{Name: name}
	b.lsyms[name] = s
	return s
}

func (b *Builder) keep(key string, e *encoded) {
	if b.encodings == nil {
		b.encodings = make(map[string]*encoded)
	}
	b.encodings[key] = e
}

// span runs golang-asm's x86 assembler, turning its diagnostics and panics
// into an error.
func (b *Builder) span(s *obj.LSym) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("snippet: golang-asm panicked: %v", r)
		}
	}()
	b.ctxt.Arch.Assemble(b.ctxt, s, b.newProg)
	if len(b.diags) > 0 || b.ctxt.Errors > 0 {
		msg := "assembler error"
		if len(b.diags) > 0 {
			msg = b.diags[0]
		}
		// golang-asm prints Progs as "00000 (<unknown line number>)\tMOVQ ...".
		msg = noPos().ReplaceAllString(msg, "")
		return fmt.Errorf("snippet: golang-asm: %s", msg)
	}
	return nil
}

// relocs translates golang-asm's relocations of instruction in, assembled
// alone into s (Go kinds: R_PCREL, R_GOTPCREL, R_CALL), and its placeholder
// fields into ELF relocations with the addends less the operands' symbolic
// offsets, and says for each whose offset it takes (offMem, offImm,
// offNone).
func (b *Builder) relocs(in *inst, s *obj.LSym) ([]Reloc, []uint8, error) {
	var out []Reloc
	var from []uint8
	p := in.p
	start, end := int(p.Pc), int(p.Pc)+int(p.Isize)
	var mine []obj.Reloc
	for _, r := range s.R {
		if int(r.Off) < start || int(r.Off) >= end {
			return nil, nil, fmt.Errorf("snippet: golang-asm relocation at %#x outside the instruction", r.Off)
		}
		if r.Siz != 0 { // skip markers such as R_CALLIND
			mine = append(mine, r)
		}
	}
	used := 0
	if in.branchSym != "" {
		if len(mine) != 1 || mine[0].Type != objabi.R_CALL {
			return nil, nil, fmt.Errorf("snippet: %s: expected one call relocation from golang-asm, got %d", p.InstructionString(), len(mine))
		}
		f := int(mine[0].Off)
		out = append(out, Reloc{Off: f, Type: elf.R_X86_64_PLT32, Sym: in.branchSym, Addend: int64(f - end)})
		from = append(from, offNone)
		used++
	}
	switch m := in.mem; m.kind {
	case kindRIP:
		if len(mine) != 1 || (mine[0].Type != objabi.R_PCREL && mine[0].Type != objabi.R_GOTPCREL) {
			return nil, nil, fmt.Errorf("snippet: %s: expected one PC-relative relocation from golang-asm, got %d", p.InstructionString(), len(mine))
		}
		f := int(mine[0].Off)
		typ := m.rel
		if typ == elf.R_X86_64_GOTPCRELX && rex(s.P[start:f]) != 0 {
			typ = elf.R_X86_64_REX_GOTPCRELX
		}
		out = append(out, Reloc{Off: f, Type: typ, Sym: m.sym, Addend: int64(f - end)})
		from = append(from, offMem)
		used++
	case kindMem:
		pat := binary.LittleEndian.AppendUint32(nil, uint32(in.dispPH))
		ib := s.P[start:end]
		k := bytes.Index(ib, pat)
		if k < 0 || bytes.Contains(ib[k+1:], pat) {
			return nil, nil, fmt.Errorf("snippet: %s: cannot locate the displacement of %v", p.InstructionString(), m)
		}
		clear(ib[k : k+4])
		out = append(out, Reloc{Off: start + k, Type: m.rel, Sym: m.sym})
		from = append(from, offMem)
	}
	if m := in.imm; m.kind == kindImm {
		size, ph := 4, uint64(immPH32)
		if m.rel == elf.R_X86_64_64 {
			size, ph = 8, immPH64
		}
		f := end - size
		var got uint64
		if f >= start {
			if size == 8 {
				got = binary.LittleEndian.Uint64(s.P[f:end])
			} else {
				got = uint64(binary.LittleEndian.Uint32(s.P[f:end]))
			}
		}
		if got != ph {
			return nil, nil, fmt.Errorf("snippet: %s: %v needs a %d-byte immediate field at the end of the instruction", p.InstructionString(), m, size)
		}
		if m.rel == elf.R_X86_64_32 && rex(s.P[start:f])&0x08 != 0 {
			// The CPU sign-extends imm32 in a 64-bit operation: a
			// zero-extended R_X86_64_32 value would be wrong from 2 GiB.
			return nil, nil, fmt.Errorf("snippet: %s: %v in a 64-bit instruction; use SymImm (R_X86_64_32S)", p.InstructionString(), m)
		}
		clear(s.P[f:end])
		out = append(out, Reloc{Off: f, Type: m.rel, Sym: m.sym})
		from = append(from, offImm)
	}
	if in.nImm == 1 && in.imm.kind == kindNone && !immEncoded(s.P[start:end], in.imm0, p.As) {
		return nil, nil, fmt.Errorf("snippet: %s: immediate %#x does not fit the instruction's immediate field", p.InstructionString(), in.imm0)
	}
	if used != len(mine) {
		return nil, nil, fmt.Errorf("snippet: %s: unexpected relocation from golang-asm", p.InstructionString())
	}
	// By offset (they came in the order of the operands).
	for k := 1; k < len(out); k++ {
		for j := k; j > 0 && out[j].Off < out[j-1].Off; j-- {
			out[j], out[j-1] = out[j-1], out[j]
			from[j], from[j-1] = from[j-1], from[j]
		}
	}
	return out, from, nil
}

// rex returns the REX prefix of the instruction whose bytes before its
// opcode-dependent fields are pre (0 if none): the first byte after the
// legacy prefixes, if it is 0x40-0x4f.
func rex(pre []byte) byte {
	for _, c := range pre {
		switch c {
		case 0x66, 0x67, 0xf2, 0xf3, 0xf0, 0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65:
			continue
		}
		if c&0xf0 == 0x40 {
			return c
		}
		return 0
	}
	return 0
}

// immRange rejects immediates golang-asm would silently truncate or that the
// CPU would sign-extend to something else: 64-bit operations take a
// sign-extended 32-bit immediate (only MOVQ into a register takes 64 bits),
// everything else at most 32 bits. Narrower fields are checked after
// assembly by immEncoded.
func immRange(as obj.As, v int64, to Operand) error {
	fits32 := v == int64(int32(v))
	fitsU32 := v >= 0 && v <= 0xffffffff
	switch {
	case as == x86.AMOVQ && to.kind == kindReg:
		return nil
	case strings.HasSuffix(as.String(), "Q"):
		if !fits32 {
			return fmt.Errorf("%v: immediate %#x does not fit a sign-extended 32-bit field", as, v)
		}
	case !fits32 && !fitsU32:
		return fmt.Errorf("%v: immediate %#x does not fit 32 bits", as, v)
	}
	return nil
}

// immEncoded reports whether the instruction bytes ib end with v as a
// signed or unsigned 1-, 2-, 4- or 8-byte immediate, which is where x86
// puts it. Shifts and rotates by 1 have a form without immediate.
func immEncoded(ib []byte, v int64, as obj.As) bool {
	for _, k := range [...]int{1, 2, 4, 8} {
		if k > len(ib) {
			break
		}
		var u uint64
		for i := k - 1; i >= 0; i-- {
			u = u<<8 | uint64(ib[len(ib)-k+i])
		}
		sh := 64 - 8*uint(k)
		if int64(u) == v || int64(u<<sh)>>sh == v {
			return true
		}
	}
	if v == 1 {
		switch name := as.String(); name[:3] {
		case "SHL", "SHR", "SAR", "SAL", "ROL", "ROR", "RCL", "RCR":
			return true
		}
	}
	return false
}

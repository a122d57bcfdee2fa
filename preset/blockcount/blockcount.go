// Package blockcount implements the blockcount preset: exact execution
// counts of every basic block of the selected functions, per thread.
//
// Each thread counts in a static TLS array of the object (word 0: the
// thread is registered with the runtime; word 1+k: block k), one add per
// block execution: `addq $1, %fs:counters+8(k+1)` where the status flags
// are dead (anywhere in the block before its first call or branch), else
// through a scratch register (load, lea, store), which keeps the flags. A
// block that is a loop by itself is counted per loop run from its
// induction register (loop.go), which keeps tight loops near native speed.
// At each function's entry, a thread that is not registered yet calls
// the runtime (vpt_blocks_thread), which records where this thread's
// counters are; the runtime writes every thread's counts into the trace
// file at thread exit, when the object is unloaded and at process exit.
// `hijack report --blocks` lists them with each block's function, offset,
// loop depth and static loop score (the score vptrace's threshold uses:
// the counts test the thesis's assumption that it predicts execution).
//
// The descriptor, block records and strings go into the section
// .blockcount (vptrace/ABI.md, "blockcount"); the object's constructor
// fills in the counters' thread-pointer offset and registers it. The
// runtime is the vptrace runtime (libvptrace.so, libvptrace.a): one
// trace file per process holds pages and counts alike.
//
// Everything that touches the object goes through the insertion kit
// (preset/kit): placement, scratch registers, TLS slots, references,
// sections, constructor and destructor, the string table.
package blockcount

import (
	"errors"
	"fmt"
	"math"

	"debug/elf"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/ibr"
	"hijack/loops"
	"hijack/preset"
	"hijack/preset/kit"
	"hijack/rules"
	"hijack/snippet"
	"hijack/vptrace/abi"
)

// Preset is the blockcount preset. Sessions hold everything per object.
type Preset struct{}

// Spec declares blockcount's parameters.
func (Preset) Spec() rules.PresetSpec {
	return rules.PresetSpec{
		Name: "blockcount",
		Doc:  "exact execution counts of every basic block, per thread, into the trace (hijack report --blocks)",
		Params: []rules.ParamSpec{
			rules.EnumParam("tls", "auto", []string{"local-exec", "initial-exec", "auto"},
				"TLS access model of the per-thread counters: local-exec links only into executables, initial-exec also into shared libraries loaded at start-up (a dlopen'ed library has little static TLS: 8 bytes a block), auto: local-exec where the object shows it is for an executable, else initial-exec"),
		},
	}
}

// Runtime is the vptrace runtime, which also collects block counts.
func (Preset) Runtime() preset.Runtime {
	return preset.Runtime{Shared: "libvptrace.so", Static: "libvptrace.a", Libs: []string{"-lpthread"}}
}

// block is one counted block.
type block struct {
	fn    *ibr.Func
	start int // its first instruction
	depth int
	score float64
	insns int
}

// session is the blockcount session of one object.
type session struct {
	o        *ibr.Object
	x        *kit.Object
	id       uint64
	suffix   string
	an       *kit.Analysis
	analysis *loops.Analysis
	slots    kit.Slots // the counters: word 0 registered, 1+k block k
	// loopSlots are the per-thread slots of the loops counted from their
	// induction register (selfLoop), nloops of them.
	loopSlots kit.Slots
	nloops    int
	blocks    []block
	secData   int
	secTLS    int
	secText   int
	b         *kit.Builder
}

// Begin settles the object's TLS model (one per object: rules that ask
// for different ones are an error naming both), adds the sections and
// local symbols, and analyses the object.
func (Preset) Begin(o *ibr.Object, params []rules.Params) (preset.Session, error) {
	model, err := kit.ObjectTLS(params, "")
	if err != nil {
		return nil, fmt.Errorf("blockcount: %w", err)
	}
	x, err := kit.NewObject(o.File)
	if err != nil {
		return nil, fmt.Errorf("blockcount: %w", err)
	}
	ss := &session{o: o, x: x, id: kit.ObjectID(o), b: kit.NewBuilder()}
	ss.suffix = fmt.Sprintf("%016x", ss.id)
	switch {
	case model != "":
		// local-exec or initial-exec: the spec allows no other
		if ss.slots.Model, err = kit.ParseTLSModel(model); err != nil {
			return nil, fmt.Errorf("blockcount: %w", err)
		}
	case kit.MayBeShared(o.File):
		ss.slots.Model = kit.InitialExec
	default:
		ss.slots.Model = kit.LocalExec
	}
	ss.slots.Sym = ss.sym("counters")
	ss.loopSlots = kit.Slots{Model: ss.slots.Model, Sym: ss.sym("loops")}
	ss.secData = x.AddSection(".blockcount", kit.Writable, 8)
	ss.secTLS = x.AddSection(".tbss.blockcount", kit.TLS, 8)
	ss.secText = x.AddSection(".text.blockcount", kit.Text, 16)
	for _, l := range []struct {
		what string
		typ  elf.SymType
		sec  int
	}{
		{"desc", elf.STT_OBJECT, ss.secData},
		{"counters", elf.STT_TLS, ss.secTLS},
		{"loops", elf.STT_TLS, ss.secTLS},
		{"ctor", elf.STT_FUNC, ss.secText},
		{"dtor", elf.STT_FUNC, ss.secText},
	} {
		if err := x.AddLocal(ss.sym(l.what), l.typ, l.sec); err != nil {
			return nil, fmt.Errorf("blockcount: %w", err)
		}
	}
	ss.an = kit.Analyze(o)
	ss.analysis = loops.Analyze(ss.an.Prog)
	return ss, nil
}

func (ss *session) sym(what string) string { return "__vpt_bc_" + what + "_" + ss.suffix }

// Apply counts the blocks of funcs. A block where no code can go (its
// first instruction glued to the one before) is not counted, and said; a
// function whose entry takes no code is not counted at all.
func (ss *session) Apply(funcs []*ibr.Func, params rules.Params, warn func(string)) error {
	if tls := params.String("tls"); tls != "auto" && tls != ss.slots.Model.String() {
		return fmt.Errorf("blockcount: %s asks for tls: %s, but the object's TLS model is already %s", params.Origin(), tls, ss.slots.Model)
	}
	for _, fn := range funcs {
		g, lv := ss.an.Func(fn)
		if g == nil {
			continue
		}
		if _, ok := kit.Before(g, g.Blocks[0].Start); !ok {
			// Without the registration at its entry, a thread that
			// runs only this function would count unseen.
			warn(fmt.Sprintf("blockcount: %s: not counted: no code can go at its entry", fn.Name))
			continue
		}
		var missed []string
		for _, b := range g.Blocks {
			if b.Start >= b.End || fn.Section.Insts[b.Start].Kind != ibr.Code {
				continue
			}
			at, ok := kit.Before(g, b.Start)
			if !ok {
				missed = append(missed, fmt.Sprintf("+%#x", fn.Section.Insts[b.Start].Off-fn.Section.Insts[fn.Start].Off))
				continue
			}
			k := len(ss.blocks)
			info := ss.analysis.Info(b)
			ss.blocks = append(ss.blocks, block{fn: fn, start: b.Start, depth: info.LoopDepth, score: info.Score, insns: b.End - b.Start})
			err := ss.countBlock(g, lv, b, at, k)
			switch {
			case errors.Is(err, kit.ErrNoScratch) && b.Index == 0:
				// No registration: the function stays as it was.
				ss.blocks = ss.blocks[:k]
				warn(fmt.Sprintf("blockcount: %s: not counted: no register to spare at its entry", fn.Name))
			case errors.Is(err, kit.ErrNoScratch):
				// Nothing that refers to counter k went in: the
				// block leaves the table, and the next takes k.
				ss.blocks = ss.blocks[:k]
				missed = append(missed, fmt.Sprintf("+%#x", fn.Section.Insts[b.Start].Off-fn.Section.Insts[fn.Start].Off))
				continue
			case err != nil:
				return fmt.Errorf("%s: %w", fn.Section.Where(uint64(fn.Section.Insts[b.Start].Off)), err)
			default:
				continue
			}
			break // (the entry was refused)
		}
		if len(missed) > 0 {
			warn(fmt.Sprintf("blockcount: %s: %d block(s) not counted (no code can go before their first instruction, or no register to spare): %s", fn.Name, len(missed), list(missed)))
		}
	}
	return nil
}

func list(s []string) string {
	if len(s) > 5 {
		return fmt.Sprintf("%v ...", s[:5])
	}
	return fmt.Sprint(s)
}

// countBlock inserts what counts block k, b of g: the registration first
// at the function's entry, then a loop run count (selfLoop) or a count
// per execution. kit.ErrNoScratch says nothing referring to counter k
// went in (a loop's entry code only stores its own slot).
func (ss *session) countBlock(g *cfg.Graph, lv *cfg.Liveness, b *cfg.Block, at, k int) error {
	if b.Index == 0 {
		// Registration first: the entry block's count goes into the
		// counters the runtime knows of.
		if err := ss.register(g, lv, at); err != nil {
			return err
		}
	}
	if l, ok := findSelfLoop(g, lv, b); ok {
		err := ss.countLoop(g, lv, l, k)
		if !errors.Is(err, kit.ErrNoScratch) {
			return err
		}
		// (Its entries may store the slot: harmless.)
	}
	return ss.count(g, lv, b, at, k)
}

// countPoint returns where block b's counter code goes: the nearest point
// at or before its first control transfer (call, branch, return) where
// the flags are dead, so that one add does, or its start.
func countPoint(g *cfg.Graph, lv *cfg.Liveness, b *cfg.Block, start int) int {
	last := b.End - 1
	for i := b.Start; i < b.End; i++ {
		if e := lv.Effect(i); !e.Known || e.Ctrl != effect.None {
			last = i
			break
		}
	}
	if at, ok := kit.Place(g, lv, last, 0); ok && at >= start {
		return at
	}
	return start
}

// count inserts block k's counter increment into block b (at is where
// code can go before its first instruction).
func (ss *session) count(g *cfg.Graph, lv *cfg.Liveness, b *cfg.Block, at, k int) error {
	if b.Index != 0 {
		// (The entry block's count stays at its start, right after the
		// registration inserted there before it.)
		if p := countPoint(g, lv, b, at); p != at {
			err := ss.countAt(g, lv, p, k)
			if !errors.Is(err, kit.ErrNoScratch) {
				return err
			}
			// (The instruction there reads too many registers to
			// borrow one: a call, say. The block's start may not.)
		}
	}
	return ss.countAt(g, lv, at, k)
}

// countAt inserts counter k's increment before instruction at.
func (ss *session) countAt(g *cfg.Graph, lv *cfg.Liveness, at, k int) error {
	live := lv.Before(at)
	flagsLive := live.Flags&effect.Status != 0
	uses := lv.Effect(at).Use
	need := 0
	if ss.slots.Model == kit.InitialExec {
		need++ // the counters' offset
	}
	// Where the flags are live the count goes up by lea through a
	// register; without one to borrow, the flags are saved instead.
	lea := flagsLive
	var gd *guard
	var err error
	if lea {
		gd, err = ss.open(live, effect.RSP.Set(), uses, need+1, false)
		lea = !errors.Is(err, kit.ErrNoScratch)
	}
	if !lea {
		gd, err = ss.open(live, effect.RSP.Set(), uses, need, true)
	}
	if err != nil {
		return err
	}
	bb := ss.b
	u := snippet.NoReg
	if ss.slots.Model == kit.InitialExec {
		u = gd.regs[0]
	}
	ctr := ss.slots.At(bb, k+1, u, true, false)
	if lea {
		r := gd.regs[len(gd.regs)-1]
		bb.MovQ(ctr, r)
		bb.LeaQ(snippet.Mem(r, 1), r)
		bb.MovQ(r, ctr)
	} else {
		bb.AddQ(snippet.Imm(1), ctr)
	}
	ss.close(gd)
	sn, err := bb.Assemble()
	if err != nil {
		return err
	}
	return g.Sec.InsertBefore(at, sn)
}

// register inserts, at a function's entry, the check that registers the
// thread with the runtime on its first entry into the object's code:
//
//	cmpq $0, %fs:counters      (initial-exec: through a scratch register)
//	jne 1f
//	lea -128(%rsp),%rsp; call *vpt_blocks_thread@GOTPCREL(%rip); nopl desc(%rip); lea 128(%rsp),%rsp
//	1:
//
// The runtime keeps every register and the flags; the compare changes
// the flags, saved around it where they are live (never at a function
// entry that follows the ABI).
func (ss *session) register(g *cfg.Graph, lv *cfg.Liveness, at int) error {
	need := 0
	if ss.slots.Model == kit.InitialExec {
		need++
	}
	gd, err := ss.open(lv.Before(at), effect.RSP.Set(), lv.Effect(at).Use, need, true)
	if err != nil {
		return err
	}
	bb := ss.b
	u := snippet.NoReg
	if need > 0 {
		u = gd.regs[0]
	}
	word := ss.slots.At(bb, 0, u, false, gd.stepped)
	bb.CmpQ(snippet.Imm(0), word)
	bb.Jcc(snippet.CondNE, "registered")
	if !gd.stepped {
		bb.LeaQ(snippet.Mem(snippet.RSP, -kit.RedZone), snippet.RSP)
	}
	bb.CallGOT("vpt_blocks_thread")
	// nopl desc(%rip): the runtime's argument (vptrace/ABI.md)
	bb.Field([]byte{0x0f, 0x1f, 0x05, 0, 0, 0, 0}, 3, elf.R_X86_64_PC32, kit.Named(ss.sym("desc")), -4)
	if !gd.stepped {
		bb.LeaQ(snippet.Mem(snippet.RSP, kit.RedZone), snippet.RSP)
	}
	bb.Label("registered")
	ss.close(gd)
	sn, err := bb.Assemble()
	if err != nil {
		return err
	}
	return g.Sec.InsertBefore(at, sn)
}

// guard is the frame of code inserted where registers must be borrowed
// or the flags saved (open, close).
type guard struct {
	regs     []snippet.Reg // the scratch registers
	borrowed []effect.Reg  // the live ones among them, saved
	flags    bool          // the flags are saved
	stepped  bool          // rsp is below the red zone
}

// open picks need scratch registers where live is live (none of
// reserved; none that uses holds is borrowed) and starts the code: when
// it borrows registers or saves the flags (saveFlags, and they are
// live), it steps over the red zone, pushes the registers, then the
// flags. It emits nothing when it fails (kit.ErrNoScratch).
func (ss *session) open(live cfg.Live, reserved, uses effect.RegSet, need int, saveFlags bool) (*guard, error) {
	gd := &guard{flags: saveFlags && live.Flags&effect.Status != 0}
	if need > 0 {
		free, borrowed, err := kit.Scratch(need, live.Regs, reserved, uses)
		if err != nil {
			return nil, err
		}
		gd.borrowed = borrowed
		for _, r := range free {
			gd.regs = append(gd.regs, kit.Reg(r))
		}
	}
	gd.stepped = gd.flags || len(gd.borrowed) > 0
	if gd.stepped {
		ss.b.Save(gd.borrowed...)
		if gd.flags {
			ss.b.Bytes(0x9c) // pushfq
		}
	}
	return gd, nil
}

// close ends what open started.
func (ss *session) close(gd *guard) {
	if gd.stepped {
		if gd.flags {
			ss.b.Bytes(0x9d) // popfq
		}
		ss.b.Restore(gd.borrowed...)
	}
}

// Finish writes the descriptor, block records and strings, sizes the
// counters, and adds the constructor and destructor:
//
//	ctor: mov $counters@tpoff,%rax (local-exec) | mov counters@gottpoff(%rip),%rax
//	      mov %rax,desc+16(%rip); lea desc(%rip),%rdi; jmp *vpt_blocks_register@GOTPCREL(%rip)
//	dtor: lea desc(%rip),%rdi; jmp *vpt_blocks_unregister@GOTPCREL(%rip)
func (ss *session) Finish() error {
	var strs kit.StringTable
	strs.Add("")
	n := len(ss.blocks)
	desc := abi.Blocks{
		Magic:     abi.BlocksMagic,
		Version:   abi.BlocksVersion,
		NBlocks:   uint32(n),
		BlocksRel: abi.BlocksSize - abi.BlocksBlocksRelOff,
		Name:      strs.Add(ss.o.Name),
		ID:        ss.id,
	}
	recs := make([]abi.Block, n)
	for k, bl := range ss.blocks {
		sec := bl.fn.Section
		recs[k] = abi.Block{
			Func:      strs.Add(bl.fn.Name),
			Off:       uint32(sec.Insts[bl.start].Off - sec.Insts[bl.fn.Start].Off),
			Score:     uint32(math.Round(bl.score * 1e6)),
			LoopDepth: uint16(min(bl.depth, math.MaxUint16)),
			Insns:     uint16(min(bl.insns, math.MaxUint16)),
		}
	}
	desc.NStrs = uint32(strs.Len())
	desc.StrsRel = int32(abi.BlocksSize + abi.BlockSize*n - abi.BlocksStrsRelOff)
	if err := desc.Check(); err != nil {
		return fmt.Errorf("blockcount: %w", err)
	}
	data := desc.Append(make([]byte, 0, abi.BlocksSize+abi.BlockSize*n+strs.Len()))
	for k := range recs {
		data = recs[k].Append(data)
	}
	data = append(data, strs.Bytes()...)
	ss.x.SetData(ss.secData, data)
	size := ss.slots.Size(n + 1)
	loops := ss.loopSlots.Size(ss.nloops)
	ss.x.SetSize(ss.secTLS, size+loops)
	if err := ss.x.SetSymbol(ss.sym("desc"), 0, uint64(len(data))); err != nil {
		return err
	}
	if err := ss.x.SetSymbol(ss.sym("counters"), 0, size); err != nil {
		return err
	}
	if err := ss.x.SetSymbol(ss.sym("loops"), size, loops); err != nil {
		return err
	}

	bb := ss.b
	desc0 := kit.Named(ss.sym("desc"))
	bb.Label("ctor")
	if ss.slots.Model == kit.InitialExec {
		bb.MovQ(snippet.GOTTPOFF(ss.sym("counters")), snippet.RAX)
	} else {
		// mov $counters@tpoff,%rax (sign-extended imm32)
		bb.Field([]byte{0x48, 0xc7, 0xc0, 0, 0, 0, 0}, 3, elf.R_X86_64_TPOFF32, kit.Named(ss.sym("counters")), 0)
	}
	bb.MovQ(snippet.RAX, bb.RIP(desc0, abi.BlocksTPOffOff))
	bb.LeaQ(bb.RIP(desc0, 0), snippet.RDI)
	bb.JmpGOT("vpt_blocks_register")
	bb.Label("dtor")
	bb.LeaQ(bb.RIP(desc0, 0), snippet.RDI)
	bb.JmpGOT("vpt_blocks_unregister")
	bb.Label("end")
	code, err := bb.Assemble()
	if err != nil {
		return fmt.Errorf("blockcount: constructor: %w", err)
	}
	labels := bb.Labels()
	if err := ss.x.SetCode(ss.secText, code); err != nil {
		return err
	}
	if err := ss.x.SetSymbol(ss.sym("ctor"), uint64(labels["ctor"]), uint64(labels["dtor"]-labels["ctor"])); err != nil {
		return err
	}
	if err := ss.x.SetSymbol(ss.sym("dtor"), uint64(labels["dtor"]), uint64(labels["end"]-labels["dtor"])); err != nil {
		return err
	}
	if err := ss.x.Constructor(ss.sym("ctor"), kit.NoPriority); err != nil {
		return err
	}
	// Priority 0: after every other destructor of the module, so that
	// the counts are complete when the runtime takes them.
	return ss.x.Destructor(ss.sym("dtor"), 0)
}

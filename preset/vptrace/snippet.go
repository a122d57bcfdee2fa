package vptrace

import (
	"debug/elf"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg"
	"hijack/cfg/effect"
	"hijack/ibr"
	"hijack/snippet"
	"hijack/vptrace/abi"
)

// redZone is the part of the stack below rsp that leaf functions may use
// without moving rsp (System V ABI): inserted code steps over it before
// pushing or calling.
const redZone = 128

// snippetRegs maps hardware register numbers to the snippet package's.
var snippetRegs = [16]snippet.Reg{snippet.RAX, snippet.RCX, snippet.RDX, snippet.RBX, snippet.RSP, snippet.RBP, snippet.RSI, snippet.RDI,
	snippet.R8, snippet.R9, snippet.R10, snippet.R11, snippet.R12, snippet.R13, snippet.R14, snippet.R15}

var regNames = [16]string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"}

// Placeholder symbol names the snippet assembler sees; converted to
// symbol indices and same-section links afterwards.
const (
	symByIndex = "__hijack_sym_"
	symLink    = "__hijack_link"
)

// instrument inserts the tracing code of one site before its instruction
// (before the prefix the instruction is glued to, if any).
func (st *objState) instrument(s *site, exact bool) error {
	sec := s.fn.Section
	g := st.prog.ByFunc[s.fn]
	at, ok := st.placement(s, g)
	if !ok {
		return fmt.Errorf("cannot insert code before the instruction")
	}
	live := st.live[g].Before(at)
	e := st.live[g].Effect(at)
	k := len(st.sites)
	st.sites = append(st.sites, s)
	sn, err := st.code(s, k, live.Regs, live.Flags&effect.Status != 0, e.Use, exact)
	if err != nil {
		return err
	}
	return sec.InsertBefore(at, sn)
}

// placement chooses where a site's code goes: before its instruction (or
// before the prefix it is glued to), or, when the flags are live there,
// earlier in its block at the nearest point where they are dead and the
// registers of the address still hold the values the access will use. The
// earlier point saves saving and restoring the flags. It never moves code
// across a call, a branch or an instruction it cannot model, so the access
// still follows whenever the inserted code runs.
func (st *objState) placement(s *site, g *cfg.Graph) (int, bool) {
	sec := s.fn.Section
	lv := st.live[g]
	at := s.inst
	if !sec.CanInsertBefore(at) {
		if at > s.fn.Start && sec.Insts[at-1].Flags&ibr.Prefix != 0 && sec.CanInsertBefore(at-1) {
			at--
		} else {
			return 0, false
		}
	}
	if lv.Before(at).Flags&effect.Status == 0 || s.rep || s.vec != 0 {
		// Vector sites read vector registers placement does not track.
		return at, true
	}
	var addr effect.RegSet
	for _, r := range []x86asm.Reg{s.acc.Mem.Base, s.acc.Mem.Index} {
		if n, ok := hwReg(r); ok {
			addr |= n.Set()
		}
	}
	b := g.BlockOf(s.inst)
	for j := at - 1; j >= b.Start; j-- {
		e := lv.Effect(j)
		if !e.Known || e.Ctrl != effect.None || (e.Def|e.Partial)&addr != 0 {
			break
		}
		if sec.CanInsertBefore(j) && lv.Before(j).Flags&effect.Status == 0 {
			return j, true
		}
	}
	return at, true
}

// instrumentSweep inserts the code of a sweep: at every loop entry the
// address of the first access goes to the site's TLS slot; at every exit
// the runtime records the range from it to the last access.
func (st *objState) instrumentSweep(sw *sweep) error {
	s := sw.site
	sec := s.fn.Section
	lv := st.live[st.prog.ByFunc[s.fn]]
	k := len(st.sites)
	st.sites = append(st.sites, s)
	s.kind |= abi.KindRange
	put := func(e edgePoint, delta int64, exit bool, adj int64) error {
		live := lv.Before(e.inst)
		if e.after {
			live = lv.After(e.inst)
		}
		sn, err := st.sweepCode(s, k, live.Regs, live.Flags&effect.Status != 0, delta, exit, adj)
		if err != nil {
			return err
		}
		if e.after {
			return sec.InsertAfter(e.inst, sn)
		}
		return sec.InsertBefore(e.inst, sn)
	}
	// With a register step, the exits tell the runtime whether the first
	// access is one step after the address stored at entry (bit 0) and
	// whether the last is one step before the address at the exit (bit 1).
	var firstAdj int64
	if sw.firstStep {
		firstAdj = 1
	}
	for _, e := range sw.entries {
		if err := put(e, sw.first, false, 0); err != nil {
			return err
		}
	}
	for _, e := range sw.exits {
		adj := firstAdj
		if e.backStep {
			adj |= 2
		}
		if err := put(e.edgePoint, e.last, true, adj); err != nil {
			return err
		}
	}
	return nil
}

// instrumentVec inserts the code of a vector-element site (an AVX2 gather
// or masked move): the base address is pushed and vpt_vec reads the
// indices and the mask from the vector registers. No flags change.
func (st *objState) instrumentVec(s *site) error {
	sec := s.fn.Section
	g := st.prog.ByFunc[s.fn]
	at, ok := st.placement(s, g)
	if !ok {
		return fmt.Errorf("cannot insert code before the instruction")
	}
	k := len(st.sites)
	st.sites = append(st.sites, s)
	base := *s
	if s.acc.VSIB {
		base.acc.Mem.Index, base.acc.Mem.Scale = 0, 0 // the indices are the vector's
	}
	sn, err := st.argCall(&base, k, st.live[g].Before(at).Regs, "vpt_vec", func(b *snippet.Builder, S snippet.Reg, shift int32) error {
		ea, err := st.address(&base, shift, 0)
		if err == nil {
			b.LeaQ(ea, S)
		}
		return err
	})
	if err != nil {
		return err
	}
	return sec.InsertBefore(at, sn)
}

// instrumentRepAfter inserts the code of a repe/repne cmps or scas site:
// before it, rcx goes to the site's TLS slot; after it, vpt_rep_after
// records the elements it really compared. No flags change (the flags the
// instruction sets are live: a conditional jump reads them).
func (st *objState) instrumentRepAfter(s *site) error {
	sec := s.fn.Section
	g := st.prog.ByFunc[s.fn]
	lv := st.live[g]
	at := s.inst
	if !sec.CanInsertBefore(at) {
		return fmt.Errorf("cannot insert code before the instruction")
	}
	k := len(st.sites)
	st.sites = append(st.sites, s)
	// Before: mov %rcx, slot.
	b := st.b
	if st.tls == localExec {
		b.MovQ(snippet.RCX, st.slotAt(b, k, snippet.NoReg, true, false))
	} else {
		free, bw, err := pickRegs(1, lv.Before(at).Regs|1<<effect.RCX, 1<<effect.RSP|1<<effect.RCX, 0)
		if err != nil {
			return err
		}
		// (the flags are dead before the instruction, which sets them)
		flags := st.tls == indirect && lv.Before(at).Flags&effect.Status != 0
		stepped := len(bw) > 0 || flags
		if stepped {
			b.LeaQ(snippet.Mem(snippet.RSP, -redZone), snippet.RSP)
		}
		if len(bw) > 0 {
			b.PushQ(snippetRegs[bw[0]])
		}
		if flags {
			b.Pushfq()
		}
		b.MovQ(snippet.RCX, st.slotAt(b, k, snippetRegs[free[0]], true, stepped))
		if flags {
			b.Popfq()
		}
		if len(bw) > 0 {
			b.PopQ(snippetRegs[bw[0]])
		}
		if stepped {
			b.LeaQ(snippet.Mem(snippet.RSP, redZone), snippet.RSP)
		}
	}
	before, err := st.assemble(k)
	if err != nil {
		return err
	}
	// After: push the slot, call vpt_rep_after.
	after, err := st.argCall(s, k, lv.After(at).Regs, "vpt_rep_after", func(b *snippet.Builder, S snippet.Reg, shift int32) error {
		b.MovQ(st.slotAt(b, k, S, false, true), S)
		return nil
	})
	if err != nil {
		return err
	}
	if err := sec.InsertBefore(at, before); err != nil {
		return err
	}
	return sec.InsertAfter(at, after)
}

// argCall builds code that loads one value into a scratch register (load),
// pushes it and calls a whole-state stub with the site's nopl after the
// call. It steps over the red zone, borrows a register if none is dead,
// and changes no flags.
func (st *objState) argCall(s *site, k int, liveRegs effect.RegSet, stub string, load func(*snippet.Builder, snippet.Reg, int32) error) (*ibr.Snippet, error) {
	b := st.b
	free, borrowed, err := pickRegs(1, liveRegs, 1<<effect.RSP, 0)
	if err != nil {
		return nil, err
	}
	b.LeaQ(snippet.Mem(snippet.RSP, -redZone), snippet.RSP)
	shift := int32(redZone)
	for _, r := range borrowed {
		b.PushQ(snippetRegs[r])
		shift += 8
	}
	S := snippetRegs[free[0]]
	if err := load(b, S, shift); err != nil {
		return nil, err
	}
	b.PushQ(S)
	callRuntime(b, stub)
	siteNop(b, "site")
	b.LeaQ(snippet.Mem(snippet.RSP, 8), snippet.RSP)
	for i := len(borrowed) - 1; i >= 0; i-- {
		b.PopQ(snippetRegs[borrowed[i]])
	}
	b.LeaQ(snippet.Mem(snippet.RSP, redZone), snippet.RSP)
	return st.assemble(k, "site")
}

// sweepCode builds the entry (exit false) or exit code of sweep site k.
// It changes no flags (flagsLive: whether they are live there). adj is
// what the exit of a sweep with a register step pushes for vpt_range_dyn
// (ABI.md).
func (st *objState) sweepCode(s *site, k int, liveRegs effect.RegSet, flagsLive bool, delta int64, exit bool, adj int64) (*ibr.Snippet, error) {
	b := st.b
	need := 1
	if exit {
		need = 2
	}
	if st.tls != localExec {
		need++
	}
	// The entry of an indirect object tests the slot array's address
	// (slotArray): live flags are saved around it.
	saveFlags := st.tls == indirect && !exit && flagsLive
	reserved := effect.RegSet(1 << effect.RSP)
	if s.dynStep != nil {
		// the runtime reads the step register at the call: not a scratch
		reserved |= 1 << s.dynStep.reg
	}
	free, borrowed, err := pickRegs(need, liveRegs, reserved, 0)
	if err != nil {
		return nil, err
	}
	shift := int32(0)
	if exit || len(borrowed) > 0 || saveFlags {
		b.LeaQ(snippet.Mem(snippet.RSP, -redZone), snippet.RSP)
		shift = redZone
	}
	for _, r := range borrowed {
		b.PushQ(snippetRegs[r])
		shift += 8
	}
	// The range starts at the first byte the site stands for (lo); the
	// site record's size is the extent hi-lo, which the runtime adds.
	ea, err := st.address(s, shift, delta+s.lo)
	if err != nil {
		return nil, err
	}
	S := snippetRegs[free[0]]
	b.LeaQ(ea, S)
	if saveFlags {
		b.Pushfq()
	}
	slot := st.slotAt(b, k, snippetRegs[free[need-1]], !exit, shift > 0)
	var labels []string
	if !exit {
		b.MovQ(S, slot)
		if saveFlags {
			b.Popfq()
		}
	} else {
		T := snippetRegs[free[1]]
		b.MovQ(slot, T)
		b.PushQ(T) // first address
		b.PushQ(S) // last address
		pushed := int32(16)
		if s.dynStep != nil {
			b.PushQ(snippet.Imm(adj))
			callRuntime(b, "vpt_range_dyn")
			pushed += 8
		} else {
			callRuntime(b, "vpt_range")
		}
		labels = []string{"site0"}
		siteNop(b, labels[0])
		b.LeaQ(snippet.Mem(snippet.RSP, pushed), snippet.RSP)
	}
	for i := len(borrowed) - 1; i >= 0; i-- {
		b.PopQ(snippetRegs[borrowed[i]])
	}
	if shift > 0 {
		b.LeaQ(snippet.Mem(snippet.RSP, redZone), snippet.RSP)
	}
	return st.assemble(k, labels...)
}

// code builds the snippet for site k: compute the address without
// touching the flags, then save the flags if they are live, compare its
// page with the site's TLS slot and call the runtime on a change. A site
// that may touch two pages finds out whether its bytes cross a page
// boundary from the carry of a 16-bit add (see straddleCheck), or, when
// they span more than a page (H over 4096), compares the page of its last
// byte too.
func (st *objState) code(s *site, k int, liveRegs effect.RegSet, flagsLive bool, uses effect.RegSet, exact bool) (*ibr.Snippet, error) {
	b := st.b
	carry := s.twoPages && s.hi-s.lo-1 < 4096
	// Registers: S holds the page, T the last byte's page (wide sites)
	// or the segment base, U the TLS slot base (initial-exec); rax holds
	// the saved flags.
	need := 1
	if (s.twoPages && !carry) || s.acc.Mem.Segment != 0 {
		need++
	}
	if st.tls != localExec && !exact {
		need++
	}
	if s.rep {
		need = 0
	}
	reserved := effect.RegSet(1 << effect.RSP)
	var spill []effect.Reg
	if flagsLive {
		reserved |= 1 << effect.RAX
		if liveRegs.Has(effect.RAX) {
			spill = append(spill, effect.RAX)
		}
	}
	free, borrowed, err := pickRegs(need, liveRegs, reserved, uses)
	if err != nil {
		return nil, err
	}
	spill = append(spill, borrowed...)
	shift := int32(0) // how far rsp moved
	if len(spill) > 0 {
		b.LeaQ(snippet.Mem(snippet.RSP, -redZone), snippet.RSP)
		for _, r := range spill {
			b.PushQ(snippetRegs[r])
		}
		shift = redZone + 8*int32(len(spill))
	}
	var nops []string
	call := func(stub string) {
		if shift == 0 {
			b.LeaQ(snippet.Mem(snippet.RSP, -redZone), snippet.RSP)
		}
		callRuntime(b, stub)
		label := "site" + strconv.Itoa(len(nops))
		nops = append(nops, label)
		siteNop(b, label)
		if shift == 0 {
			b.LeaQ(snippet.Mem(snippet.RSP, redZone), snippet.RSP)
		}
	}
	saveFlags := func() {
		if flagsLive {
			b.Seto(snippet.AL)
			b.Lahf()
		}
	}
	if s.rep {
		saveFlags()
		call("vpt_rep")
	} else {
		// The addresses, with lea and mov only: the registers they use
		// (rax among them) still hold the program's values.
		rs := snippetRegs[free[0]]
		ea, err := st.address(s, shift, s.lo)
		if err != nil {
			return nil, err
		}
		b.LeaQ(ea, rs)
		next := 1
		if s.acc.Mem.Segment != 0 {
			T := snippetRegs[free[next]]
			seg := snippet.FS
			if s.acc.Mem.Segment == x86asm.GS {
				seg = snippet.GS
			}
			b.MovQ(snippet.Mem(snippet.NoReg, 0).Seg(seg), T)
			b.LeaQ(snippet.MemIndex(rs, T, 1, 0), rs)
		}
		var rt snippet.Reg
		if s.twoPages && !carry {
			rt = snippetRegs[free[next]]
			next++
			b.LeaQ(snippet.Mem(rs, int32(s.hi-s.lo-1)), rt)
		}
		// The slot: initial-exec loads its offset before the flags are
		// saved, indirect its array after (slotArray tests it).
		var slot snippet.Operand
		switch {
		case st.tls == localExec:
			slot = st.slotAt(b, k, snippet.NoReg, true, false)
		case st.tls == initialExec && !exact:
			slot = st.slotAt(b, k, snippetRegs[free[next]], true, shift != 0)
		}
		saveFlags()
		if st.tls == indirect && !exact {
			slot = st.slotAt(b, k, snippetRegs[free[next]], true, shift != 0)
		}
		stub := "vpt_slow_" + regNames[free[0]]
		check := func(same string) {
			if exact {
				call(stub)
				return
			}
			b.CmpQ(rs, slot)
			b.Jcc(snippet.CondE, same)
			call(stub)
			b.MovQ(rs, slot)
			b.Label(same)
		}
		switch {
		case carry:
			straddleCheck(b, rs, s.hi-s.lo, "cross")
			b.ShrQ(snippet.Imm(16), rs)
			check("same")
			b.Jmp("done")
			// The bytes cross into the next page: both pages, the
			// second one without a slot of its own.
			b.Label("cross")
			b.ShrQ(snippet.Imm(16), rs)
			check("same2")
			b.IncQ(rs)
			call(stub)
			b.Label("done")
		case s.twoPages:
			b.ShrQ(snippet.Imm(12), rs)
			b.ShrQ(snippet.Imm(12), rt)
			check("same")
			b.CmpQ(rt, rs)
			b.Jcc(snippet.CondE, "one")
			call("vpt_slow_" + regNames[free[1]])
			b.Label("one")
		default:
			b.ShrQ(snippet.Imm(12), rs)
			check("same")
		}
	}
	if flagsLive {
		b.Bytes(0x04, 0x7f) // add $0x7f,%al: OF back from AL
		b.Sahf()
	}
	if len(spill) > 0 {
		for i := len(spill) - 1; i >= 0; i-- {
			b.PopQ(snippetRegs[spill[i]])
		}
		b.LeaQ(snippet.Mem(snippet.RSP, redZone), snippet.RSP)
	}
	return st.assemble(k, nops...)
}

// straddleCheck emits the test of whether the n bytes (1 < n <= 4096) at
// the address in r cross a page boundary, with r as the only register:
// shifted left by 4, the page offset fills bits 4-15 of r, and adding
// (n-1) << 4 to those 16 bits carries out of bit 15 exactly when the last
// byte is on the next page. The add leaves bits 16-63 (the page number)
// alone; a right shift by 16 then gives the page. It jumps to cross if the
// bytes cross. User addresses (below 2^47) lose nothing to the shift.
func straddleCheck(b *snippet.Builder, r snippet.Reg, n int64, cross string) {
	b.ShlQ(snippet.Imm(4), r)
	add := (n - 1) << 4
	if add >= 1<<15 {
		add -= 1 << 16 // the same 16 bits, as the signed immediate
	}
	b.AddW(snippet.Imm(add), r)
	b.Jcc(snippet.CondB, cross)
}

// siteNop emits, after a call into the runtime, the 7-byte
// nopl disp32(%rip) that tells the stub its site (ABI.md); assemble
// relocates it to the site's record.
func siteNop(b *snippet.Builder, label string) {
	b.Label(label)
	b.Bytes(0x0f, 0x1f, 0x05, 0, 0, 0, 0)
}

// callRuntime calls a runtime entry point through the GOT: `call
// *stub@GOTPCREL(%rip)` (R_X86_64_GOTPCRELX), 6 bytes. Unlike a call
// through the PLT, it never goes through the lazy-binding resolver, which
// would run with the interrupted code's registers and clobbers some; the
// loader fills the GOT entry before the object's code runs, and a static
// link turns it into a direct call. The return address is the same
// distance from the call's end as a direct call's: the nopl after it.
func callRuntime(b *snippet.Builder, stub string) {
	b.Call(snippet.GOTPCRELX(stub))
}

// slotAt returns the memory operand of site k's slot, with U (a scratch
// register; none for local-exec) holding what the model needs: for
// initial-exec the slots' offset from the thread pointer (from the GOT),
// for indirect this thread's slot array (from the object's TLS word). An
// indirect write first maps the array if the thread has none (slotArray),
// which changes the flags; reads come after a write of the same slot in
// the same thread (a sweep's entry, the store before a repe cmps), which
// mapped it. stepped: rsp is already below the red zone.
func (st *objState) slotAt(b *snippet.Builder, k int, U snippet.Reg, write, stepped bool) snippet.Operand {
	switch st.tls {
	case initialExec:
		b.MovQ(snippet.GOTTPOFF(st.sym("slots")), U)
		return snippet.Mem(U, int32(8*k)).Seg(snippet.FS)
	case indirect:
		if write {
			st.slotArray(b, U, stepped)
		} else {
			b.MovQ(snippet.GOTTPOFF(st.sym("slots")), U)
			b.MovQ(snippet.Mem(U, 0).Seg(snippet.FS), U)
		}
		return snippet.Mem(U, int32(8*k))
	}
	return snippet.TPOFF(st.sym("slots"), int64(8*k))
}

// slotArray loads into U this thread's slot array of the object (tls:
// indirect), from the object's TLS word; while the word is 0 (the
// thread's first use of the object), it calls the object's
// __vpt_slotsetup_<id>, which has the runtime map one, and loads again:
//
//	1: mov slots@gottpoff(%rip),U; mov %fs:(U),U; test U,U; jnz 2f
//	   lea -128(%rsp),%rsp; call __vpt_slotsetup_<id>; lea 128(%rsp),%rsp; jmp 1b
//	2:
//
// The test changes the flags.
func (st *objState) slotArray(b *snippet.Builder, U snippet.Reg, stepped bool) {
	b.Label("slots")
	b.MovQ(snippet.GOTTPOFF(st.sym("slots")), U)
	b.MovQ(snippet.Mem(U, 0).Seg(snippet.FS), U)
	b.TestQ(U, U)
	b.Jcc(snippet.CondNE, "slotsok")
	if !stepped {
		b.LeaQ(snippet.Mem(snippet.RSP, -redZone), snippet.RSP)
	}
	b.CallSym(st.sym("slotsetup"))
	if !stepped {
		b.LeaQ(snippet.Mem(snippet.RSP, redZone), snippet.RSP)
	}
	b.Jmp("slots")
	b.Label("slotsok")
}

// assemble finishes the snippet in st.b for site k: its code, its
// relocations, and for each label of a siteNop the relocation to the
// site's record.
func (st *objState) assemble(k int, siteLabels ...string) (*ibr.Snippet, error) {
	code, err := st.b.Assemble()
	if err != nil {
		return nil, err
	}
	sn, err := st.convert(code)
	if err != nil {
		return nil, err
	}
	for _, l := range siteLabels {
		sn.Relocs = append(sn.Relocs, ibr.SnippetReloc{Off: code.Labels[l] + 3, Type: elf.R_X86_64_PC32, Sym: st.sym("sites"), Addend: int64(abi.SiteSize*k) - 4})
	}
	return sn, nil
}

// pickRegs chooses need scratch registers: dead ones first, then live ones
// the instruction does not read, to be saved on the stack (borrowed).
func pickRegs(need int, liveRegs, reserved, uses effect.RegSet) (free, borrowed []effect.Reg, err error) {
	for r := effect.Reg(0); r < 16 && len(free) < need; r++ {
		if !reserved.Has(r) && !liveRegs.Has(r) {
			free = append(free, r)
		}
	}
	for r := effect.Reg(15); len(free) < need; r-- {
		if !reserved.Has(r) && !uses.Has(r) && !containsReg(free, r) {
			free = append(free, r)
			borrowed = append(borrowed, r)
		}
		if r == 0 {
			if len(free) < need {
				return nil, nil, fmt.Errorf("no register to spare")
			}
			break
		}
	}
	return free, borrowed, nil
}

func containsReg(rs []effect.Reg, r effect.Reg) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// snippetReg maps an x86asm 64-bit register to the snippet package's.
func snippetReg(r x86asm.Reg) (snippet.Reg, bool) {
	if r == 0 {
		return snippet.NoReg, true
	}
	n, ok := hwReg(r)
	if !ok || r < x86asm.RAX || r > x86asm.R15 {
		return 0, false
	}
	return snippetRegs[n], true
}

// address returns the memory operand of the site's access for lea, with
// rsp-relative displacements adjusted by shift (how far the snippet moved
// rsp), RIP-relative operands referring to the same target and segment
// overrides left to the caller.
func (st *objState) address(s *site, shift int32, extra int64) (snippet.Operand, error) {
	m := s.acc.Mem
	switch {
	case s.rel != nil:
		name := symByIndex + strconv.FormatUint(uint64(s.rel.sym), 10)
		if m.Base == x86asm.RIP {
			return snippet.RIP(name, s.rel.addend+extra), nil
		}
		base, ok1 := snippetReg(m.Base)
		index, ok2 := snippetReg(m.Index)
		if !ok1 || !ok2 {
			return snippet.Operand{}, fmt.Errorf("unsupported address registers %v %v", m.Base, m.Index)
		}
		if base == snippet.RSP {
			extra += int64(shift)
		}
		// The displacement keeps its relocation type: a thread-local
		// variable's offset (lea ignores the %fs the operand carries;
		// the caller adds the segment base) or an absolute address.
		op := snippet.SymAbs(name, s.rel.addend+extra)
		switch s.rel.typ {
		case elf.R_X86_64_TPOFF32:
			op = snippet.TPOFF(name, s.rel.addend+extra)
		case elf.R_X86_64_DTPOFF32:
			op = snippet.DTPOFF(name, s.rel.addend+extra)
		}
		if base != snippet.NoReg {
			op = op.Base(base)
		}
		if index != snippet.NoReg {
			op = op.Index(index, m.Scale)
		}
		return op, nil
	case s.link != nil:
		return snippet.RIP(symLink, extra), nil
	}
	base, ok1 := snippetReg(m.Base)
	index, ok2 := snippetReg(m.Index)
	if !ok1 || !ok2 {
		return snippet.Operand{}, fmt.Errorf("unsupported address registers %v %v (32-bit addressing?)", m.Base, m.Index)
	}
	disp := m.Disp + extra
	if base == snippet.RSP {
		disp += int64(shift)
	}
	if disp != int64(int32(disp)) {
		return snippet.Operand{}, fmt.Errorf("displacement %#x out of range", disp)
	}
	if index == snippet.NoReg {
		return snippet.Mem(base, int32(disp)), nil
	}
	return snippet.MemIndex(base, index, m.Scale, int32(disp)), nil
}

// convert turns assembled code into an ibr.Snippet: placeholder symbols
// become symbol indices, and the link placeholder a same-section link to
// the site's RIP-relative target.
func (st *objState) convert(code snippet.Code) (*ibr.Snippet, error) {
	sn := &ibr.Snippet{Code: code.Bytes}
	s := st.sites[len(st.sites)-1]
	for _, r := range code.Relocs {
		switch {
		case r.Sym == symLink:
			// lea disp32 is the last field of the instruction; the
			// addend carries any extra displacement (plus -4).
			sn.Links = append(sn.Links, ibr.SnippetLink{Off: r.Off, End: r.Off + 4, Target: s.link.Target, Delta: s.link.Delta + r.Addend + 4})
		case strings.HasPrefix(r.Sym, symByIndex):
			k, err := strconv.ParseUint(r.Sym[len(symByIndex):], 10, 32)
			if err != nil {
				return nil, err
			}
			sn.Relocs = append(sn.Relocs, ibr.SnippetReloc{Off: r.Off, Type: r.Type, SymIndex: uint32(k), Addend: r.Addend})
		default:
			sn.Relocs = append(sn.Relocs, ibr.SnippetReloc{Off: r.Off, Type: r.Type, Sym: r.Sym, Addend: r.Addend})
		}
	}
	return sn, nil
}

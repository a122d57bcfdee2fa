package effect

import (
	"fmt"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// Reg numbers the sixteen general registers as the hardware does (the
// ModRM/REX encoding): RAX=0 RCX=1 RDX=2 RBX=3 RSP=4 RBP=5 RSI=6 RDI=7,
// R8..R15=8..15. Sub-registers (EAX, AX, AL, AH, ...) map to their 64-bit
// register.
type Reg uint8

// General registers.
const (
	RAX Reg = iota
	RCX
	RDX
	RBX
	RSP
	RBP
	RSI
	RDI
	R8
	R9
	R10
	R11
	R12
	R13
	R14
	R15
)

var regNames = [16]string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"}

func (r Reg) String() string {
	if r < 16 {
		return regNames[r]
	}
	return fmt.Sprintf("Reg(%d)", uint8(r))
}

// Set returns the set holding only r.
func (r Reg) Set() RegSet { return 1 << (r & 15) }

// RegSet is a set of general registers: bit r stands for register r.
type RegSet uint16

// Register sets of the System V x86-64 ABI, for clients that apply the
// calling convention at calls and returns (Of does not: see Call).
const (
	// AllRegs holds every general register.
	AllRegs RegSet = 0xffff
	// ArgRegs are the integer argument registers rdi rsi rdx rcx r8 r9,
	// plus rax (the vector-register count of variadic calls).
	ArgRegs RegSet = 1<<RDI | 1<<RSI | 1<<RDX | 1<<RCX | 1<<R8 | 1<<R9 | 1<<RAX
	// CallerSaved are the registers a callee may clobber: rax rcx rdx rsi
	// rdi r8-r11.
	CallerSaved RegSet = 1<<RAX | 1<<RCX | 1<<RDX | 1<<RSI | 1<<RDI | 1<<R8 | 1<<R9 | 1<<R10 | 1<<R11
	// CalleeSaved are the registers a callee must preserve: rbx rbp rsp
	// r12-r15.
	CalleeSaved RegSet = 1<<RBX | 1<<RBP | 1<<RSP | 1<<R12 | 1<<R13 | 1<<R14 | 1<<R15
	// ReturnRegs are the integer return-value registers rax rdx.
	ReturnRegs RegSet = 1<<RAX | 1<<RDX
	// SyscallArgs are the registers the Linux syscall instruction reads:
	// the number in rax and the arguments in rdi rsi rdx r10 r8 r9.
	SyscallArgs RegSet = 1<<RAX | 1<<RDI | 1<<RSI | 1<<RDX | 1<<R10 | 1<<R8 | 1<<R9
)

// Has reports whether r is in s.
func (s RegSet) Has(r Reg) bool { return s&(1<<(r&15)) != 0 }

// String formats the set as "{rax,rbx}".
func (s RegSet) String() string {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for r := Reg(0); r < 16; r++ {
		if s.Has(r) {
			if !first {
				b.WriteByte(',')
			}
			first = false
			b.WriteString(r.String())
		}
	}
	b.WriteByte('}')
	return b.String()
}

// Flags is a set of the status flags of RFLAGS and the direction flag, one
// bit each. Other RFLAGS bits (TF, IF, AC, ID, ...) are not tracked.
type Flags uint8

// Flag bits.
const (
	CF Flags = 1 << iota // carry
	PF                   // parity
	AF                   // auxiliary carry
	ZF                   // zero
	SF                   // sign
	OF                   // overflow
	DF                   // direction

	// Status is the six arithmetic status flags.
	Status = CF | PF | AF | ZF | SF | OF
	// AllFlags is every tracked flag.
	AllFlags = Status | DF
)

var flagNames = [...]string{"CF", "PF", "AF", "ZF", "SF", "OF", "DF"}

// String formats the set as "CF|ZF", or "-" when empty.
func (f Flags) String() string {
	if f == 0 {
		return "-"
	}
	var b strings.Builder
	for i, n := range flagNames {
		if f&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(n)
		}
	}
	if f&^AllFlags != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		fmt.Fprintf(&b, "%#x", uint8(f&^AllFlags))
	}
	return b.String()
}

// Control says how an instruction transfers control.
type Control uint8

// Control values.
const (
	// None: execution continues with the next instruction.
	None Control = iota
	// Jump is a direct unconditional jump (jmp rel).
	Jump
	// CondJump is a direct conditional branch: jcc, jrcxz/jecxz,
	// loop/loope/loopne, and xbegin (whose target is the abort handler).
	CondJump
	// IndirectJump is a jump through a register or memory (jmp *x), or
	// a far jump.
	IndirectJump
	// Call is a direct call (call rel). See Effect for what Of reports.
	Call
	// IndirectCall is a call through a register or memory, or a far call.
	IndirectCall
	// Return is ret, ret imm16, and far returns (lret, iret; Known=false).
	Return
	// Syscall is syscall: the kernel runs, then execution continues with
	// the next instruction.
	Syscall
	// Interrupt is int n, int3, int1 (icebp), into: a trap into the kernel
	// that becomes a signal; if a handler returns, execution continues
	// with the next instruction, so clients must treat it as falling
	// through.
	Interrupt
	// Trap never falls through: ud0, ud1, ud2, hlt (#GP in user mode).
	Trap
)

var ctrlNames = [...]string{"none", "jump", "condjump", "indirectjump", "call",
	"indirectcall", "return", "syscall", "interrupt", "trap"}

func (c Control) String() string {
	if int(c) < len(ctrlNames) {
		return ctrlNames[c]
	}
	return fmt.Sprintf("Control(%d)", uint8(c))
}

// FallsThrough reports whether execution may continue with the next
// instruction.
func (c Control) FallsThrough() bool {
	switch c {
	case Jump, IndirectJump, Return, Trap:
		return false
	}
	return true
}

// Access is one memory access of an instruction.
//
// Mem is the address expression as the CPU evaluates it from the register
// values *before* the instruction (also for implicit operands: a push
// writes [RSP-8], a pop to memory based on RSP gets the displacement the
// CPU uses after incrementing RSP). Register widths in Base and Index give
// the address size: with a 67 prefix they are 32-bit registers (EAX, ESI,
// ...). Segment is FS or GS when such an override applies (those segments
// have a non-zero base in 64-bit mode), else 0: ES, CS, SS and DS have base
// 0 and are dropped. Base RIP means RIP-relative; the displacement is
// relative to the end of the instruction. Scale is 0 when there is no
// index. The index of xlat is AL (zero-extended); for VSIB accesses Index
// is a vector register.
type Access struct {
	// Arg is the index in x86asm Args of the memory operand, or -1 for an
	// implicit access.
	Arg int
	Mem x86asm.Mem
	// Size is the number of bytes accessed, or 0 when it is unknown or
	// variable: rep string operations (see Rep and Elem), xsave/xrstor
	// areas (their size depends on the enabled state components).
	Size int
	// Elem is the element size in bytes of a string operation (1, 2, 4,
	// 8) or of a gather/scatter; 0 otherwise.
	Elem int
	// (The flags below come last, together: an Access is 48 bytes, not
	// 56, and an Effect holds two of them for every instruction.)
	// Read and Write tell the direction; both for read-modify-write
	// operands (add to memory, xchg, cmpxchg, xadd, bts, ...).
	Read, Write bool
	// Rep marks a rep-prefixed string operation: it accesses RCX (ECX
	// with a 67 prefix) elements of Elem bytes starting at Mem, forwards
	// when DF is clear and backwards (the range ends at Mem+Elem) when it
	// is set. repe/repne cmps and scas may stop early. Size is 0.
	Rep bool
	// VSIB marks a gather or scatter: Index is a vector register, each
	// element has its own address Base + Scale*Index[i] + Disp, and Size
	// is the total number of bytes of the data elements.
	VSIB bool
	// Masked marks an access that may touch only some of its bytes, and
	// never faults on the others: AVX-512 operands with an opmask
	// (including compress/expand), vmaskmov/vpmaskmov, maskmovdqu/
	// maskmovq. Size is the maximum.
	Masked bool
	// BitOffset marks bt/bts/btr/btc with a memory operand and a register
	// bit offset (Args[1]): the signed offset selects a bit anywhere
	// relative to Mem, so the byte accessed is Mem + (offset >> 3) (the
	// CPU accesses the Size-byte word containing it).
	BitOffset bool
}

// String formats the access as "RW 8 [rax+0x8]".
func (a Access) String() string {
	var b strings.Builder
	if a.Read {
		b.WriteByte('R')
	}
	if a.Write {
		b.WriteByte('W')
	}
	fmt.Fprintf(&b, " %d ", a.Size)
	b.WriteString(memString(a.Mem))
	if a.Rep {
		fmt.Fprintf(&b, " rep*%d", a.Elem)
	}
	if a.VSIB {
		fmt.Fprintf(&b, " vsib*%d", a.Elem)
	}
	if a.Masked {
		b.WriteString(" masked")
	}
	if a.BitOffset {
		b.WriteString(" bitoffset")
	}
	if a.Arg < 0 {
		b.WriteString(" implicit")
	}
	return b.String()
}

func memString(m x86asm.Mem) string {
	s := ""
	switch m.Segment {
	case x86asm.FS:
		s = "fs:"
	case x86asm.GS:
		s = "gs:"
	}
	s += "["
	sep := ""
	if m.Base != 0 {
		s += strings.ToLower(m.Base.String())
		sep = "+"
	}
	if m.Index != 0 {
		s += sep + strings.ToLower(m.Index.String())
		if m.Scale > 1 {
			s += fmt.Sprintf("*%d", m.Scale)
		}
		sep = "+"
	}
	if m.Disp != 0 || sep == "" {
		if m.Disp < 0 {
			s += fmt.Sprintf("-%#x", -m.Disp)
		} else {
			s += fmt.Sprintf("%s%#x", sep, m.Disp)
		}
	}
	return s + "]"
}

// MaxAccesses is the largest number of memory accesses one instruction
// has (movs, cmps, push/pop/call with a memory operand, enter).
const MaxAccesses = 2

// Effect is what one instruction reads and writes.
//
// Register and flag sets obey these invariants, so that a liveness client
// can use live_in = Use ∪ (live_out − Def) and flags_in = FlagsUse ∪
// (flags_out − FlagsDef) and nothing else:
//
//   - Partial ⊆ Use (a partial write keeps the rest of the register).
//   - Def ∩ Partial = ∅.
//   - FlagsMay ⊆ FlagsUse, and FlagsMay ∩ FlagsDef = ∅.
//   - FlagsPass ⊆ FlagsMay (a finer liveness: see FlagsPass).
//   - FlagsUndef ⊆ FlagsDef.
//   - A register the instruction may change is in Def ∪ Partial; a flag it
//     may change is in FlagsDef ∪ FlagsMay.
//
// Calls: Of reports what the call instruction itself does (Use and Def
// RSP, read the target operand, write the return address at [RSP-8]) and
// Ctrl=Call/IndirectCall. The callee's effect is not included: the client
// applies the ABI (ArgRegs used, CallerSaved and Status flags clobbered, DF
// clear) or knows better. Likewise Return only reports RSP and the read of
// the return address; ReturnRegs and CalleeSaved being live there is the
// ABI's business. Syscall reports the Linux convention (see SyscallArgs).
type Effect struct {
	// Use holds the registers whose value is read: explicit and implicit
	// operands, address registers of memory operands (also for lea,
	// prefetch and clflush; not for multi-byte nop), and every register
	// in Partial. Zero idioms (xor/sub/sbb/cmp of a register with itself)
	// do not use it.
	Use RegSet
	// Def holds the registers certainly and fully overwritten: 64-bit
	// results, and 32-bit results (which zero-extend). A register may be
	// in Use and Def (add %rax,%rax).
	Def RegSet
	// Partial holds registers that are written partly (8- and 16-bit
	// results) or only maybe (cmov r64, bsf/bsr, cmpxchg's rax, rep lods,
	// rdssp): their old value can survive, so they are also in Use.
	Partial RegSet
	// FlagsUse holds the flags read, including FlagsMay.
	FlagsUse Flags
	// FlagsDef holds the flags whose old value is dead after the
	// instruction: written, or left undefined by the architecture.
	FlagsDef Flags
	// FlagsUndef is the part of FlagsDef the architecture leaves
	// undefined (e.g. SF ZF AF PF after mul). Compilers never read them.
	FlagsUndef Flags
	// FlagsMay holds flags that may or may not be written (shifts and
	// rotates by CL, whose count may be 0; repe cmps with RCX 0): their
	// old value may survive, so they are in FlagsUse too.
	FlagsMay Flags
	// FlagsPass is the part of FlagsMay the instruction does not read
	// itself (all of it but rcl/rcr's CF): such a flag is live before
	// the instruction only where it is live after it (its old value
	// passes through when the count is 0), so a liveness client may take
	// flags_in = (FlagsUse − FlagsPass) ∪ (flags_out − FlagsDef). Without
	// it, every shift by CL would keep the flags of the instruction
	// before it live, whether anything reads them or not.
	FlagsPass Flags
	// Ctrl tells how the instruction transfers control.
	Ctrl Control
	// Known is false when the instruction's semantics are not modelled
	// (undecodable, privileged, rare or vendor-specific encodings). Of then
	// reports the conservative answer: Use=Partial=AllRegs,
	// FlagsUse=FlagsMay=AllFlags, so a client that only reads the sets
	// stays safe. Such an instruction may also access memory anywhere:
	// when it has an explicit memory operand, Mem holds it as one access
	// with Read and Write set (Size from x86asm, possibly 0), but there
	// may be others. Ctrl is still set when the encoding says it is a
	// branch.
	Known bool
	// Mem holds the memory accesses, NMem of them. lea, nop, prefetch*,
	// clflush, clflushopt, clwb, cldemote and the gather/scatter prefetches
	// have none. The kernel's accesses during syscall are not included.
	Mem  [MaxAccesses]Access
	NMem int
}

// LiveIn returns the registers live before the instruction when out are
// live after it: Use ∪ (out − Def) (Use holds Partial). Calls and returns
// get no ABI here.
func (e *Effect) LiveIn(out RegSet) RegSet { return e.Use | out&^e.Def }

// FlagsLiveIn returns the flags live before the instruction when out are
// live after it: (FlagsUse − FlagsPass) ∪ (out − FlagsDef) (FlagsUse holds
// FlagsMay).
func (e *Effect) FlagsLiveIn(out Flags) Flags { return e.FlagsUse&^e.FlagsPass | out&^e.FlagsDef }

// Accesses returns the memory accesses, e.Mem[:e.NMem].
func (e *Effect) Accesses() []Access { return e.Mem[:e.NMem] }

// Reads reports whether the instruction may read memory.
func (e *Effect) Reads() bool {
	for i := 0; i < e.NMem; i++ {
		if e.Mem[i].Read {
			return true
		}
	}
	return false
}

// Writes reports whether the instruction may write memory.
func (e *Effect) Writes() bool {
	for i := 0; i < e.NMem; i++ {
		if e.Mem[i].Write {
			return true
		}
	}
	return false
}

// String formats the effect for dumps, e.g.
// "use={rax} def={rcx} fdef=CF|PF|AF|ZF|SF|OF mem=[R 8 [rax+0x8]]".
// Empty parts are left out.
func (e Effect) String() string {
	var parts []string
	if !e.Known {
		// The sets are the conservative fill-in; say so briefly.
		parts = append(parts, "unknown")
	}
	if e.Use != 0 && e.Known {
		parts = append(parts, "use="+e.Use.String())
	}
	if e.Def != 0 {
		parts = append(parts, "def="+e.Def.String())
	}
	if e.Partial != 0 && e.Known {
		parts = append(parts, "partial="+e.Partial.String())
	}
	if e.FlagsUse != 0 && e.Known {
		parts = append(parts, "fuse="+e.FlagsUse.String())
	}
	if e.FlagsDef != 0 {
		parts = append(parts, "fdef="+e.FlagsDef.String())
	}
	if e.FlagsUndef != 0 {
		parts = append(parts, "fundef="+e.FlagsUndef.String())
	}
	if e.FlagsMay != 0 && e.Known {
		parts = append(parts, "fmay="+e.FlagsMay.String())
	}
	if e.FlagsPass != 0 {
		parts = append(parts, "fpass="+e.FlagsPass.String())
	}
	if e.NMem > 0 {
		var ms []string
		for _, a := range e.Accesses() {
			ms = append(ms, a.String())
		}
		parts = append(parts, "mem=["+strings.Join(ms, "; ")+"]")
	}
	if e.Ctrl != None {
		parts = append(parts, "ctrl="+e.Ctrl.String())
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " ")
}

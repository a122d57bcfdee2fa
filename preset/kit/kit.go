// Package kit is the insertion kit: what every preset needs to put code
// into an object without changing what the object's own code computes.
//
// A preset decides what to insert and where (which instructions, which
// data); kit answers the questions every one of them shares:
//
//   - Where code may go: Before steps back over a prefix the instruction
//     is glued to; Place also looks back in the block for a point where
//     the status flags are dead, so that the code need not save them;
//     FallThrough says whether code after an instruction runs on its
//     fall-through path. Analyze gives the control flow and liveness they
//     rest on. RedZone is the stack below rsp that the interrupted code
//     may be using: Builder.Save steps over it.
//   - Which registers inserted code may use: Scratch picks dead registers
//     from liveness (cfg.Liveness) and borrows live ones, to be saved and
//     restored (Builder.Save, Builder.Restore), when too few are dead.
//   - How inserted code refers to things: a Ref is an existing symbol by
//     index (Indexed: what the instrumented instruction's relocation names),
//     a symbol by name (Named: a runtime entry point, a local symbol the
//     preset added) or a place in the section the code goes into (Link:
//     the target of a RIP-relative operand hijack resolved without a
//     relocation). Builder, a snippet.Builder that also takes Refs
//     (Builder.RIP, Builder.Abs, Builder.Field, and Builder.Address for
//     the instrumented instruction's own operand with its DispRel), assembles
//     into an *ibr.Snippet whose Relocs and Links say exactly that: no
//     symbol name carries an index or a link.
//   - What an object gains once: new sections and local symbols (Object),
//     code of its own with its relocations (Object.SetCode), constructor
//     and destructor entries (Object.Constructor, Object.Destructor),
//     per-thread slot arrays in TLS for the local-exec, initial-exec and
//     indirect models (Slots), and string tables (StringTable).
//   - Neutral padding: Nops.
//
// A new preset typically analyses an object and sets up an Object and its
// symbols when it begins the object (local symbols first: adding one
// renumbers the globals, and Indexed refers to symbols by number), then
// for every instruction it
// instruments asks Place or Before where its code goes, picks registers
// with Scratch from the liveness there, builds the code with a Builder and
// inserts the assembled snippet with ibr.Section.InsertBefore; when every
// rule ran it fills its sections, sets its symbols' values and sizes, and
// adds its own code and constructors. The example shows the whole cycle.
package kit

import (
	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg/effect"
	"hijack/emit"
	"hijack/snippet"
)

// RedZone is the part of the stack below rsp that a function may use
// without moving rsp (System V x86-64 ABI, 128 bytes): inserted code that
// pushes or calls steps over it first, or it would overwrite what the
// interrupted code keeps there.
const RedZone = 128

// regs maps hardware register numbers to the snippet package's.
var regs = [16]snippet.Reg{snippet.RAX, snippet.RCX, snippet.RDX, snippet.RBX, snippet.RSP, snippet.RBP, snippet.RSI, snippet.RDI,
	snippet.R8, snippet.R9, snippet.R10, snippet.R11, snippet.R12, snippet.R13, snippet.R14, snippet.R15}

// Reg returns the snippet register of the general register r (liveness
// and Scratch number registers as the hardware does).
func Reg(r effect.Reg) snippet.Reg { return regs[r&15] }

// AsmReg returns the snippet register of a 64-bit general register as
// x86asm decodes it, and snippet.NoReg for 0 (no register): what a memory
// operand's base or index becomes in inserted code. Other registers (of
// other widths, RIP, segment or vector registers) are not ok.
func AsmReg(r x86asm.Reg) (snippet.Reg, bool) {
	if r == 0 {
		return snippet.NoReg, true
	}
	if r < x86asm.RAX || r > x86asm.R15 {
		return snippet.NoReg, false
	}
	return regs[r-x86asm.RAX], true
}

// AddrRegs returns the general registers a memory operand reads to form
// its address (base and index, of any width).
func AddrRegs(m x86asm.Mem) effect.RegSet {
	var s effect.RegSet
	for _, r := range [...]x86asm.Reg{m.Base, m.Index} {
		if n, _, ok := effect.GPR(r); ok {
			s |= n.Set()
		}
	}
	return s
}

// Nops returns n bytes of no-op instructions, as few as possible (the
// recommended multi-byte NOPs, up to 10 bytes each): code that changes
// nothing but where everything after it lies.
func Nops(n int) []byte {
	b := make([]byte, n)
	emit.FillNops(b)
	return b
}

// Package snippet assembles the small x86-64 instruction sequences that
// presets insert into rewritten code, and returns their machine code with
// ELF (R_X86_64_*) relocations.
//
// It drives golang-asm (github.com/twitchyliquid64/golang-asm, the
// extracted cmd/internal/obj) in-process: every Builder owns an obj.Link
// context for linux/amd64, and Assemble runs the x86 back end on each
// instruction collected so far, alone, except jumps to the snippet's
// labels, which Assemble sizes and encodes itself, as golang-asm would for
// the whole sequence (short first, long where a label is out of reach,
// until nothing changes). A Builder keeps every instruction it encoded,
// without the offsets from symbols (those go into relocation addends): a
// preset's sites repeat the same instructions, which are then encoded
// once. golang-asm reports relocations in Go's own
// kinds (R_PCREL, R_GOTPCREL, R_CALL) and cannot express some operands
// gas-style code needs; Builder translates and fills in:
//
//   - RIP-relative operands (RIP, GOTPCREL, GOTPCRELX, GOTTPOFF) and
//     CallSym/JmpSym use golang-asm's relocation for the field position;
//     the ELF type and addend come from the Operand (the addend accounts for
//     immediates after the displacement, which golang-asm gets wrong for
//     GOTPCREL).
//   - Symbolic absolute displacements with any base and index (SymAbs,
//     TPOFF: golang-asm has no `sym(%reg)` or `%fs:sym@tpoff` for arbitrary
//     symbols) are assembled with a placeholder displacement that Assemble
//     locates and zeroes.
//   - Symbolic immediates (SymImm, SymImm32, SymImm64) use a placeholder in
//     the instruction's last 4 or 8 bytes.
//   - Segment overrides on memory operands with a base or index
//     (%fs:8(%rcx)), which golang-asm cannot express, are emitted as a
//     one-byte prefix (0x64/0x65) before the instruction, which is the same
//     encoding gas produces.
//
// Code written between Cold and Hot is the snippet's cold part, which
// runs rarely (a miss path): Assemble lays it out after the rest
// (Code.Split) and makes every jump between the parts rel32 (listed in
// Code.Crossings), so that a caller may place it out of line.
//
// Operands are written in AT&T order (source, destination) by all helpers;
// only Inst uses Go assembly order. Instructions that golang-asm does not
// know can be written with Bytes.
//
// A typical site snippet:
//
//	b := snippet.New()
//	b.LeaQ(snippet.Mem(snippet.RSP, -128), snippet.RSP) // step over the red zone
//	b.PushQ(snippet.RAX)
//	b.LeaQ(snippet.MemIndex(snippet.RDI, snippet.RSI, 8, 24), snippet.RAX)
//	b.MovQ(snippet.RAX, snippet.TPOFF("vpt_last", 0))    // mov %rax, %fs:vpt_last@tpoff
//	b.PopQ(snippet.RAX)
//	b.LeaQ(snippet.Mem(snippet.RSP, 128), snippet.RSP)
//	code, err := b.Assemble()
//
// Immediates are range-checked (golang-asm silently truncates, e.g.
// `addq $0xffffffff` would become `addq $-1`): 64-bit operations take
// sign-extended 32-bit immediates, only MovQ into a register takes 64 bits.
//
// Assembling a 15-instruction snippet takes about 2.5µs with a reused
// Builder that has encoded its instructions before (BenchmarkAssemble15;
// 15µs with a new one): assemble per site and reuse one Builder per
// goroutine (nothing in this package modifies a Code it returned).
package snippet

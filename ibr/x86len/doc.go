// Package x86len decodes the layout of x86-64 (64-bit mode) instructions:
// the exact length and the position of every field (prefixes, REX, escape
// or VEX/EVEX/XOP/REX2 prefix, opcode, ModRM, SIB, displacement,
// immediate, branch displacement). It says nothing about operands'
// meaning; it is the rewriter's authority on instruction boundaries and on
// where the bytes that must be re-encoded when code moves (RIP-relative
// displacements, PC-relative branches) lie.
//
// It is table-driven and independent of golang.org/x/arch/x86/x86asm,
// which silently mis-decodes some encodings that compilers and hand-written
// assembly emit (endbr64, adcx/adox, 67/3e-prefixed VEX, vzeroupper,
// mov cr/dr, EVEX maps 5/6) and rejects others (XOP, FMA4, rdpkru).
//
// Coverage: all legacy one-byte, 0f, 0f 38, 0f 3a and 3DNow! opcodes;
// VEX (maps 0f, 0f 38, 0f 3a, 7); EVEX (maps 0f, 0f 38, 0f 3a, 5, 6);
// XOP (maps 8, 9, 0Ah); APX REX2 including jmpabs. The legacy maps are
// checked opcode by opcode, and undefined opcodes and group members are
// rejected with ErrInvalid. Inside VEX, EVEX and XOP maps the layout is
// uniform per map (every opcode takes a ModRM except VEX vzeroupper/
// vzeroall; the imm8 opcodes of map 0f are listed; maps 0f 3a and XOP 8
// always have an imm8 or is4 byte, XOP 0Ah an imm32), so an undefined
// opcode there decodes with the map's layout instead of failing. EVEX
// maps 4 and 7 (APX-promoted and AVX10.2 instructions) return
// ErrUnsupported.
//
// Conventions where decoders differ:
//   - Near branches (e8, e9, 0f 80-8f) ignore a 66 prefix in 64-bit mode
//     and keep a rel32, as on Intel 64; AMD64 (and GNU objdump) use rel16.
//     xbegin honours 66 (rel16) on both.
//   - A REX byte followed by another prefix is ignored by the CPU and
//     belongs to the following instruction (objdump prints it alone).
//   - fwait (9b) is an instruction of its own (objdump folds it into a
//     following x87 instruction such as fstsw).
//   - A VEX, EVEX or XOP prefix after 66, f2, f3, f0 or REX raises #UD and
//     is rejected; 67 and segment prefixes are allowed.
//   - mov to/from control and debug registers (0f 20-23) ignore
//     ModRM.mod: there is never a SIB or displacement.
package x86len

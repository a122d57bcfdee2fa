package snippet_test

import (
	"fmt"

	. "hijack/snippet"
)

func Example() {
	b := New()
	b.MovQ(GOTTPOFF("vpt_buf"), RCX)                   // mov vpt_buf@gottpoff(%rip), %rcx
	b.CmpQ(RAX, Mem(RCX, 8).Seg(FS))                   // cmp %rax, %fs:8(%rcx)
	b.Jcc(CondE, "same")                               // je same
	b.MovQ(RAX, Mem(RCX, 8).Seg(FS))                   // mov %rax, %fs:8(%rcx)
	b.AddQ(Imm(1), RIP("vpt_changes", 0))              // addq $1, vpt_changes(%rip)
	b.MovQ(SymImm("site_17", 0), TPOFF("vpt_site", 0)) // movq $site_17, %fs:vpt_site@tpoff
	b.CallSym("vpt_flush")                             // call vpt_flush
	b.Label("same")
	code, err := b.Assemble()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("% x\n", code.Bytes)
	for _, r := range code.Relocs {
		fmt.Printf("%#02x %v %s%+d\n", r.Off, r.Type, r.Sym, r.Addend)
	}
	fmt.Println("same at", code.Labels["same"])
	// Output:
	// 48 8b 0d 00 00 00 00 64 48 39 41 08 74 1f 64 48 89 41 08 48 83 05 00 00 00 00 01 64 48 c7 04 25 00 00 00 00 00 00 00 00 e8 00 00 00 00
	// 0x03 R_X86_64_GOTTPOFF vpt_buf-4
	// 0x16 R_X86_64_PC32 vpt_changes-5
	// 0x20 R_X86_64_TPOFF32 vpt_site+0
	// 0x24 R_X86_64_32S site_17+0
	// 0x29 R_X86_64_PLT32 vpt_flush-4
	// same at 45
}

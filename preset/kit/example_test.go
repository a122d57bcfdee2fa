package kit_test

import (
	"debug/elf"
	"fmt"
	"log"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg/effect"
	"hijack/emit"
	"hijack/ibr"
	"hijack/preset/kit"
	"hijack/snippet"
)

// A preset that counts, per thread, the stores of every function and keeps
// the address each store last wrote: two per-thread slots per store, in a
// TLS array of the object, and a constructor that hands the array's
// offset from the thread pointer and its length to a runtime
// (count_register, not part of the example).
func Example() {
	// f:	cmp %esi,%edi; mov %edi,x(%rip); mov %esi,8(%rdx); sete %al; ret
	o := exampleObject()

	// Begin: sections and local symbols first (they renumber the
	// globals), and the analyses, before any code goes in.
	x, err := kit.NewObject(o.File)
	if err != nil {
		log.Fatal(err)
	}
	tbss := x.AddSection(".tbss.count", kit.TLS, 8)
	text := x.AddSection(".text.count", kit.Text, 16)
	if err := x.AddLocal("count_slots", elf.STT_TLS, tbss); err != nil {
		log.Fatal(err)
	}
	if err := x.AddLocal("count_ctor", elf.STT_FUNC, text); err != nil {
		log.Fatal(err)
	}
	slots := kit.Slots{Model: kit.LocalExec, Sym: "count_slots"}
	an := kit.Analyze(o)

	// Apply: one snippet per store.
	b := kit.NewBuilder()
	n := 0
	for _, fn := range o.Funcs {
		g, lv := an.Func(fn)
		for i := fn.Start; i < fn.End; i++ {
			e := lv.Effect(i)
			for _, acc := range e.Mem[:e.NMem] {
				if !acc.Write || acc.Arg < 0 {
					continue
				}
				// addq changes the flags: go where they are dead.
				at, ok := kit.Place(g, lv, i, kit.AddrRegs(acc.Mem))
				if !ok || lv.Before(at).Flags&effect.Status != 0 {
					continue // (a real preset would save them)
				}
				free, borrowed, err := kit.Scratch(1, lv.Before(at).Regs, 1<<effect.RSP, kit.AddrRegs(acc.Mem))
				if err != nil {
					log.Fatal(err)
				}
				b.AddQ(snippet.Imm(1), slots.At(b, 2*n, snippet.NoReg, true, false))
				var shift int32
				if len(borrowed) > 0 {
					shift = b.Save(borrowed...)
				}
				rel, _ := kit.DispRel(o.File, fn.Section, i)
				ea, err := b.Address(acc.Mem, rel, fn.Section.Insts[i].Link, shift, 0)
				if err != nil {
					log.Fatal(err)
				}
				b.LeaQ(ea, kit.Reg(free[0]))
				b.MovQ(kit.Reg(free[0]), slots.At(b, 2*n+1, snippet.NoReg, true, false))
				if len(borrowed) > 0 {
					b.Restore(borrowed...)
				}
				sn, err := b.Assemble()
				if err != nil {
					log.Fatal(err)
				}
				if err := fn.Section.InsertBefore(at, sn); err != nil {
					log.Fatal(err)
				}
				fmt.Printf("store at %d, code before %d:\n", i, at)
				printSnippet(sn)
				n++
			}
		}
	}

	// Finish: the slots' size, the constructor's code and entry.
	x.SetSize(tbss, slots.Size(2*n))
	if err := x.SetSymbol("count_slots", 0, slots.Size(2*n)); err != nil {
		log.Fatal(err)
	}
	b.LeaQ(snippet.TPOFF("count_slots", 0), snippet.RDI) // lea %fs:count_slots@tpoff,%rdi
	b.MovQ(snippet.Imm(int64(2*n)), snippet.RSI)
	b.JmpGOT("count_register")
	ctor, err := b.Assemble()
	if err != nil {
		log.Fatal(err)
	}
	if err := x.SetCode(text, ctor); err != nil {
		log.Fatal(err)
	}
	if err := x.SetSymbol("count_ctor", 0, uint64(len(ctor.Code))); err != nil {
		log.Fatal(err)
	}
	if err := x.Constructor("count_ctor", kit.NoPriority); err != nil {
		log.Fatal(err)
	}
	fmt.Println("constructor:")
	printSnippet(ctor)

	// The rewrite pipeline then lays the code out and writes the object.
	if err := emit.Emit(o, func(w string) { fmt.Println("warning:", w) }); err != nil {
		log.Fatal(err)
	}
	if _, err := o.File.Write(); err != nil {
		log.Fatal(err)
	}
	var added []string
	for _, s := range o.File.Sections[o.File.SymtabNdx+1:] {
		added = append(added, s.Name)
	}
	fmt.Println("sections after .symtab:", strings.Join(added, " "))
	// Output:
	// store at 1, code before 0:
	// 	addq $0x1,%fs: 		R_X86_64_TPOFF32 count_slots+0
	// 	lea (%rip),%rcx 		R_X86_64_PC32 symbol #1-4
	// 	mov %rcx,%fs: 		R_X86_64_TPOFF32 count_slots+8
	// store at 2, code before 0:
	// 	addq $0x1,%fs: 		R_X86_64_TPOFF32 count_slots+16
	// 	lea 0x8(%rdx),%rcx
	// 	mov %rcx,%fs: 		R_X86_64_TPOFF32 count_slots+24
	// constructor:
	// 	lea %fs:,%rdi 		R_X86_64_TPOFF32 count_slots+0
	// 	mov $0x4,%rsi
	// 	jmpq *(%rip) 		R_X86_64_GOTPCRELX count_register-4
	// sections after .symtab: .text .bss .rela.text .tbss.count .text.count .rela.text.count .init_array .rela.init_array
}

// printSnippet disassembles a snippet, one instruction a line with the
// relocations and links of its fields.
func printSnippet(sn *ibr.Snippet) {
	for off := 0; off < len(sn.Code); {
		in, err := x86asm.Decode(sn.Code[off:], 64)
		if err != nil {
			log.Fatal(err)
		}
		line := "\t" + x86asm.GNUSyntax(in, 0, nil)
		for _, r := range sn.Relocs {
			if r.Off >= off && r.Off < off+in.Len {
				sym := r.Sym
				if r.SymIndex != 0 {
					sym = fmt.Sprintf("symbol #%d", r.SymIndex)
				}
				line += fmt.Sprintf(" \t\t%v %s%+d", r.Type, sym, r.Addend)
			}
		}
		for _, l := range sn.Links {
			if l.Off >= off && l.Off < off+in.Len {
				line += fmt.Sprintf(" \t\tlink to instruction %d%+d", l.Target, l.Delta)
			}
		}
		fmt.Println(line)
		off += in.Len
	}
}

// exampleObject is an object with one function f, as gcc would compile
//
//	static int x[16];
//	bool f(int a, int b, int *p) { x[0] = a; p[2] = b; return a == b; }
//
// with the compare scheduled first.
func exampleObject() *ibr.Object {
	code := []byte{
		0x39, 0xf7, // cmp %esi,%edi
		0x89, 0x3d, 0, 0, 0, 0, // mov %edi,x(%rip)
		0x89, 0x72, 0x08, // mov %esi,8(%rdx)
		0x0f, 0x94, 0xc0, // sete %al
		0xc3, // ret
	}
	o, err := buildObject([]fn{{"f", code}}, []reloc{{4, elf.R_X86_64_PC32, "x", -4}})
	if err != nil {
		log.Fatal(err)
	}
	return o
}

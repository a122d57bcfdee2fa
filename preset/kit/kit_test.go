package kit_test

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"hijack/cfg/effect"
	"hijack/ibr"
	"hijack/preset/kit"
	"hijack/snippet"
)

func regs(rs ...effect.Reg) effect.RegSet {
	var s effect.RegSet
	for _, r := range rs {
		s |= r.Set()
	}
	return s
}

func TestScratch(t *testing.T) {
	const rsp = 1 << effect.RSP
	tests := []struct {
		name                string
		need                int
		live, reserved, use effect.RegSet
		free, borrowed      []effect.Reg
		err                 bool
	}{
		{"dead from rax up", 2, regs(effect.RAX), rsp, 0, []effect.Reg{effect.RCX, effect.RDX}, nil, false},
		{"none needed", 0, effect.AllRegs, rsp, 0, nil, nil, false},
		{"reserved skipped", 1, 0, rsp | regs(effect.RAX, effect.RCX), 0, []effect.Reg{effect.RDX}, nil, false},
		{"borrow from r15 down", 2, effect.AllRegs &^ regs(effect.RBX), rsp, 0, []effect.Reg{effect.RBX, effect.R15}, []effect.Reg{effect.R15}, false},
		{"uses not borrowed", 2, effect.AllRegs, rsp, regs(effect.R15, effect.R14), []effect.Reg{effect.R13, effect.R12}, []effect.Reg{effect.R13, effect.R12}, false},
		{"reserved not borrowed", 1, effect.AllRegs, rsp | regs(effect.R15), 0, []effect.Reg{effect.R14}, []effect.Reg{effect.R14}, false},
		{"dead register not borrowed twice", 3, effect.AllRegs &^ regs(effect.R15), rsp, 0, []effect.Reg{effect.R15, effect.R14, effect.R13}, []effect.Reg{effect.R14, effect.R13}, false},
		{"all fifteen", 15, effect.AllRegs, rsp, 0, nil, nil, false},
		{"sixteen", 16, 0, rsp, 0, nil, nil, true},
		{"uses everything", 1, effect.AllRegs, rsp, effect.AllRegs, nil, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			free, borrowed, err := kit.Scratch(tc.need, tc.live, tc.reserved, tc.use)
			if tc.err {
				if !errors.Is(err, kit.ErrNoScratch) {
					t.Fatalf("err = %v, want ErrNoScratch", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(free) != tc.need {
				t.Fatalf("free = %v, want %d registers", free, tc.need)
			}
			seen := effect.RegSet(0)
			for _, r := range free {
				if tc.reserved.Has(r) || seen.Has(r) {
					t.Errorf("free %v: %v reserved or twice", free, r)
				}
				seen |= r.Set()
				isBorrowed := false
				for _, b := range borrowed {
					isBorrowed = isBorrowed || b == r
				}
				if tc.live.Has(r) != isBorrowed {
					t.Errorf("%v: live %v but borrowed %v", r, tc.live.Has(r), isBorrowed)
				}
				if isBorrowed && tc.use.Has(r) {
					t.Errorf("borrowed %v, which the instruction reads", r)
				}
			}
			if tc.free != nil && !reflect.DeepEqual(free, tc.free) {
				t.Errorf("free = %v, want %v", free, tc.free)
			}
			if tc.free != nil && !reflect.DeepEqual(borrowed, tc.borrowed) {
				t.Errorf("borrowed = %v, want %v", borrowed, tc.borrowed)
			}
		})
	}
}

// Instructions of the placement tests (checked against gas).
var (
	cmpESIEDI  = []byte{0x39, 0xf7}       // cmp %esi,%edi
	movEDXECX  = []byte{0x89, 0xd1}       // mov %edx,%ecx
	storeEDI   = []byte{0x89, 0x3e}       // mov %edi,(%rsi)
	seteAL     = []byte{0x0f, 0x94, 0xc0} // sete %al
	movRDXRSI  = []byte{0x48, 0x89, 0xd6} // mov %rdx,%rsi
	testEAX    = []byte{0x85, 0xc0}       // test %eax,%eax
	movsq      = []byte{0x48, 0xa5}       // movsq
	ret        = []byte{0xc3}
	loadEAX    = []byte{0x8b, 0x07} // mov (%rdi),%eax
	tlsgdLoad  = []byte{0x66, 0x48, 0x8d, 0x3d, 0, 0, 0, 0}
	tlsgdCall  = []byte{0x66, 0x66, 0x48, 0xe8, 0, 0, 0, 0}
	repPrefix  = []byte{0xf3}
	jneBack    = func(n int) []byte { return []byte{0x75, byte(-2 - n)} }
	jeForward1 = []byte{0x74, 0x01} // je over one byte
)

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func TestPlace(t *testing.T) {
	tests := []struct {
		name   string
		code   []byte
		relocs []reloc
		i      int // instruction index
		keep   effect.RegSet
		before int // Before's answer, -1: none
		place  int // Place's answer
	}{
		{"flags dead", cat(loadEAX, ret), nil, 0, regs(effect.RDI), 0, 0},
		{"flags live: back to the compare", cat(cmpESIEDI, movEDXECX, storeEDI, seteAL, ret), nil, 2, regs(effect.RSI), 2, 0},
		{"address register redefined", cat(cmpESIEDI, movRDXRSI, storeEDI, seteAL, ret), nil, 2, regs(effect.RSI), 2, 2},
		// The store starts the block the jne goes back to.
		{"block start", cat(cmpESIEDI, storeEDI, seteAL, jneBack(5), ret), nil, 1, regs(effect.RSI), 1, 1},
		// The je enters movsq after its rep prefix: ibr splits it into a
		// prefix and a glued instruction, code goes before the prefix.
		{"glued to a prefix", cat(testEAX, jeForward1, repPrefix, movsq, ret), nil, 3, regs(effect.RSI, effect.RDI), 2, 2},
		{"TLS call glued to its load", cat(tlsgdLoad, tlsgdCall, ret),
			[]reloc{{4, elf.R_X86_64_TLSGD, "v", -4}, {12, elf.R_X86_64_PLT32, "__tls_get_addr", -4}}, 1, 0, -1, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := newObject(t, []fn{{"f", tc.code}}, tc.relocs)
			g, lv := kit.Analyze(o).Func(o.Funcs[0])
			if tc.i >= g.Func.End {
				t.Fatalf("instruction %d beyond the function (%d)", tc.i, g.Func.End)
			}
			at, ok := kit.Before(g, tc.i)
			if !ok {
				at = -1
			}
			if at != tc.before {
				t.Errorf("Before = %d, want %d", at, tc.before)
			}
			at, ok = kit.Place(g, lv, tc.i, tc.keep)
			if !ok {
				at = -1
			}
			if at != tc.place {
				t.Errorf("Place = %d, want %d", at, tc.place)
			}
			if ok && lv.Before(at).Flags&effect.Status != 0 && at != tc.before {
				t.Errorf("Place moved the code to %d, where the flags are live", at)
			}
		})
	}
}

func TestAddrRegs(t *testing.T) {
	tests := []struct {
		m    x86asm.Mem
		want effect.RegSet
	}{
		{x86asm.Mem{Base: x86asm.RDI}, regs(effect.RDI)},
		{x86asm.Mem{Base: x86asm.EDI, Index: x86asm.R9L, Scale: 4}, regs(effect.RDI, effect.R9)},
		{x86asm.Mem{Base: x86asm.RIP, Disp: 8}, 0},
		{x86asm.Mem{Segment: x86asm.FS, Disp: 0x28}, 0},
	}
	for _, tc := range tests {
		if got := kit.AddrRegs(tc.m); got != tc.want {
			t.Errorf("AddrRegs(%v) = %v, want %v", tc.m, got, tc.want)
		}
	}
}

func TestRegs(t *testing.T) {
	for r := effect.Reg(0); r < 16; r++ {
		want := strings.ToUpper(strings.TrimPrefix(r.String(), "r"))
		if r >= effect.R8 {
			want = strings.ToUpper(r.String())
		}
		if got := kit.Reg(r).String(); got != want {
			t.Errorf("Reg(%v) = %s, want %s", r, got, want)
		}
		a, ok := kit.AsmReg(x86asm.RAX + x86asm.Reg(r))
		if !ok || a != kit.Reg(r) {
			t.Errorf("AsmReg(%v) = %v, %v", x86asm.RAX+x86asm.Reg(r), a, ok)
		}
	}
	for _, r := range []x86asm.Reg{x86asm.EAX, x86asm.AL, x86asm.RIP, x86asm.X0, x86asm.FS} {
		if _, ok := kit.AsmReg(r); ok {
			t.Errorf("AsmReg(%v) ok", r)
		}
	}
	if r, ok := kit.AsmReg(0); !ok || r != snippet.NoReg {
		t.Errorf("AsmReg(0) = %v, %v", r, ok)
	}
}

func TestNops(t *testing.T) {
	for n := 0; n <= 45; n++ {
		b := kit.Nops(n)
		if len(b) != n {
			t.Fatalf("Nops(%d): %d bytes", n, len(b))
		}
		count := 0
		for off := 0; off < n; count++ {
			in, err := x86asm.Decode(b[off:], 64)
			if err != nil || in.Op != x86asm.NOP {
				t.Fatalf("Nops(%d) at %d: % x is %v (%v), not a NOP", n, off, b[off:], in, err)
			}
			off += in.Len
		}
		if want := (n + 9) / 10; count != want {
			t.Errorf("Nops(%d): %d instructions, want %d", n, count, want)
		}
	}
}

func TestTLSModel(t *testing.T) {
	for _, m := range []kit.TLSModel{kit.LocalExec, kit.InitialExec, kit.Indirect} {
		got, err := kit.ParseTLSModel(m.String())
		if err != nil || got != m {
			t.Errorf("ParseTLSModel(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := kit.ParseTLSModel("global-dynamic"); err == nil {
		t.Error("ParseTLSModel(global-dynamic): no error")
	}
	if got := (kit.Slots{Model: kit.Indirect}).Size(100); got != 8 {
		t.Errorf("indirect Size(100) = %d", got)
	}
	if got := (kit.Slots{Model: kit.InitialExec}).Size(0); got != 8 {
		t.Errorf("initial-exec Size(0) = %d", got)
	}
	if got := (kit.Slots{Model: kit.LocalExec}).Size(3); got != 24 {
		t.Errorf("local-exec Size(3) = %d", got)
	}
}

func TestStringTable(t *testing.T) {
	var st kit.StringTable
	for _, c := range []struct {
		s    string
		want uint32
	}{{"", 0}, {"main", 1}, {"x", 6}, {"main", 1}, {"", 0}, {"ain", 8}} {
		if got := st.Add(c.s); got != c.want {
			t.Errorf("Add(%q) = %d, want %d", c.s, got, c.want)
		}
	}
	if got, want := string(st.Bytes()), "\x00main\x00x\x00ain\x00"; got != want || st.Len() != len(want) {
		t.Errorf("Bytes = %q (Len %d), want %q", got, st.Len(), want)
	}
}

// gas assembles src with GNU as and returns the machine code of .text and
// its relocations as (offset type symbol addend) lines.
func gas(t *testing.T, src string) ([]byte, []string) {
	t.Helper()
	if _, err := exec.LookPath("as"); err != nil {
		t.Skip("as (binutils) is missing")
	}
	dir := t.TempDir()
	s, o := filepath.Join(dir, "a.s"), filepath.Join(dir, "a.o")
	if err := os.WriteFile(s, []byte(src+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("as", "--64", "-o", o, s).CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s\n%s", err, out, src)
	}
	f, err := elf.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	code, err := f.Section(".text").Data()
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.Symbols()
	var rs []string
	if rela := f.Section(".rela.text"); rela != nil {
		d, _ := rela.Data()
		for k := 0; k+24 <= len(d); k += 24 {
			off := f.ByteOrder.Uint64(d[k:])
			info := f.ByteOrder.Uint64(d[k+8:])
			add := int64(f.ByteOrder.Uint64(d[k+16:]))
			rs = append(rs, fmt.Sprintf("%d %v %s %d", off, elf.R_X86_64(info&0xffffffff), syms[info>>32-1].Name, add))
		}
	}
	return code, rs
}

// relocLines renders a snippet's relocations as gas's, names for symbols.
func relocLines(sn *ibr.Snippet) []string {
	var rs []string
	for _, r := range sn.Relocs {
		rs = append(rs, fmt.Sprintf("%d %v %s %d", r.Off, r.Type, r.Sym, r.Addend))
	}
	return rs
}

// joined returns sn with its cold part, if any, placed right after it:
// the jumps between the parts resolved, the cold part's relocations
// after the hot part's, as gas assembles the two written one after the
// other (a jump from the cold part to the hot part's end lands there).
func joined(t *testing.T, sn *ibr.Snippet) *ibr.Snippet {
	t.Helper()
	if sn.Cold == nil {
		return sn
	}
	n := len(sn.Code)
	out := &ibr.Snippet{Code: append(slices.Clone(sn.Code), sn.Cold.Code...), Relocs: slices.Clone(sn.Relocs)}
	for _, r := range sn.Cold.Relocs {
		r.Off += n
		out.Relocs = append(out.Relocs, r)
	}
	patch := func(l ibr.SnippetLink, at, to int) {
		binary.LittleEndian.PutUint32(out.Code[at+l.Off:], uint32(int32(to-(at+l.End))))
	}
	for _, l := range sn.Links {
		if l.To != ibr.LinkCold {
			t.Fatalf("hot part: link %+v", l)
		}
		patch(l, 0, n+int(l.Delta))
	}
	for _, l := range sn.Cold.Links {
		if l.To != ibr.LinkHot {
			t.Fatalf("cold part: link %+v", l)
		}
		patch(l, n, int(l.Delta))
	}
	return out
}

// TestAgainstGas compares the code kit emits itself (saving registers,
// reaching TLS slots in every model, calling through the GOT) with what
// GNU as makes of the same instructions.
func TestAgainstGas(t *testing.T) {
	le := kit.Slots{Model: kit.LocalExec, Sym: "slots"}
	ie := kit.Slots{Model: kit.InitialExec, Sym: "slots"}
	ind := kit.Slots{Model: kit.Indirect, Sym: "word", Setup: "setup"}
	tests := []struct {
		name  string
		build func(b *kit.Builder)
		gas   string
	}{
		{"save and restore", func(b *kit.Builder) {
			if shift := b.Save(effect.RBX, effect.R12); shift != 144 {
				t.Errorf("Save moved rsp by %d, want 144", shift)
			}
			b.Restore(effect.RBX, effect.R12)
			if shift := b.Save(); shift != kit.RedZone {
				t.Errorf("Save() moved rsp by %d", shift)
			}
			b.Restore()
		}, `lea -128(%rsp),%rsp; push %rbx; push %r12; pop %r12; pop %rbx; lea 128(%rsp),%rsp
		    lea -128(%rsp),%rsp; lea 128(%rsp),%rsp`},
		{"call and jump through the GOT", func(b *kit.Builder) {
			b.CallGOT("rt_enter")
			b.JmpGOT("rt_leave")
		}, `call *rt_enter@GOTPCREL(%rip); jmp *rt_leave@GOTPCREL(%rip)`},
		{"local-exec", func(b *kit.Builder) {
			b.MovQ(snippet.RAX, le.At(b, 3, snippet.NoReg, true, false))
			b.CmpQ(snippet.RAX, le.At(b, 0, snippet.NoReg, false, false))
		}, `mov %rax,%fs:slots@tpoff+24; cmp %rax,%fs:slots@tpoff`},
		{"initial-exec", func(b *kit.Builder) {
			b.MovQ(snippet.RAX, ie.At(b, 3, snippet.RCX, true, false))
		}, `mov slots@gottpoff(%rip),%rcx; mov %rax,%fs:24(%rcx)`},
		// (The call that maps the array goes into the cold part, here
		// after the hot one.)
		{"indirect write", func(b *kit.Builder) {
			b.MovQ(snippet.RAX, ind.At(b, 3, snippet.RCX, true, false))
		}, `1: mov word@gottpoff(%rip),%rcx; mov %fs:(%rcx),%rcx; test %rcx,%rcx; {disp32} je 3f
		    2: mov %rax,24(%rcx)
		    3: lea -128(%rsp),%rsp; call setup; lea 128(%rsp),%rsp; {disp32} jmp 1b`},
		{"indirect write, stepped, twice", func(b *kit.Builder) {
			b.MovQ(snippet.RAX, ind.At(b, 1, snippet.RCX, true, true))
			b.MovQ(snippet.RDX, ind.At(b, 2, snippet.RSI, true, true))
		}, `1: mov word@gottpoff(%rip),%rcx; mov %fs:(%rcx),%rcx; test %rcx,%rcx; {disp32} je 5f
		    2: mov %rax,8(%rcx)
		    3: mov word@gottpoff(%rip),%rsi; mov %fs:(%rsi),%rsi; test %rsi,%rsi; {disp32} je 6f
		    4: mov %rdx,16(%rsi)
		    5: call setup; {disp32} jmp 1b
		    6: call setup; {disp32} jmp 3b`},
		{"indirect write in cold code", func(b *kit.Builder) {
			b.Jcc(snippet.CondE, "cold")
			b.Label("back")
			b.Cold()
			b.Label("cold")
			b.MovQ(snippet.RAX, ind.At(b, 3, snippet.RCX, true, false))
			b.Jmp("back")
		}, `{disp32} je 3f
		    3: 1: mov word@gottpoff(%rip),%rcx; mov %fs:(%rcx),%rcx; test %rcx,%rcx; jne 2f
		    lea -128(%rsp),%rsp; call setup; lea 128(%rsp),%rsp; jmp 1b
		    2: mov %rax,24(%rcx); {disp32} jmp 3b`}, // (back: the hot part's end)
		{"indirect read", func(b *kit.Builder) {
			b.MovQ(ind.At(b, 3, snippet.RCX, false, false), snippet.RAX)
		}, `mov word@gottpoff(%rip),%rcx; mov %fs:(%rcx),%rcx; mov 24(%rcx),%rax`},
		{"raw field", func(b *kit.Builder) {
			b.PushQ(snippet.RAX)
			b.Field([]byte{0x0f, 0x1f, 0x05, 0, 0, 0, 0}, 3, elf.R_X86_64_PC32, kit.Named("sites"), 20)
		}, `push %rax; nopl sites+24(%rip)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := kit.NewBuilder()
			tc.build(b)
			sn, err := b.Assemble()
			if err != nil {
				t.Fatal(err)
			}
			sn = joined(t, sn)
			code, rs := gas(t, strings.ReplaceAll(tc.gas, ";", "\n"))
			if fmt.Sprintf("% x", sn.Code) != fmt.Sprintf("% x", code) {
				t.Errorf("code\n got % x\nwant % x", sn.Code, code)
			}
			if got := relocLines(sn); !reflect.DeepEqual(got, rs) {
				t.Errorf("relocations\n got %q\nwant %q", got, rs)
			}
		})
	}
}

// TestReferences checks what Assemble makes of each kind of reference.
func TestReferences(t *testing.T) {
	tests := []struct {
		name   string
		build  func(b *kit.Builder)
		code   string // gas source giving the same bytes
		relocs []ibr.SnippetReloc
		links  []ibr.SnippetLink
	}{
		{"indexed RIP", func(b *kit.Builder) {
			b.LeaQ(b.RIP(kit.Indexed(3), 16), snippet.RAX)
		}, "lea 0(%rip),%rax", []ibr.SnippetReloc{{Off: 3, Type: elf.R_X86_64_PC32, SymIndex: 3, Addend: 12}}, nil},
		{"named RIP", func(b *kit.Builder) {
			b.LeaQ(b.RIP(kit.Named("desc"), 0), snippet.RDI)
		}, "lea 0(%rip),%rdi", []ibr.SnippetReloc{{Off: 3, Type: elf.R_X86_64_PC32, Sym: "desc", Addend: -4}}, nil},
		{"link", func(b *kit.Builder) {
			b.LeaQ(b.RIP(kit.Link(7, 2), 8), snippet.RAX)
		}, "lea 0(%rip),%rax", nil, []ibr.SnippetLink{{Off: 3, End: 7, Target: 7, Delta: 10}}},
		// The immediate after the displacement: the link counts from the
		// end of the instruction, one byte after the field's.
		{"link before an immediate", func(b *kit.Builder) {
			b.PushQ(snippet.RAX)
			b.CmpL(snippet.Imm(1), b.RIP(kit.Link(5, 0), 0))
		}, "push %rax; cmpl $1,0(%rip)", nil, []ibr.SnippetLink{{Off: 3, End: 8, Target: 5}}},
		{"absolute, indexed, with registers", func(b *kit.Builder) {
			b.LeaQ(b.Abs(kit.Indexed(4), elf.R_X86_64_32S, 8).Base(snippet.RBX).Index(snippet.RCX, 4), snippet.RAX)
		}, "lea y(%rbx,%rcx,4),%rax", []ibr.SnippetReloc{{Off: 4, Type: elf.R_X86_64_32S, SymIndex: 4, Addend: 8}}, nil},
		{"TPOFF", func(b *kit.Builder) {
			b.MovQ(snippet.RAX, b.Abs(kit.Named("t"), elf.R_X86_64_TPOFF32, 16))
		}, "mov %rax,%fs:0", []ibr.SnippetReloc{{Off: 5, Type: elf.R_X86_64_TPOFF32, Sym: "t", Addend: 16}}, nil},
		{"DTPOFF", func(b *kit.Builder) {
			b.LeaQ(b.Abs(kit.Indexed(9), elf.R_X86_64_DTPOFF32, 0).Base(snippet.RAX), snippet.RDX)
		}, "lea x@dtpoff(%rax),%rdx", []ibr.SnippetReloc{{Off: 3, Type: elf.R_X86_64_DTPOFF32, SymIndex: 9}}, nil},
		// Fields of raw code come after the assembled ones.
		{"field first in code, last in relocations", func(b *kit.Builder) {
			b.Field([]byte{0x0f, 0x1f, 0x05, 0, 0, 0, 0}, 3, elf.R_X86_64_PC32, kit.Indexed(2), -4)
			b.Call(snippet.GOTPCRELX("f"))
		}, "nopl 0(%rip); call *0(%rip)", []ibr.SnippetReloc{
			{Off: 9, Type: elf.R_X86_64_GOTPCRELX, Sym: "f", Addend: -4},
			{Off: 3, Type: elf.R_X86_64_PC32, SymIndex: 2, Addend: -4},
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := kit.NewBuilder()
			tc.build(b)
			sn, err := b.Assemble()
			if err != nil {
				t.Fatal(err)
			}
			code, _ := gas(t, strings.ReplaceAll(tc.code, ";", "\n"))
			if fmt.Sprintf("% x", sn.Code) != fmt.Sprintf("% x", code) {
				t.Errorf("code\n got % x\nwant % x", sn.Code, code)
			}
			if !reflect.DeepEqual(sn.Relocs, tc.relocs) {
				t.Errorf("relocations\n got %+v\nwant %+v", sn.Relocs, tc.relocs)
			}
			if !reflect.DeepEqual(sn.Links, tc.links) {
				t.Errorf("links\n got %+v\nwant %+v", sn.Links, tc.links)
			}
		})
	}
}

// TestColdPart checks the two snippets Assemble makes of code with a cold
// part: each part's bytes as gas assembles them alone, relocations and
// links in the part whose bytes they patch, and jumps between the parts as
// links to the other part.
func TestColdPart(t *testing.T) {
	b := kit.NewBuilder()
	b.CmpQ(snippet.RAX, b.RIP(kit.Indexed(3), 0))
	b.Jcc(snippet.CondNE, "miss")
	b.Label("same")
	b.Cold()
	b.Label("miss")
	b.LeaQ(b.RIP(kit.Link(7, 2), 0), snippet.RCX)
	b.Field([]byte{0x0f, 0x1f, 0x05, 0, 0, 0, 0}, 3, elf.R_X86_64_PC32, kit.Named("site"), -4)
	b.Call(snippet.GOTPCRELX("stub"))
	b.Jmp("same")
	b.Hot()
	b.IncQ(snippet.RAX)
	sn, err := b.Assemble()
	if err != nil {
		t.Fatal(err)
	}
	// (gas's jumps to the end are rel32 0, as the links' fields are.)
	hot, _ := gas(t, "cmp %rax,0(%rip)\n{disp32} jne 0f\n0:\nincq %rax")
	cold, _ := gas(t, "lea 0(%rip),%rcx\nnopl 0(%rip)\ncall *0(%rip)\n{disp32} jmp 0f\n0:")
	if sn.Cold == nil {
		t.Fatalf("no cold part: % x", sn.Code)
	}
	if fmt.Sprintf("% x", sn.Code) != fmt.Sprintf("% x", hot) || fmt.Sprintf("% x", sn.Cold.Code) != fmt.Sprintf("% x", cold) {
		t.Errorf("code\n got % x | % x\nwant % x | % x", sn.Code, sn.Cold.Code, hot, cold)
	}
	wantHot := ibr.Snippet{
		Relocs: []ibr.SnippetReloc{{Off: 3, Type: elf.R_X86_64_PC32, SymIndex: 3, Addend: -4}},
		Links:  []ibr.SnippetLink{{Off: 9, End: 13, To: ibr.LinkCold}},
	}
	wantCold := ibr.Snippet{
		Relocs: []ibr.SnippetReloc{
			{Off: 16, Type: elf.R_X86_64_GOTPCRELX, Sym: "stub", Addend: -4},
			{Off: 10, Type: elf.R_X86_64_PC32, Sym: "site", Addend: -4},
		},
		Links: []ibr.SnippetLink{
			{Off: 3, End: 7, Target: 7, Delta: 2},
			{Off: 21, End: 25, To: ibr.LinkHot, Delta: 13},
		},
	}
	if !reflect.DeepEqual(sn.Relocs, wantHot.Relocs) || !reflect.DeepEqual(sn.Links, wantHot.Links) {
		t.Errorf("hot part: relocations %+v links %+v\nwant %+v %+v", sn.Relocs, sn.Links, wantHot.Relocs, wantHot.Links)
	}
	if !reflect.DeepEqual(sn.Cold.Relocs, wantCold.Relocs) || !reflect.DeepEqual(sn.Cold.Links, wantCold.Links) {
		t.Errorf("cold part: relocations %+v links %+v\nwant %+v %+v", sn.Cold.Relocs, sn.Cold.Links, wantCold.Relocs, wantCold.Links)
	}
	// A jump into an empty cold part is an error, not a link to nothing.
	b.Jcc(snippet.CondE, "nowhere")
	b.Cold()
	b.Label("nowhere")
	if sn, err := b.Assemble(); err == nil {
		t.Errorf("a jump to an empty cold part: no error (% x)", sn.Code)
	}
}

func TestReferenceErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *kit.Builder)
	}{
		{"symbol 0", func(b *kit.Builder) { b.LeaQ(b.RIP(kit.Indexed(0), 0), snippet.RAX) }},
		{"no reference", func(b *kit.Builder) { b.LeaQ(b.RIP(kit.Ref{}, 0), snippet.RAX) }},
		{"empty name", func(b *kit.Builder) { b.LeaQ(b.RIP(kit.Named(""), 0), snippet.RAX) }},
		{"absolute link", func(b *kit.Builder) { b.LeaQ(b.Abs(kit.Link(1, 0), elf.R_X86_64_32S, 0), snippet.RAX) }},
		{"absolute PC32", func(b *kit.Builder) { b.LeaQ(b.Abs(kit.Indexed(1), elf.R_X86_64_PC32, 0), snippet.RAX) }},
		{"raw link", func(b *kit.Builder) { b.Field(make([]byte, 7), 3, elf.R_X86_64_PC32, kit.Link(1, 0), 0) }},
		{"raw field outside", func(b *kit.Builder) { b.Field(make([]byte, 7), 4, elf.R_X86_64_PC32, kit.Named("x"), 0) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := kit.NewBuilder()
			tc.build(b)
			if sn, err := b.Assemble(); err == nil {
				t.Fatalf("no error: % x %+v", sn.Code, sn.Relocs)
			}
			// The Builder starts afresh.
			b.PushQ(snippet.RAX)
			sn, err := b.Assemble()
			if err != nil || len(sn.Code) != 1 || len(sn.Relocs) != 0 {
				t.Fatalf("after the error: % x, %v", sn.Code, err)
			}
		})
	}
}

func TestLabels(t *testing.T) {
	b := kit.NewBuilder()
	ind := kit.Slots{Model: kit.Indirect, Sym: "w", Setup: "s"}
	b.Label("start")
	b.MovQ(snippet.RAX, ind.At(b, 0, snippet.RCX, true, true))
	b.Label("end")
	sn, err := b.Assemble()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"start": 0, "end": len(sn.Code)}
	if got := b.Labels(); !reflect.DeepEqual(got, want) {
		t.Errorf("Labels = %v, want %v", got, want)
	}
	b.PushQ(snippet.RAX)
	if _, err := b.Assemble(); err != nil || b.Labels() != nil {
		t.Errorf("Labels of a snippet without labels: %v (%v)", b.Labels(), err)
	}
}

func TestAddress(t *testing.T) {
	rsp := x86asm.Mem{Base: x86asm.RSP, Disp: 8}
	tests := []struct {
		name   string
		m      x86asm.Mem
		rel    kit.Rel
		link   *ibr.Link
		shift  int32
		extra  int64
		gas    string // the lea gas assembles to the same bytes
		relocs []ibr.SnippetReloc
		links  []ibr.SnippetLink
		err    bool
	}{
		{name: "base index", m: x86asm.Mem{Base: x86asm.RDI, Index: x86asm.RSI, Scale: 8, Disp: -16}, extra: 4, gas: "lea -12(%rdi,%rsi,8),%rax"},
		{name: "rsp moved", m: rsp, shift: 144, gas: "lea 152(%rsp),%rax"},
		{name: "rsp as index? no: rbp", m: x86asm.Mem{Base: x86asm.RBP, Disp: -8}, shift: 144, gas: "lea -8(%rbp),%rax"},
		{name: "index only", m: x86asm.Mem{Index: x86asm.RCX, Scale: 4, Disp: 64}, gas: "lea 64(,%rcx,4),%rax"},
		{name: "RIP relocated", m: x86asm.Mem{Base: x86asm.RIP}, rel: kit.Rel{Type: elf.R_X86_64_PC32, Sym: 5, Addend: 12}, extra: 4,
			gas: "lea 0(%rip),%rax", relocs: []ibr.SnippetReloc{{Off: 3, Type: elf.R_X86_64_PC32, SymIndex: 5, Addend: 12}}},
		{name: "RIP linked", m: x86asm.Mem{Base: x86asm.RIP, Disp: 100}, link: &ibr.Link{Kind: ibr.LinkRIP, Target: 9, Delta: 2}, extra: 1,
			gas: "lea 0(%rip),%rax", links: []ibr.SnippetLink{{Off: 3, End: 7, Target: 9, Delta: 3}}},
		{name: "absolute with registers", m: x86asm.Mem{Base: x86asm.RSP, Index: x86asm.RAX, Scale: 2}, rel: kit.Rel{Type: elf.R_X86_64_32S, Sym: 6, Addend: 8}, shift: 128,
			gas: "lea y(%rsp,%rax,2),%rax", relocs: []ibr.SnippetReloc{{Off: 4, Type: elf.R_X86_64_32S, SymIndex: 6, Addend: 136}}},
		{name: "local-exec TLS variable", m: x86asm.Mem{Segment: x86asm.FS}, rel: kit.Rel{Type: elf.R_X86_64_TPOFF32, Sym: 7},
			gas: "lea %fs:0,%rax", relocs: []ibr.SnippetReloc{{Off: 5, Type: elf.R_X86_64_TPOFF32, SymIndex: 7}}},
		{name: "32-bit addressing", m: x86asm.Mem{Base: x86asm.EDI}, err: true},
		{name: "displacement overflow", m: x86asm.Mem{Base: x86asm.RDI, Disp: math.MaxInt32}, extra: 1, err: true},
		{name: "RIP through the GOT", m: x86asm.Mem{Base: x86asm.RIP}, rel: kit.Rel{Type: elf.R_X86_64_GOTPCREL, Sym: 5}, err: true},
		{name: "RIP unresolved", m: x86asm.Mem{Base: x86asm.RIP}, err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := kit.NewBuilder()
			op, err := b.Address(tc.m, tc.rel, tc.link, tc.shift, tc.extra)
			if tc.err {
				if err == nil {
					t.Fatalf("no error: %v", op)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b.LeaQ(op, snippet.RAX)
			sn, err := b.Assemble()
			if err != nil {
				t.Fatal(err)
			}
			code, _ := gas(t, tc.gas)
			if fmt.Sprintf("% x", sn.Code) != fmt.Sprintf("% x", code) {
				t.Errorf("code\n got % x\nwant % x (%s)", sn.Code, code, tc.gas)
			}
			if !reflect.DeepEqual(sn.Relocs, tc.relocs) {
				t.Errorf("relocations\n got %+v\nwant %+v", sn.Relocs, tc.relocs)
			}
			if !reflect.DeepEqual(sn.Links, tc.links) {
				t.Errorf("links\n got %+v\nwant %+v", sn.Links, tc.links)
			}
		})
	}
}

func TestDispRel(t *testing.T) {
	code := cat(
		[]byte{0x83, 0x05, 0, 0, 0, 0, 0x01}, // addl $1,x+8(%rip)
		[]byte{0x8b, 0x04, 0x85, 0, 0, 0, 0}, // mov y(,%rax,4),%eax
		loadEAX, ret)
	o := newObject(t, []fn{{"f", code}}, []reloc{{2, elf.R_X86_64_PC32, "x", 3}, {10, elf.R_X86_64_32S, "y", 4}})
	s := o.Code[0]
	x, y := o.File.FindSymbol("x"), o.File.FindSymbol("y")
	tests := []struct {
		i    int
		want kit.Rel
		ok   bool
	}{
		{0, kit.Rel{Type: elf.R_X86_64_PC32, Sym: x, Addend: 8}, true}, // 3 + 5 bytes to the end
		{1, kit.Rel{Type: elf.R_X86_64_32S, Sym: y, Addend: 4}, true},
		{2, kit.Rel{}, false},
	}
	for _, tc := range tests {
		got, ok := kit.DispRel(o.File, s, tc.i)
		if got != tc.want || ok != tc.ok {
			t.Errorf("DispRel(%d) = %+v, %v; want %+v, %v", tc.i, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMayBeShared(t *testing.T) {
	load := []byte{0x8b, 0x05, 0, 0, 0, 0} // mov sym(%rip),%eax
	tests := []struct {
		name   string
		relocs []reloc
		want   bool
	}{
		{"no relocations", nil, true},
		{"absolute address", []reloc{{2, elf.R_X86_64_32S, "g", 0}}, false},
		{"local-exec TLS", []reloc{{2, elf.R_X86_64_TPOFF32, "t", 0}}, false},
		{"PC-relative to global data (-fPIE)", []reloc{{2, elf.R_X86_64_PC32, "g", -4}}, false},
		{"PC-relative to local data", []reloc{{2, elf.R_X86_64_PC32, "x", -4}}, true},
		{"through the GOT (-fPIC)", []reloc{{2, elf.R_X86_64_REX_GOTPCRELX, "g", -4}}, true},
		{"call through the PLT", []reloc{{2, elf.R_X86_64_PLT32, "h", -4}}, true},
		{"dynamic TLS first", []reloc{{2, elf.R_X86_64_TLSGD, "t", -4}, {2, elf.R_X86_64_32S, "g", 0}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := newObject(t, []fn{{"f", cat(load, ret)}}, tc.relocs)
			if got := kit.MayBeShared(o.File); got != tc.want {
				t.Errorf("MayBeShared = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFallThrough(t *testing.T) {
	jmp := []byte{0xeb, 0x00} // jmp to the next instruction
	call := []byte{0xe8, 0, 0, 0, 0}
	code := cat(loadEAX, testEAX, jeForward1, repPrefix, movsq, call, jmp, tlsgdLoad, tlsgdCall, ret)
	o := newObject(t, []fn{{"f", code}}, []reloc{{10, elf.R_X86_64_PLT32, "g", -4}, {20, elf.R_X86_64_TLSGD, "v", -4}, {28, elf.R_X86_64_PLT32, "__tls_get_addr", -4}})
	want := []bool{
		true,  // mov (%rdi),%eax
		true,  // test
		true,  // je: falls through when not taken
		false, // rep prefix, glued to movsq
		true,  // movsq
		true,  // call returns
		false, // jmp
		false, // the TLS load, glued to its call
		true,  // the call
		false, // ret
	}
	s := o.Code[0]
	if !s.Rewritable() {
		t.Fatal(s.Problem)
	}
	if len(s.Insts) != len(want) {
		t.Fatalf("%d instructions, want %d", len(s.Insts), len(want))
	}
	for i, w := range want {
		if got := kit.FallThrough(s, i); got != w {
			t.Errorf("FallThrough(%d) (% x) = %v, want %v", i, s.Bytes(i), got, w)
		}
	}
}

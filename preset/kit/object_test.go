package kit_test

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"hijack/ibr"
	"hijack/internal/testutil"
	"hijack/preset/kit"
	"hijack/snippet"
)

func TestObject(t *testing.T) {
	o := newObject(t, []fn{{"f", ret}}, nil)
	x, err := kit.NewObject(o.File)
	if err != nil {
		t.Fatal(err)
	}
	secs := map[string]struct {
		kind  kit.SectionKind
		typ   elf.SectionType
		flags elf.SectionFlag
	}{
		".rodata.k": {kit.ReadOnly, elf.SHT_PROGBITS, elf.SHF_ALLOC},
		".data.k":   {kit.Writable, elf.SHT_PROGBITS, elf.SHF_ALLOC | elf.SHF_WRITE},
		".tbss.k":   {kit.TLS, elf.SHT_NOBITS, elf.SHF_ALLOC | elf.SHF_WRITE | elf.SHF_TLS},
		".text.k":   {kit.Text, elf.SHT_PROGBITS, elf.SHF_ALLOC | elf.SHF_EXECINSTR},
	}
	idx := make(map[string]int)
	for _, name := range []string{".rodata.k", ".data.k", ".tbss.k", ".text.k"} {
		idx[name] = x.AddSection(name, secs[name].kind, 8)
	}
	for name, sym := range map[string]elf.SymType{"k_ro": elf.STT_OBJECT, "k_tls": elf.STT_TLS, "k_fn": elf.STT_FUNC} {
		sec := map[string]string{"k_ro": ".rodata.k", "k_tls": ".tbss.k", "k_fn": ".text.k"}[name]
		if err := x.AddLocal(name, sym, idx[sec]); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.AddLocal("k_fn", elf.STT_FUNC, idx[".text.k"]); err == nil {
		t.Error("AddLocal of a name the object has: no error")
	}
	if err := x.SetSymbol("nothing", 0, 0); err == nil {
		t.Error("SetSymbol of a missing symbol: no error")
	}
	x.SetData(idx[".rodata.k"], []byte("abc\x00"))
	x.SetData(idx[".data.k"], make([]byte, 16))
	if err := x.RelocateData(idx[".data.k"], []kit.DataReloc{{Off: 8, Type: elf.R_X86_64_64, Sym: "missing"}}); err == nil {
		t.Error("RelocateData against a missing symbol: no error")
	}
	if err := x.RelocateData(idx[".data.k"], []kit.DataReloc{{Off: 0, Type: elf.R_X86_64_PC32, Sym: "k_ro"}, {Off: 8, Type: elf.R_X86_64_64, Sym: "k_fn", Addend: 4}}); err != nil {
		t.Fatal(err)
	}
	x.SetSize(idx[".tbss.k"], 24)
	fsym := o.File.FindSymbol("f")
	code := &ibr.Snippet{Code: make([]byte, 16), Relocs: []ibr.SnippetReloc{
		{Off: 0, Type: elf.R_X86_64_PC32, Sym: "k_ro", Addend: -4},
		{Off: 4, Type: elf.R_X86_64_GOTPCRELX, Sym: "rt_entry", Addend: -4},
		{Off: 8, Type: elf.R_X86_64_PLT32, SymIndex: fsym, Addend: -4},
		{Off: 12, Type: elf.R_X86_64_GOTPCRELX, Sym: "rt_entry", Addend: -4},
	}}
	if err := x.SetCode(idx[".text.k"], code); err != nil {
		t.Fatal(err)
	}
	if err := x.SetCode(idx[".text.k"], &ibr.Snippet{Links: []ibr.SnippetLink{{}}}); err == nil {
		t.Error("SetCode with a link: no error")
	}
	for _, c := range []struct {
		ctor bool
		sym  string
		prio int
		ok   bool
	}{
		{true, "k_fn", kit.NoPriority, true},
		{true, "k_fn", 101, true},
		{false, "k_fn", 0, true},
		{false, "k_fn", kit.NoPriority, true},
		{true, "k_fn", 65536, false},
		{false, "k_fn", -2, false},
		{true, "missing", 0, false},
	} {
		add := x.Destructor
		if c.ctor {
			add = x.Constructor
		}
		if err := add(c.sym, c.prio); (err == nil) != c.ok {
			t.Errorf("ctor %v %s priority %d: error %v", c.ctor, c.sym, c.prio, err)
		}
	}
	data, err := o.File.Write()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range secs {
		s := f.Section(name)
		if s == nil || s.Type != want.typ || s.Flags != want.flags {
			t.Errorf("section %s: %+v, want type %v flags %v", name, s, want.typ, want.flags)
		}
	}
	if s := f.Section(".tbss.k"); s == nil || s.Size != 24 {
		t.Errorf(".tbss.k: %+v", s)
	}
	syms, _ := f.Symbols()
	relocs := func(sec string) []string {
		s := f.Section(".rela" + sec)
		if s == nil {
			t.Errorf("no .rela%s", sec)
			return nil
		}
		d, _ := s.Data()
		var out []string
		for k := 0; k+24 <= len(d); k += 24 {
			info := f.ByteOrder.Uint64(d[k+8:])
			out = append(out, elf.R_X86_64(info&0xffffffff).String()+" "+syms[info>>32-1].Name)
		}
		return out
	}
	want := []string{"R_X86_64_PC32 k_ro", "R_X86_64_GOTPCRELX rt_entry", "R_X86_64_PLT32 f", "R_X86_64_GOTPCRELX rt_entry"}
	if got := relocs(".text.k"); !slices.Equal(got, want) {
		t.Errorf(".rela.text.k: %q, want %q", got, want)
	}
	if got, want := relocs(".data.k"), []string{"R_X86_64_PC32 k_ro", "R_X86_64_64 k_fn"}; !slices.Equal(got, want) {
		t.Errorf(".rela.data.k: %q, want %q", got, want)
	}
	for _, sec := range []string{".init_array", ".init_array.00101", ".fini_array.00000", ".fini_array"} {
		if s := f.Section(sec); s == nil || s.Size != 8 || s.Flags != elf.SHF_ALLOC|elf.SHF_WRITE {
			t.Errorf("%s: %+v", sec, s)
		}
		if got := relocs(sec); !slices.Equal(got, []string{"R_X86_64_64 k_fn"}) {
			t.Errorf(".rela%s: %q", sec, got)
		}
	}
	for _, s := range syms {
		if s.Name == "rt_entry" && (elf.ST_BIND(s.Info) != elf.STB_GLOBAL || s.Section != elf.SHN_UNDEF) {
			t.Errorf("rt_entry: %+v, want an undefined global", s)
		}
	}
}

// TestObjectRuns links an object that kit gave per-thread slots, read-only
// data, code of its own, a constructor and a destructor into a program and
// runs it: the constructor stores 42 into a slot and copies the slot to
// the program's counter, the destructor prints a string of the object.
func TestObjectRuns(t *testing.T) {
	testutil.Need(t, "gcc")
	dir := t.TempDir()
	main := filepath.Join(dir, "main.c")
	if err := os.WriteFile(main, []byte(`#include <stdio.h>
int counter;
int main(void) { printf("%d\n", counter); return counter != 42; }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, model := range []kit.TLSModel{kit.LocalExec, kit.InitialExec} {
		t.Run(model.String(), func(t *testing.T) {
			o := newObject(t, []fn{{"unused", ret}}, nil)
			x, err := kit.NewObject(o.File)
			if err != nil {
				t.Fatal(err)
			}
			tbss := x.AddSection(".tbss.k", kit.TLS, 8)
			ro := x.AddSection(".rodata.k", kit.ReadOnly, 1)
			text := x.AddSection(".text.k", kit.Text, 16)
			for _, l := range []struct {
				name string
				typ  elf.SymType
				sec  int
			}{{"k_slots", elf.STT_TLS, tbss}, {"k_msg", elf.STT_OBJECT, ro}, {"k_ctor", elf.STT_FUNC, text}, {"k_dtor", elf.STT_FUNC, text}} {
				if err := x.AddLocal(l.name, l.typ, l.sec); err != nil {
					t.Fatal(err)
				}
			}
			slots := kit.Slots{Model: model, Sym: "k_slots"}
			x.SetSize(tbss, slots.Size(2))
			msg := []byte("destructor ran\x00")
			x.SetData(ro, msg)
			b := kit.NewBuilder()
			b.Label("ctor")
			b.MovQ(snippet.Imm(42), slots.At(b, 1, snippet.RCX, true, false))
			b.MovQ(slots.At(b, 1, snippet.RDX, false, false), snippet.RAX)
			b.MovL(snippet.RAX, b.RIP(kit.Named("counter"), 0))
			b.Ret()
			b.Label("dtor")
			b.LeaQ(b.RIP(kit.Named("k_msg"), 0), snippet.RDI)
			b.JmpGOT("puts")
			b.Label("end")
			sn, err := b.Assemble()
			if err != nil {
				t.Fatal(err)
			}
			l := b.Labels()
			if err := x.SetCode(text, sn); err != nil {
				t.Fatal(err)
			}
			for _, s := range []struct {
				name       string
				start, end int
			}{{"k_ctor", l["ctor"], l["dtor"]}, {"k_dtor", l["dtor"], l["end"]}, {"k_msg", 0, len(msg)}, {"k_slots", 0, int(slots.Size(2))}} {
				if err := x.SetSymbol(s.name, uint64(s.start), uint64(s.end-s.start)); err != nil {
					t.Fatal(err)
				}
			}
			if err := x.Constructor("k_ctor", kit.NoPriority); err != nil {
				t.Fatal(err)
			}
			if err := x.Destructor("k_dtor", 0); err != nil {
				t.Fatal(err)
			}
			obj, exe := filepath.Join(dir, model.String()+".o"), filepath.Join(dir, model.String())
			writeObject(t, o, obj)
			testutil.Link(t, "gcc", exe, main, obj)
			out, err := exec.Command(exe).CombinedOutput()
			if err != nil || string(out) != "42\ndestructor ran\n" {
				t.Fatalf("%s: %v, output %q", exe, err, out)
			}
		})
	}
}

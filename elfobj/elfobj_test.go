package elfobj_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hijack/elfobj"
	"hijack/internal/objmut"
	"hijack/internal/testutil"
)

// objects compiles the shared test sources with gcc and clang.
func objects(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	var objs []string
	src := "../testdata/src/"
	for _, c := range []struct {
		cc, src string
		flags   []string
	}{
		{"gcc", "kitchen.c", []string{"-O2", "-g"}},
		{"gcc", "kitchen.c", []string{"-O1", "-g", "-gz"}}, // SHF_COMPRESSED debug sections
		{"gcc", "kitchen.c", []string{"-O0", "-ffunction-sections", "-fdata-sections"}},
		{"clang", "kitchen.c", []string{"-O2", "-fPIC"}},
		{"g++", "cxx.cpp", []string{"-O2"}},
		{"clang++", "cxx.cpp", []string{"-O1", "-g"}},
		{"gcc", "idioms.s", nil},
	} {
		objs = append(objs, testutil.Compile(t, dir, c.cc, src+c.src, c.flags...))
	}
	return objs
}

// readObject reads an object file and parses it.
func readObject(t *testing.T, path string) ([]byte, *elfobj.File) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elfobj.Read(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return data, f
}

// sameContents compares everything Write must preserve.
func sameContents(a, b *elfobj.File) error {
	if len(a.Sections) != len(b.Sections) {
		return fmt.Errorf("%d sections, want %d", len(b.Sections), len(a.Sections))
	}
	for i, s := range a.Sections {
		t := b.Sections[i]
		if s.Name != t.Name || s.Type != t.Type || s.Flags != t.Flags || s.Link != t.Link || s.Info != t.Info || s.Align != t.Align || s.Entsize != t.Entsize || s.Len() != t.Len() {
			return fmt.Errorf("section %d (%s): header differs", i, s.Name)
		}
		if s.Type != elf.SHT_NOBITS && !bytes.Equal(s.Data, t.Data) {
			return fmt.Errorf("section %d (%s): contents differ", i, s.Name)
		}
		if fmt.Sprint(s.Relocs) != fmt.Sprint(t.Relocs) {
			return fmt.Errorf("section %d (%s): relocations differ", i, s.Name)
		}
	}
	if fmt.Sprint(a.Symbols) != fmt.Sprint(b.Symbols) {
		return fmt.Errorf("symbols differ")
	}
	return nil
}

func TestRoundTrip(t *testing.T) {
	paths := objects(t)
	for _, lib := range []string{"libz.a", "libsqlite3.a"} {
		paths = append(paths, testutil.Extract(t, "/usr/lib/x86_64-linux-gnu/"+lib, t.TempDir())...)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := elfobj.Read(data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out, err := f.Write()
		if err != nil {
			t.Fatalf("%s: write: %v", p, err)
		}
		g, err := elfobj.Read(out)
		if err != nil {
			t.Fatalf("%s: reading what Write wrote: %v", p, err)
		}
		orig, _ := elfobj.Read(data)
		if err := sameContents(orig, g); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		// debug/elf must agree with our reading of what we wrote.
		de, err := elf.NewFile(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("%s: debug/elf rejects the output: %v", p, err)
		}
		syms, _ := de.Symbols()
		if len(g.Symbols) > 0 && len(syms) != len(g.Symbols)-1 {
			t.Errorf("%s: debug/elf sees %d symbols, want %d", p, len(syms), len(g.Symbols)-1)
		}
	}
	t.Logf("%d objects round-tripped", len(paths))
}

// TestLinkAfterRoundTrip links objects written by Write and runs them.
func TestLinkAfterRoundTrip(t *testing.T) {
	testutil.Need(t, "gcc", "g++")
	dir := t.TempDir()
	for _, c := range []struct{ cc, src string }{{"gcc", "kitchen.c"}, {"g++", "cxx.cpp"}} {
		obj := testutil.Compile(t, dir, c.cc, "../testdata/src/"+c.src, "-O2")
		_, f := readObject(t, obj)
		out, err := f.Write()
		if err != nil {
			t.Fatal(err)
		}
		obj2 := filepath.Join(dir, "rt-"+filepath.Base(obj))
		os.WriteFile(obj2, out, 0o644)
		testutil.Link(t, c.cc, obj+".exe", obj)
		testutil.Link(t, c.cc, obj2+".exe", obj2)
		a, b := testutil.Run(10e9, obj+".exe"), testutil.Run(10e9, obj2+".exe")
		if a != b || a.Exit != 0 {
			t.Errorf("%s: outputs differ or fail: %+v vs %+v", c.src, a, b)
		}
	}
}

// TestExtendedNumbering reads and writes an object with more than 65280
// sections, which uses extended section numbering and SHT_SYMTAB_SHNDX.
func TestExtendedNumbering(t *testing.T) {
	testutil.Need(t, "as")
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; i < 66000; i++ {
		fmt.Fprintf(&b, ".section .text.f%d,\"ax\",@progbits\n.globl f%d\n.type f%d,@function\nf%d: ret\n", i, i, i, i)
	}
	src := filepath.Join(dir, "many.s")
	os.WriteFile(src, []byte(b.String()), 0o644)
	obj := filepath.Join(dir, "many.o")
	if out, err := exec.Command("as", "--64", src, "-o", obj).CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s", err, out)
	}
	data, _ := os.ReadFile(obj)
	f, err := elfobj.Read(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Sections) < 66000 {
		t.Fatalf("%d sections", len(f.Sections))
	}
	k := f.FindSymbol("f65999")
	if k == 0 || f.Sections[f.Symbols[k].Shndx].Name != ".text.f65999" {
		t.Fatalf("f65999 is not in .text.f65999")
	}
	out, err := f.Write()
	if err != nil {
		t.Fatal(err)
	}
	g, err := elfobj.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameContents(f, g); err != nil {
		t.Fatal(err)
	}
	if n := binary.LittleEndian.Uint16(out[60:]); n != 0 {
		t.Errorf("e_shnum = %d, want 0 (extended)", n)
	}
	de, err := elf.NewFile(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if de.Sections[f.Symbols[k].Shndx].Name != ".text.f65999" {
		t.Errorf("debug/elf disagrees on section numbering")
	}
}

func TestAddSymbolRenumbers(t *testing.T) {
	dir := t.TempDir()
	obj := testutil.Compile(t, dir, "gcc", "../testdata/src/kitchen.c", "-O2")
	data, _ := os.ReadFile(obj)
	f, err := elfobj.Read(data)
	if err != nil {
		t.Fatal(err)
	}
	// Remember every relocation's symbol by name and value.
	type key struct {
		name string
		val  uint64
		sec  uint32
	}
	var before []key
	for _, s := range f.Sections {
		for _, r := range s.Relocs {
			sym := f.Symbols[r.Sym]
			before = append(before, key{sym.Name, sym.Value, sym.Shndx})
		}
	}
	local := f.AddSymbol(elfobj.Symbol{Name: "hijack_local", Info: byte(elf.STB_LOCAL)<<4 | byte(elf.STT_OBJECT), Shndx: 1})
	global := f.AddSymbol(elfobj.Symbol{Name: "hijack_global", Info: byte(elf.STB_GLOBAL) << 4})
	if f.Symbols[local].Name != "hijack_local" || f.Symbols[global].Name != "hijack_global" {
		t.Fatal("AddSymbol returned the wrong index")
	}
	var after []key
	for _, s := range f.Sections {
		for _, r := range s.Relocs {
			sym := f.Symbols[r.Sym]
			after = append(after, key{sym.Name, sym.Value, sym.Shndx})
		}
	}
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatal("relocations refer to other symbols after adding a local symbol")
	}
	out, err := f.Write()
	if err != nil {
		t.Fatal(err)
	}
	de, err := elf.NewFile(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := de.Symbols()
	var sawLocal bool
	for i, s := range syms {
		if s.Name == "hijack_local" {
			sawLocal = true
			for _, g := range syms[:i] {
				if elf.ST_BIND(g.Info) != elf.STB_LOCAL {
					t.Error("local symbol after a global one")
				}
			}
		}
	}
	if !sawLocal {
		t.Error("local symbol missing")
	}
}

// corrupt returns data with a little-endian value written at off.
func corrupt(data []byte, off int, size int, v uint64) []byte {
	d := bytes.Clone(data)
	switch size {
	case 1:
		d[off] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(d[off:], uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(d[off:], uint32(v))
	case 8:
		binary.LittleEndian.PutUint64(d[off:], v)
	}
	return d
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	obj := testutil.Compile(t, dir, "gcc", "../testdata/src/kitchen.c", "-O2")
	good, _ := os.ReadFile(obj)
	shoff := int(binary.LittleEndian.Uint64(good[40:]))
	f, _ := elfobj.Read(good)
	sh := func(i, field int) int { return shoff + i*64 + field }
	var symtab, rela, bss int
	for i, s := range f.Sections {
		switch s.Type {
		case elf.SHT_NOBITS:
			bss = i
		case elf.SHT_SYMTAB:
			symtab = i
		case elf.SHT_RELA:
			if rela == 0 {
				rela = i
			}
		}
	}
	relaOff := int(binary.LittleEndian.Uint64(good[sh(rela, 24):]))
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "not an ELF file"},
		{"text", []byte("hello, world\n"), "not an ELF file"},
		{"truncated header", good[:40], "truncated ELF header"},
		{"truncated sections", good[:shoff+100], "does not fit"},
		{"elf32", corrupt(good, 4, 1, 1), "32-bit"},
		{"big endian", corrupt(good, 5, 1, 2), "big-endian"},
		{"executable", corrupt(good, 16, 2, 2), "pass the .o files before linking"},
		{"shared object", corrupt(good, 16, 2, 3), "pass the .o files before linking"},
		{"aarch64", corrupt(good, 18, 2, 183), "machine EM_AARCH64"},
		{"shoff beyond end", corrupt(good, 40, 8, 1<<40), "beyond the end"},
		{"shentsize", corrupt(good, 58, 2, 40), "section header size"},
		{"shstrndx", corrupt(good, 62, 2, 9999), "out of range"},
		{"section offset", corrupt(good, sh(1, 24), 8, 1<<50), "beyond the end of the file"},
		{"section size", corrupt(good, sh(1, 32), 8, 1<<50), "beyond the end of the file"},
		{"symtab link", corrupt(good, sh(symtab, 40), 4, 0), "string table"},
		{"rela target", corrupt(good, sh(rela, 44), 4, 5000), "out of range"},
		{"rela symbol", corrupt(good, relaOff+12, 4, 99999), "symbol index"},
		{"rela offset", corrupt(good, relaOff, 8, 1<<40), "beyond the end"},
		{"name offset", corrupt(good, sh(1, 0), 4, 1<<30), "name offset"},
		{"alignment", corrupt(good, sh(1, 48), 8, 3), "power of two"},
		// The writer padded the file to these (out of memory, makeslice).
		{"alignment 2^40", corrupt(good, sh(1, 48), 8, 1<<40), "alignment 2^40 is larger than any toolchain produces"},
		{"alignment 2^63", corrupt(good, sh(symtab, 48), 8, 1<<63), "alignment 2^63"},
		{"bss size", corrupt(good, sh(bss, 32), 8, 1<<60), "(.tbss): size 0x1000000000000000 is larger than the x86-64 address space"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := elfobj.Read(tc.data)
			if err == nil {
				t.Fatalf("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error has several lines: %q", err)
			}
			if tc.name == "executable" && !errors.Is(err, elfobj.ErrNotRelocatable) {
				t.Fatal("not ErrNotRelocatable")
			}
		})
	}
}

// TestLargeAlignment: a large alignment (gcc allows up to 2^28) is kept in
// the section header, but Write pads file offsets to a page only: gas's
// object is 16 MiB (of zeros before the 4-byte section), Write's a few
// KiB, and the linked variable is still aligned.
func TestLargeAlignment(t *testing.T) {
	dir := t.TempDir()
	obj := testutil.CompileString(t, dir, "gcc", "al.c", `
#include <stdio.h>
#include <stdint.h>
int big __attribute__((aligned(1 << 24))) = 42;
char tail[3] = "ok";
int main(void) { printf("%d %s %d\n", big, tail, (int)((uintptr_t)&big % (1 << 24))); return 0; }
`, "-O2", "-fdata-sections")
	data, f := readObject(t, obj)
	out, err := f.Write()
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > 1<<20 {
		t.Errorf("written object is %d bytes (input %d)", len(out), len(data))
	}
	g, err := elfobj.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameContents(f, g); err != nil {
		t.Fatal(err)
	}
	obj2 := filepath.Join(dir, "al-rt.o")
	os.WriteFile(obj2, out, 0o644)
	testutil.Link(t, "gcc", obj2+".exe", obj2)
	if r := testutil.Run(10e9, obj2+".exe"); r.Stdout != "42 ok 0\n" || r.Exit != 0 {
		t.Errorf("program linked from the written object: %+v", r)
	}
}

// TestWriteLimit: Write refuses to allocate past MaxSize.
func TestWriteLimit(t *testing.T) {
	data, f := readObject(t, testutil.Compile(t, t.TempDir(), "gcc", "../testdata/src/kitchen.c", "-O2"))
	if f.MaxSize != elfobj.OutputLimit(len(data)) {
		t.Fatalf("MaxSize %d, want %d", f.MaxSize, elfobj.OutputLimit(len(data)))
	}
	for i, s := range f.Sections {
		if s.Name == ".comment" {
			f.Sections[i].Data = make([]byte, f.MaxSize)
		}
	}
	if _, err := f.Write(); !errors.Is(err, elfobj.ErrTooLarge) {
		t.Fatalf("Write of a %d-byte section: %v, want ErrTooLarge", f.MaxSize, err)
	}
	f.MaxSize = 0 // no bound
	if _, err := f.Write(); err != nil {
		t.Fatal(err)
	}
}

// FuzzRead: Read never panics, its errors are one line, and what it reads
// writes and reads back the same. Seeds are compiled from the shared
// sources (objmut.Corpus), with structured mutants of each, not kept as
// binaries.
func FuzzRead(f *testing.F) {
	for i, obj := range objmut.Corpus(f, "../testdata/src", f.TempDir()) {
		f.Add(obj.Data)
		for _, m := range objmut.Mutate(obj.Data, uint64(2000+i), 16) {
			f.Add(m.Data)
		}
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := elfobj.Read(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		out, err := file.Write()
		if err != nil {
			return
		}
		g, err := elfobj.Read(out)
		if err != nil {
			t.Fatalf("reading our own output: %v", err)
		}
		if err := sameContents(file, g); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}

var groupMember = regexp.MustCompile(`^\s+\[\s*\d+\]\s+(\S+)$`)

// TestRemoveSections removes sections from real objects and checks the
// rest against readelf and against what it was: contents, relocations (by
// symbol name), symbols, groups.
func TestRemoveSections(t *testing.T) {
	testutil.Need(t, "as", "readelf")
	dir := t.TempDir()
	grp := testutil.CompileString(t, dir, "gcc", "grp.s", `
	.section .data.g,"awG",@progbits,grp,comdat
	.globl grp
grp:	.long 1
	.section .data.h,"awG",@progbits,hh,comdat
	.globl hh
hh:	.long 2
	.section .data.h2,"awG",@progbits,hh,comdat
	.long 3
	.text
	.globl f
f:	leaq hh(%rip), %rax
	ret
`)
	fat := testutil.CompileString(t, dir, "g++", "fat.cpp", `#include <cstdio>
template <class T> T twice(T x) { return x + x; }
inline int counter(int x) { static int n; return n += x; }
int main() { std::printf("%d %d\n", twice(3), counter(4)); return 0; }
`, "-O2", "-g", "-flto", "-ffat-lto-objects")
	for _, tc := range []struct {
		name, obj string
		drop      func(*elfobj.Section) bool
		err       string
		groups    string // readelf -g lines naming groups and members, in order
	}{
		{"empty group goes", grp, func(s *elfobj.Section) bool { return s.Name == ".data.g" }, "", "[hh] .data.h .data.h2"},
		{"group member", grp, func(s *elfobj.Section) bool { return s.Name == ".data.h2" }, "", "[grp] .data.g [hh] .data.h"},
		{"group signature", grp, func(s *elfobj.Section) bool { return s.Name == ".data.h" }, "section .group: group signature symbol 2 (hh) is removed", ""},
		{"relocated", grp, func(s *elfobj.Section) bool { return strings.HasPrefix(s.Name, ".data.h") }, "section .rela.text: relocation at 0x3 refers to symbol 2 (hh), which is removed", ""},
		{"symbol table", grp, func(s *elfobj.Section) bool { return s.Name == ".symtab" }, "section 10 (.symtab) cannot be removed", ""},
		{"LTO IR", fat, func(s *elfobj.Section) bool { return elfobj.IsLTOSection(s.Name) }, "", "[_ZZ7counteriE1n] .bss._ZZ7counteriE1n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, f := readObject(t, tc.obj)
			before, _ := f.Write()
			orig, _ := elfobj.Read(data)
			err := f.RemoveSections(tc.drop, nil)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				if after, _ := f.Write(); !bytes.Equal(after, before) {
					t.Fatal("a failed RemoveSections changed the object")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := f.Write()
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "rm-"+strings.ReplaceAll(tc.name, " ", "-")+".o")
			os.WriteFile(p, out, 0o644)
			msg, err := exec.Command("readelf", "-aW", p).CombinedOutput()
			if err != nil || bytes.Contains(msg, []byte("readelf: ")) {
				t.Fatalf("readelf -a: %v\n%s", err, msg)
			}
			var groups []string
			for _, l := range strings.Split(string(msg), "\n") {
				if f := strings.Fields(l); strings.HasPrefix(l, "COMDAT group section") {
					groups = append(groups, f[len(f)-4])
				} else if m := groupMember.FindStringSubmatch(l); m != nil && len(groups) > 0 {
					groups = append(groups, m[1])
				}
			}
			if got := strings.Join(groups, " "); got != tc.groups {
				t.Errorf("groups %q, want %q", got, tc.groups)
			}
			// What is left is what it was.
			g, err := elfobj.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			byName := make(map[string]*elfobj.Section)
			for _, s := range orig.Sections {
				byName[s.Name] = s
			}
			symKey := func(f *elfobj.File, k uint32) string {
				s := f.Symbols[k]
				sec := ""
				if s.Shndx > 0 && s.Shndx < 0xff00 {
					sec = f.Sections[s.Shndx].Name
				}
				return fmt.Sprintf("%s@%s+%d", s.Name, sec, s.Value)
			}
			for _, s := range g.Sections[1:] {
				o := byName[s.Name]
				if o == nil || tc.drop(o) {
					t.Fatalf("section %s should not be there", s.Name)
				}
				if s.Type != elf.SHT_GROUP && s.Type != elf.SHT_SYMTAB && s.Type != elf.SHT_RELA && s.Type != elf.SHT_STRTAB && !bytes.Equal(s.Data, o.Data) {
					t.Errorf("section %s: contents changed", s.Name)
				}
				if len(s.Relocs) != len(o.Relocs) {
					t.Fatalf("section %s: %d relocations, want %d", s.Name, len(s.Relocs), len(o.Relocs))
				}
				for k, r := range s.Relocs {
					if symKey(g, r.Sym) != symKey(orig, o.Relocs[k].Sym) || r.Off != o.Relocs[k].Off || r.Addend != o.Relocs[k].Addend {
						t.Fatalf("section %s: relocation %d refers to %s, want %s", s.Name, k, symKey(g, r.Sym), symKey(orig, o.Relocs[k].Sym))
					}
				}
			}
		})
	}
}

func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{".text.main", ".text.main"},
		{"café", "café"},
		{"a\nb", `a\nb`},
		{"\x1b[31mred", `\x1b[31mred`},
		{"\x80\xff", `\x80\xff`},
		{"tab\there", `tab\there`},
		{"line\u2028sep", `line\u2028sep`},
	} {
		if got := elfobj.Printable(c.in); got != c.want {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	err := elfobj.PrintableError(fmt.Errorf("member a\nb: %w", &elfobj.LTOError{IR: "LLVM bitcode"}))
	var lto *elfobj.LTOError
	if err.Error() != `member a\nb: LTO object (LLVM bitcode): compile with -fno-lto` || !errors.Is(err, elfobj.ErrLTO) || !errors.As(err, &lto) {
		t.Errorf("PrintableError: %q, Is %v, As %v", err, errors.Is(err, elfobj.ErrLTO), errors.As(err, &lto))
	}
}

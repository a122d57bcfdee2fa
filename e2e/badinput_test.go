package e2e

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"hijack/internal/objmut"
)

// Bad input: for inputs that are not x86-64 relocatable objects, or are
// corrupt ones, `hijack -rules pad.yaml IN OUT` must exit non-zero with
// exactly one line on stderr that starts with "hijack: " and names IN, leave
// no OUT (nor any other file) behind, never panic, and finish within 10 s
// of CPU time (a wall-clock limit would depend on the machine's load; the
// generous one below only catches a process blocked on something).
// Executables and shared objects get a specific hint.
//
// The copy-through stand-in accepts everything, so this test is skipped
// when HIJACK is the stand-in: it is to be enabled (it enables itself) when
// the real bin/hijack lands. E2E_FORCE_BADINPUT=1 runs it anyway.

const linkedHint = "hijack rewrites relocatable objects: pass the .o files before linking"

type badInput struct {
	name     string
	data     []byte
	mustFail bool   // false: random corruption that may still be a valid object
	hint     string // required substring of the message
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	reportWall(t)
	needHijack(t)
	if cfg.fake && os.Getenv("E2E_FORCE_BADINPUT") == "" {
		t.Skipf("TODO(enable with the real rewriter): HIJACK=%s is the copy-through stand-in, which accepts any input; "+
			"this test runs by itself against bin/hijack (E2E_FORCE_BADINPUT=1 forces it, expecting failures)", rel(cfg.hijack))
	}
	rules := filepath.Join(cfg.root, "testdata", "rules", "pad.yaml")
	inputs := badInputs(t)
	for _, in := range inputs {
		in := in
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			checkBadInput(t, rules, in)
		})
	}
}

func checkBadInput(t *testing.T, rules string, in badInput) {
	dir := workDir(t)
	writeFile(t, filepath.Join(dir, in.name), in.data)
	out := "out-" + in.name
	before := listDir(t, dir)
	args := []string{"-rules", rules, in.name, out}
	r := mustRun(t, spec{Dir: dir, CPU: 10 * time.Second, Timeout: 2 * time.Minute}, cfg.hijack, args...)
	what := fmt.Sprintf("%s (in %s)", cmdline("hijack", args...), rel(dir))
	all := string(r.Stdout) + string(r.Stderr)
	if r.TimedOut {
		t.Fatalf("%s: did not finish (10 s of CPU time, 2 min in all): %s", what, r.status())
	}
	if strings.Contains(all, "panic") || strings.Contains(all, "goroutine") {
		t.Fatalf("%s: output mentions panic/goroutine:\n%s", what, tail([]byte(all), 3000))
	}
	if r.Signal != "" {
		t.Fatalf("%s: %s\n%s", what, r.status(), tail(r.Stderr, 2000))
	}
	if r.Exit == 0 {
		if in.mustFail {
			t.Fatalf("%s: exit 0 on invalid input (stderr %q)", what, tail(r.Stderr, 500))
		}
		if _, err := os.Stat(filepath.Join(dir, out)); err != nil {
			t.Fatalf("%s: exit 0 but no output: %v", what, err)
		}
		return // a corruption that left a valid object
	}
	msg := string(r.Stderr)
	lines := strings.Split(strings.TrimSuffix(msg, "\n"), "\n")
	switch {
	case len(lines) != 1 || msg == "":
		t.Errorf("%s: want exactly one line on stderr, got %d:\n%s", what, len(lines), tail(r.Stderr, 2000))
	case !strings.HasPrefix(lines[0], "hijack: "):
		t.Errorf("%s: stderr does not start with \"hijack: \": %q", what, lines[0])
	case !strings.Contains(lines[0], in.name):
		t.Errorf("%s: message does not name the input %s: %q", what, in.name, lines[0])
	case in.hint != "" && !strings.Contains(lines[0], in.hint):
		t.Errorf("%s: message lacks %q: %q", what, in.hint, lines[0])
	}
	if after := listDir(t, dir); after != before {
		t.Errorf("%s: failed but left files behind: before [%s], after [%s]", what, before, after)
	}
}

func listDir(t *testing.T, dir string) string {
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// badInputs builds the list of inputs from a real object, a linked
// executable and a shared object.
func badInputs(t *testing.T) []badInput {
	obj := compile(t, "gcc", []string{"-O2", "-g"}, testdata("demo", "hashtab.c"))
	good, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	var ins []badInput
	add := func(name string, data []byte, hint string) {
		ins = append(ins, badInput{name: name, data: data, mustFail: true, hint: hint})
	}

	add("empty.o", nil, "")
	add("text.o", []byte("this is a text file, not an ELF object\nsecond line\n"), "")
	add("elf-magic-only.o", []byte("\x7fELF"), "")
	lengths := []int{1, 4, 16, 20, 52, 63, 64, 65, 200, len(good) / 4, len(good) / 2, len(good) - 200, len(good) - 1}
	shoff := int(binary.LittleEndian.Uint64(good[0x28:]))
	if shoff > 64 && shoff < len(good) {
		lengths = append(lengths, shoff, shoff+10, shoff+64+3)
	}
	seen := map[int]bool{}
	for _, n := range lengths {
		if n > 0 && n < len(good) && !seen[n] {
			seen[n] = true
			add(fmt.Sprintf("trunc-%d.o", n), good[:n], "")
		}
	}
	add("elf32-crafted.o", craftELF32(), "")
	if m32 := compileM32(t); m32 != nil {
		add("elf32-gcc-m32.o", m32, "")
	}
	add("bigendian.o", patch(good, 5, 2), "")       // EI_DATA = ELFDATA2MSB
	add("bad-version.o", patch(good, 6, 0), "")     // EI_VERSION
	add("class-none.o", patch(good, 4, 0), "")      // EI_CLASS = ELFCLASSNONE
	add("aarch64.o", patch16(good, 18, 183), "")    // e_machine = EM_AARCH64
	add("i386-machine.o", patch16(good, 18, 3), "") // e_machine = EM_386 in an ELF64 file
	add("core-type.o", patch16(good, 16, 4), "")    // e_type = ET_CORE
	add("shoff-beyond-eof.o", patch64(good, 0x28, uint64(len(good))+4096), "")
	add("shoff-wraps.o", patch64(good, 0x28, ^uint64(0)-10), "")
	add("shnum-huge.o", patch16(good, 0x3c, 0xfeff), "")
	add("shentsize-32.o", patch16(good, 0x3a, 32), "")
	add("shstrndx-out-of-range.o", patch16(good, 0x3e, uint16(shnumOf(good)+3)), "")

	// section header corruptions that are invalid by construction
	f, err := elf.NewFile(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	shnum := len(f.Sections)
	shent := func(i int) int { return shoff + i*64 }
	rng := rand.New(rand.NewSource(1))
	var progbits, rela []int
	symtab, text := -1, -1
	for i, s := range f.Sections {
		switch {
		case s.Type == elf.SHT_RELA:
			rela = append(rela, i)
		case s.Type == elf.SHT_SYMTAB:
			symtab = i
		case s.Type == elf.SHT_PROGBITS && s.Size > 0:
			progbits = append(progbits, i)
			if s.Name == ".text" {
				text = i
			}
		}
	}
	if symtab < 0 || text < 0 || len(rela) == 0 || len(progbits) < 3 {
		t.Fatalf("test object %s lacks .symtab/.text/.rela sections", obj)
	}
	for k := 0; k < 3; k++ {
		i := progbits[rng.Intn(len(progbits))]
		n := f.Sections[i].Name
		add(fmt.Sprintf("sec%d%s-offset-beyond-eof.o", i, n), patch64(good, shent(i)+0x18, uint64(len(good))+uint64(rng.Intn(1<<20))), "")
		add(fmt.Sprintf("sec%d%s-size-beyond-eof.o", i, n), patch64(good, shent(i)+0x20, uint64(len(good))*4+uint64(rng.Intn(1<<20))), "")
		add(fmt.Sprintf("sec%d%s-name-out-of-range.o", i, n), patch32(good, shent(i), 0x7fff0000+uint32(rng.Intn(1000))), "")
	}
	r := rela[rng.Intn(len(rela))]
	add("symtab-link-out-of-range.o", patch32(good, shent(symtab)+0x28, uint32(shnum+7)), "")
	add("symtab-link-to-text.o", patch32(good, shent(symtab)+0x28, uint32(text)), "")
	add("symtab-size-beyond-eof.o", patch64(good, shent(symtab)+0x20, uint64(len(good))*2), "")
	add("rela-link-out-of-range.o", patch32(good, shent(r)+0x28, uint32(shnum+7)), "")
	add("rela-link-to-text.o", patch32(good, shent(r)+0x28, uint32(text)), "")
	add("rela-info-out-of-range.o", patch32(good, shent(r)+0x2c, uint32(shnum+9)), "")
	// a relocation naming a symbol that does not exist, or pointing past its section
	relaOff := int(f.Sections[r].Offset)
	nsyms := int(f.Sections[symtab].Size / 24)
	add("reloc-symbol-out-of-range.o", patch64(good, relaOff+8, uint64(nsyms+100)<<32|uint64(elf.R_X86_64_PC32)), "")
	target := f.Sections[f.Sections[r].Info]
	add("reloc-offset-out-of-range.o", patch64(good, relaOff, target.Size+64), "")
	// a symbol in a section that does not exist
	symOff := int(f.Sections[symtab].Offset)
	for k := 1; k < nsyms; k++ {
		shndx := binary.LittleEndian.Uint16(good[symOff+k*24+6:])
		if shndx != 0 && shndx < 0xff00 {
			add("symbol-section-out-of-range.o", patch16(good, symOff+k*24+6, uint16(shnum+5)), "")
			break
		}
	}

	// linked files
	dir := t.TempDir()
	for _, l := range []struct {
		name  string
		flags []string
	}{
		{"program-pie", []string{"-pie"}},
		{"program-nopie", []string{"-no-pie"}},
		{"libshared.so", []string{"-shared", "-fPIC"}},
	} {
		out := filepath.Join(dir, l.name)
		srcs := []string{testdata("gdb", "main.c"), testdata("gdb", "deep.c")}
		if strings.HasSuffix(l.name, ".so") {
			srcs = []string{testdata("demo", "hashtab.c")}
		}
		args := append(append(append([]string{}, l.flags...), "-O1", "-o", out), srcs...)
		res := mustRun(t, spec{Dir: dir}, "gcc", args...)
		if res.Exit != 0 {
			t.Fatalf("gcc %v: %s\n%s", args, res.status(), res.Stderr)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		add(l.name, data, linkedHint)
	}
	// hijack also rewrites archives (passing members that are not objects
	// through); a truncated archive must fail as a whole
	goodArch := []byte("!<arch>\n" + fmt.Sprintf("%-16s%-12d%-6d%-6d%-8o%-10d`\n", "hashtab.o/", 0, 0, 0, 0o644, len(good)))
	goodArch = append(goodArch, good...)
	add("truncated.a", goodArch[:len(goodArch)/2], "")

	// alignments the writer padded the file to (out of memory, makeslice)
	for i, s := range f.Sections {
		switch s.Name {
		case ".note.GNU-stack":
			add("align-2^40-note.o", patch64(good, shent(i)+0x30, 1<<40), "alignment 2^40 is larger than any toolchain produces")
		case ".eh_frame":
			add("align-2^63-eh_frame.o", patch64(good, shent(i)+0x30, 1<<63), "alignment 2^63 is larger than any toolchain produces")
		}
	}
	ins = append(ins, ltoInputs(t)...)

	// an object hijack already rewrote (a second vptrace pass registered
	// the object twice)
	rdir := t.TempDir()
	in, out := filepath.Join(rdir, "once.o"), filepath.Join(rdir, "twice.o")
	writeFile(t, in, good)
	if err := rewrite(filepath.Join(cfg.root, "testdata", "rules", "vptrace.yaml"), in, out); err != nil {
		t.Fatal(err)
	}
	once, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	add("rewritten.o", once, "already rewritten by hijack (presets: vptrace); rewrite the original object")

	// structured mutants (package objmut: the fields readers index and
	// allocate by set to boundary values), of which some stay valid
	for k, m := range objmut.Mutate(good, 7, 24) {
		ins = append(ins, badInput{name: fmt.Sprintf("mutant%02d.o", k), data: m.Data})
	}

	// random corruptions of the headers: these may leave a valid object,
	// but hijack must either succeed or fail cleanly
	n := 40
	if s := os.Getenv("E2E_BADINPUT_RANDOM"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v >= 0 {
			n = v
		}
	}
	for k := 0; k < n; k++ {
		d := append([]byte(nil), good...)
		flips := 1 + rng.Intn(4)
		var desc []string
		for j := 0; j < flips; j++ {
			var off int
			if rng.Intn(4) == 0 {
				off = 0x10 + rng.Intn(0x30) // ELF header fields
			} else {
				i := 1 + rng.Intn(shnum-1)
				field := []int{0x4, 0x8, 0x18, 0x20, 0x28, 0x2c, 0x30, 0x38}[rng.Intn(8)] // type flags offset size link info align entsize
				off = shent(i) + field + rng.Intn(4)
			}
			v := byte(rng.Intn(256))
			if rng.Intn(3) == 0 {
				v = 0xff
			}
			d[off] = v
			desc = append(desc, fmt.Sprintf("%x", off))
		}
		ins = append(ins, badInput{name: fmt.Sprintf("random%02d-%s.o", k, strings.Join(desc, "-")), data: d})
	}
	return ins
}

// ltoInputs returns LTO objects without machine code, alone and as archive
// members: gcc -flto (GIMPLE only; was rewritten with no function, exit 0),
// clang -flto and -flto=thin (LLVM bitcode; was "not an ELF file").
func ltoInputs(t *testing.T) []badInput {
	var ins []badInput
	src := testdata("demo", "hashtab.c")
	const gimple, bitcode = "LTO object (GIMPLE IR): compile with -fno-lto", "LTO object (LLVM bitcode): compile with -fno-lto"
	for _, c := range []struct {
		name, cc string
		flags    []string
		hint     string
	}{
		{"lto-gcc.o", "gcc", []string{"-O2", "-flto"}, gimple},
		{"lto-gcc-g.o", "gcc", []string{"-O0", "-g", "-flto"}, gimple},
		{"lto-clang.o", "clang", []string{"-O2", "-flto"}, bitcode},
		{"lto-clang-thin.o", "clang", []string{"-O2", "-flto=thin"}, bitcode},
	} {
		data, err := os.ReadFile(compile(t, c.cc, c.flags, src))
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, badInput{name: c.name, data: data, mustFail: true, hint: c.hint})
		{
			// An archive of such objects fails as a whole, naming the
			// member (bitcode members were copied as non-objects).
			a := []byte("!<arch>\n" + fmt.Sprintf("%-16s%-12d%-6d%-6d%-8o%-10d`\n", "hashtab.o/", 0, 0, 0, 0o644, len(data)))
			a = append(a, data...)
			if len(a)%2 == 1 {
				a = append(a, '\n')
			}
			ins = append(ins, badInput{name: strings.TrimSuffix(c.name, ".o") + ".a", data: a, mustFail: true, hint: "member hashtab.o: " + c.hint})
		}
	}
	return ins
}

func shnumOf(b []byte) int { return int(binary.LittleEndian.Uint16(b[0x3c:])) }

func patch(b []byte, off int, v byte) []byte {
	c := append([]byte(nil), b...)
	c[off] = v
	return c
}

func patch16(b []byte, off int, v uint16) []byte {
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint16(c[off:], v)
	return c
}

func patch32(b []byte, off int, v uint32) []byte {
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(c[off:], v)
	return c
}

func patch64(b []byte, off int, v uint64) []byte {
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint64(c[off:], v)
	return c
}

// craftELF32 returns an ELFCLASS32 i386 relocatable object: a header, a
// null section and a .shstrtab.
func craftELF32() []byte {
	strtab := []byte("\x00.shstrtab\x00")
	var b bytes.Buffer
	hdr := make([]byte, 52)
	copy(hdr, "\x7fELF\x01\x01\x01")
	binary.LittleEndian.PutUint16(hdr[16:], uint16(elf.ET_REL))
	binary.LittleEndian.PutUint16(hdr[18:], uint16(elf.EM_386))
	binary.LittleEndian.PutUint32(hdr[20:], 1)
	shoff := 52 + len(strtab)
	binary.LittleEndian.PutUint32(hdr[32:], uint32(shoff))
	binary.LittleEndian.PutUint16(hdr[40:], 52) // e_ehsize
	binary.LittleEndian.PutUint16(hdr[46:], 40) // e_shentsize
	binary.LittleEndian.PutUint16(hdr[48:], 2)  // e_shnum
	binary.LittleEndian.PutUint16(hdr[50:], 1)  // e_shstrndx
	b.Write(hdr)
	b.Write(strtab)
	b.Write(make([]byte, 40)) // null section
	sh := make([]byte, 40)
	binary.LittleEndian.PutUint32(sh[0:], 1)
	binary.LittleEndian.PutUint32(sh[4:], uint32(elf.SHT_STRTAB))
	binary.LittleEndian.PutUint32(sh[16:], 52)
	binary.LittleEndian.PutUint32(sh[20:], uint32(len(strtab)))
	binary.LittleEndian.PutUint32(sh[32:], 1)
	b.Write(sh)
	return b.Bytes()
}

// compileM32 returns a 32-bit object from `gcc -m32 -c`, or nil when the
// compiler cannot produce one (no multilib).
func compileM32(t *testing.T) []byte {
	dir := t.TempDir()
	src := filepath.Join(dir, "m32.c")
	writeFile(t, src, []byte("int counter;\nint bump(int x) { counter += x; return counter * 3; }\n"))
	r, err := run(spec{Dir: dir, Timeout: time.Minute}, "gcc", "-m32", "-O2", "-c", src, "-o", filepath.Join(dir, "m32.o"))
	if err != nil || r.Exit != 0 {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(dir, "m32.o"))
	if err != nil {
		return nil
	}
	return data
}

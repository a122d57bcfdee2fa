package emit

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hijack/elfobj"
	"hijack/ibr"
	"hijack/internal/leb128"
	"hijack/internal/testutil"
)

// These tests compile the sources in testdata/dwarf with the real
// compilers, insert NOPs of random length before every instruction (what
// the pad preset does), and check the debug information of the result
// against the original with independent readers: llvm-dwarfdump (line
// tables, DIE ranges, range and location lists, aranges, frames, --verify)
// and gdb on a linked program.

type dwConfig struct {
	name  string
	cc    string
	src   string
	flags []string
	gdb   bool // also run the gdb check (the source has a main)
}

var dwConfigs = []dwConfig{
	{"loops-gcc-O0", "gcc", "loops.c", []string{"-O0", "-g"}, true},
	{"loops-gcc-O2", "gcc", "loops.c", []string{"-O2", "-g"}, true},
	{"loops-gcc-O2-dwarf4", "gcc", "loops.c", []string{"-O2", "-g", "-gdwarf-4"}, true},
	{"loops-clang-O0", "clang", "loops.c", []string{"-O0", "-g"}, true},
	{"loops-clang-O2", "clang", "loops.c", []string{"-O2", "-g"}, true},
	{"loops-clang-O2-dwarf4", "clang", "loops.c", []string{"-O2", "-g", "-gdwarf-4"}, true},
	{"loops-gcc-O1-debug-frame", "gcc", "loops.c", []string{"-O1", "-g", "-fno-asynchronous-unwind-tables"}, true},
	{"loops-clang-O1-debug-frame", "clang", "loops.c", []string{"-O1", "-g", "-fno-asynchronous-unwind-tables"}, true},
	{"lib-gcc-O2", "gcc", "lib.c", []string{"-O2", "-g"}, false},
	{"lib-gcc-O2-dwarf4", "gcc", "lib.c", []string{"-O2", "-g", "-gdwarf-4"}, false},
	{"lib-gcc-O3-function-sections", "gcc", "lib.c", []string{"-O3", "-g", "-ffunction-sections"}, false},
	{"lib-clang-O2", "clang", "lib.c", []string{"-O2", "-g"}, false},
	{"lib-clang-O2-function-sections", "clang", "lib.c", []string{"-O2", "-g", "-ffunction-sections"}, false},
	{"lib-clang-O1-dwarf4-function-sections", "clang", "lib.c", []string{"-O1", "-g", "-gdwarf-4", "-ffunction-sections"}, false},
	{"shapes-g++-O0", "g++", "shapes.cpp", []string{"-O0", "-g"}, true},
	{"shapes-g++-O2", "g++", "shapes.cpp", []string{"-O2", "-g"}, true},
	{"shapes-g++-O2-dwarf4", "g++", "shapes.cpp", []string{"-O2", "-g", "-gdwarf-4"}, false},
	{"shapes-clang++-O0", "clang++", "shapes.cpp", []string{"-O0", "-g"}, true},
	{"shapes-clang++-O2", "clang++", "shapes.cpp", []string{"-O2", "-g"}, true},
}

// dwStats counts what the tests compared, for the log.
var dwStats struct {
	sync.Mutex
	rows, ranges, pcs, frames, gdbStops int
}

func dwNeedTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
}

func dwRun(t *testing.T, dir string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return "", err
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		return out.String(), fmt.Errorf("%s timed out", name)
	}
}

func dwMustRun(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	out, err := dwRun(t, dir, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// dwPadded is the result of rewriting an object with NOPs.
type dwPadded struct {
	in, out []byte
	// maps are the layouts Emit computed, kept with the old section
	// contents so that they still answer after Emit.
	maps  map[int]*codeMap
	warns []string
}

// dwPadObject inserts NOPs of 1..maxLen bytes before every instruction of
// every rewritable function, except the first `keep` instructions of each
// function, and emits the object.
func dwPadObject(t *testing.T, in []byte, seed uint64, maxLen, keep int) *dwPadded {
	t.Helper()
	f, err := elfobj.Read(in)
	if err != nil {
		t.Fatal(err)
	}
	return dwPadFile(t, f, in, seed, maxLen, keep)
}

// dwPadFile is padObject on an object already read from in.
func dwPadFile(t *testing.T, f *elfobj.File, in []byte, seed uint64, maxLen, keep int) *dwPadded {
	t.Helper()
	o, err := ibr.Build(f)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	snips := make([]*ibr.Snippet, maxLen+1)
	for n := 1; n <= maxLen; n++ {
		code := make([]byte, n)
		FillNops(code)
		snips[n] = &ibr.Snippet{Code: code}
	}
	for _, s := range o.Code {
		if !s.Rewritable() {
			t.Logf("section %s is not rewritable: %s", s.Elf.Name, s.Problem)
			continue
		}
		for _, fn := range s.Funcs {
			for i := fn.Start + keep; i < fn.End; i++ {
				if s.Insts[i].Kind != ibr.Code {
					continue
				}
				if err := s.InsertBefore(i, snips[1+rng.IntN(maxLen)]); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	p := &dwPadded{in: in, maps: make(map[int]*codeMap)}
	for _, s := range o.Code {
		if s.Insertions == 0 {
			continue
		}
		// The same layout Emit computes, on a copy of the section that
		// keeps the old contents.
		sc := *s
		ec := *s.Elf
		sc.Elf = &ec
		m := newCodeMap(&sc)
		m.relax()
		p.maps[s.Index] = m
	}
	if err := Emit(o, func(w string) { p.warns = append(p.warns, w) }); err != nil {
		t.Fatal(err)
	}
	if p.out, err = f.Write(); err != nil {
		t.Fatal(err)
	}
	// The maps must be Emit's: every function symbol moved as they say.
	nf, err := elfobj.Read(p.out)
	if err != nil {
		t.Fatal(err)
	}
	of, _ := elfobj.Read(in)
	for k, sym := range of.Symbols {
		m := p.maps[int(sym.Shndx)]
		if m == nil || sym.Type() != elf.STT_FUNC {
			continue
		}
		want, err := m.addrOf(sym.Value)
		if err != nil || nf.Symbols[k].Value != want {
			t.Fatalf("symbol %s: at 0x%x, the test's layout says 0x%x (%v)", sym.Name, nf.Symbols[k].Value, want, err)
		}
	}
	return p
}

// dwCodeBase is the address the tests give code section idx, so that
// llvm-dwarfdump, which adds sh_addr to relocation targets in relocatable
// objects, prints addresses that name their section.
func dwCodeBase(idx int) uint64 { return uint64(idx) << 20 }

// dwBased returns a copy of an object whose code sections have distinct
// addresses.
func dwBased(t *testing.T, obj []byte) []byte {
	t.Helper()
	f, err := elfobj.Read(obj)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range f.Sections {
		if s.IsCode() {
			s.Addr = dwCodeBase(i)
		}
	}
	b, err := f.Write()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mapper maps addresses printed for the based input object to those the
// dwBased output object must show.
func (p *dwPadded) mapper(t *testing.T) func(uint64) (uint64, error) {
	f, err := elfobj.Read(p.in)
	if err != nil {
		t.Fatal(err)
	}
	type rng struct {
		idx       int
		base, end uint64
	}
	var rs []rng
	for i, s := range f.Sections {
		if s.IsCode() {
			rs = append(rs, rng{i, dwCodeBase(i), dwCodeBase(i) + uint64(len(s.Data))})
		}
	}
	return func(a uint64) (uint64, error) {
		for _, r := range rs {
			if a >= r.base && a <= r.end {
				m := p.maps[r.idx]
				if m == nil {
					return a, nil
				}
				n, err := m.addrOf(a - r.base)
				if err != nil {
					// A byte inside an instruction (gcc's "end of
					// call - 1"): the same byte of the new encoding;
					// the last byte stays the last.
					off := a - r.base
					i := m.sec.Find(off)
					in := &m.sec.Insts[i]
					d := off - uint64(in.Off)
					if d == uint64(in.Len)-1 {
						d = m.encLen(i) - 1
					}
					n, err = uint64(m.inst[i])+d, nil
				}
				return r.base + n, err
			}
		}
		return a, nil
	}
}

var (
	lineRow  = regexp.MustCompile(`(?m)^0x([0-9a-f]{16})[ \t]+(\d+[ \t]+\d+[ \t]+\d+[ \t]+\d+[ \t]+\d+[^\n]*)$`)
	pcAttr   = regexp.MustCompile(`(DW_AT_(?:low_pc|high_pc|entry_pc|call_return_pc|call_pc))\s+\(0x([0-9a-f]+)\)`)
	rangeRe  = regexp.MustCompile(`\[0x([0-9a-f]+), 0x([0-9a-f]+)\)`)
	fdeRange = regexp.MustCompile(`pc=([0-9a-f]+)\.\.\.([0-9a-f]+)`)
)

func dwHex(s string) uint64 {
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		panic(err)
	}
	return v
}

// dwAddrItem is an address llvm-dwarfdump printed, with its context.
type dwAddrItem struct {
	what string
	a    uint64
}

// dwDumpAddrs extracts, in order, every address of code the dump shows:
// DW_AT_*_pc values, [begin, end) pairs of DIE ranges and lists, FDE
// ranges.
func dwDumpAddrs(dump string) []dwAddrItem {
	var items []dwAddrItem
	type hit struct {
		pos  int
		item []dwAddrItem
	}
	var hits []hit
	for _, m := range pcAttr.FindAllStringSubmatchIndex(dump, -1) {
		hits = append(hits, hit{m[0], []dwAddrItem{{dump[m[2]:m[3]], dwHex(dump[m[4]:m[5]])}}})
	}
	for _, m := range rangeRe.FindAllStringSubmatchIndex(dump, -1) {
		hits = append(hits, hit{m[0], []dwAddrItem{{"range begin", dwHex(dump[m[2]:m[3]])}, {"range end", dwHex(dump[m[4]:m[5]])}}})
	}
	for _, m := range fdeRange.FindAllStringSubmatchIndex(dump, -1) {
		hits = append(hits, hit{m[0], []dwAddrItem{{"FDE begin", dwHex(dump[m[2]:m[3]])}, {"FDE end", dwHex(dump[m[4]:m[5]])}}})
	}
	slices.SortFunc(hits, func(a, b hit) int { return a.pos - b.pos })
	for _, h := range hits {
		items = append(items, h.item...)
	}
	return items
}

// dwCompareAddrs checks that the output dump shows the input dump's
// addresses mapped.
func dwCompareAddrs(t *testing.T, what string, in, out []dwAddrItem, mapAddr func(uint64) (uint64, error)) int {
	t.Helper()
	if len(in) != len(out) {
		t.Errorf("%s: %d addresses in the input, %d in the output", what, len(in), len(out))
		return 0
	}
	bad := 0
	for i := range in {
		want, err := mapAddr(in[i].a)
		if err != nil || in[i].what != out[i].what || out[i].a != want {
			if bad++; bad <= 10 {
				t.Errorf("%s: item %d (%s 0x%x): output has %s 0x%x, want 0x%x (%v)", what, i, in[i].what, in[i].a, out[i].what, out[i].a, want, err)
			}
		}
	}
	return len(in)
}

// dwLineRows extracts the rows of llvm-dwarfdump --debug-line.
func dwLineRows(dump string) [][2]string {
	var rows [][2]string
	for _, m := range lineRow.FindAllStringSubmatch(dump, -1) {
		rows = append(rows, [2]string{m[1], strings.Join(strings.Fields(m[2]), " ")})
	}
	return rows
}

// dwHideCallSites returns a copy of an object whose call site DIEs have an
// unknown tag: llvm-dwarfdump 14 --verify loops forever on call sites
// nested in lexical blocks or inlined subroutines (its parent walk never
// advances), which gcc emits at -O1 and above.
func dwHideCallSites(t *testing.T, obj []byte) []byte {
	t.Helper()
	f, err := elfobj.Read(obj)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range f.Sections {
		if s.Name != ".debug_abbrev" {
			continue
		}
		b := s.Data
		p := 0
		next := func() uint64 {
			v, n, err := leb128.ReadUleb(b[p:])
			if err != nil {
				t.Fatalf(".debug_abbrev at 0x%x: %v", p, err)
			}
			p += n
			return v
		}
		for p < len(b) {
			if next() == 0 {
				continue
			}
			at := p
			switch tag := next(); {
			case tag == 0x48 && p-at == 1: // DW_TAG_call_site
				b[at] = 0x7e
			case tag == 0x4109 && p-at == 3: // DW_TAG_GNU_call_site
				b[at], b[at+1], b[at+2] = 0xfe, 0x81, 0x01 // 0x40fe
			}
			p++ // children
			for {
				name, form := next(), next()
				if form == 0x21 { // DW_FORM_implicit_const
					_, n, _ := leb128.ReadSleb(b[p:])
					p += n
				}
				if name == 0 && form == 0 {
					break
				}
			}
		}
	}
	out, err := f.Write()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dwArangesOf reads the ranges of .debug_aranges, applying relocations
// against code sections as if they were at codeBase.
func dwArangesOf(t *testing.T, obj []byte) []dwAddrItem {
	t.Helper()
	f, err := elfobj.Read(obj)
	if err != nil {
		t.Fatal(err)
	}
	var items []dwAddrItem
	for idx, s := range f.Sections {
		if s.Name != ".debug_aranges" {
			continue
		}
		rel := make(map[uint64]elfobj.Rela)
		for _, rs := range f.Sections {
			if rs.Type == elf.SHT_RELA && int(rs.Info) == idx {
				for _, r := range rs.Relocs {
					rel[r.Off] = r
				}
			}
		}
		b := s.Data
		for p := uint64(0); p+4 <= uint64(len(b)); {
			end := p + 4 + uint64(le32(b[p:]))
			q := p + 16 // 32-bit DWARF, 8-byte addresses: 12-byte header padded to 16
			for ; q+16 <= end; q += 16 {
				a := dwLe64(b[q:])
				l := dwLe64(b[q+8:])
				r, ok := rel[q]
				if !ok && a == 0 && l == 0 {
					break
				}
				if ok {
					sym := f.Symbols[r.Sym]
					a = uint64(int64(sym.Value) + r.Addend)
					if f.Sections[sym.Shndx].IsCode() {
						a += dwCodeBase(int(sym.Shndx))
					}
				}
				items = append(items, dwAddrItem{"arange begin", a}, dwAddrItem{"arange end", a + l})
			}
			p = end
		}
	}
	return items
}

func dwLe64(b []byte) uint64 { return uint64(le32(b)) | uint64(le32(b[4:]))<<32 }

// dwCountErrors counts the errors llvm-dwarfdump --verify reported.
func dwCountErrors(out string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "error:") {
			n++
		}
	}
	return n
}

// dwRunAll runs commands in dir concurrently and returns their outputs;
// commands that fail are errors unless their name starts with '-'.
func dwRunAll(t *testing.T, dir string, cmds ...[]string) []string {
	t.Helper()
	outs := make([]string, len(cmds))
	errs := make([]error, len(cmds))
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name, mayFail := c[0], false
			if strings.HasPrefix(name, "-") {
				name, mayFail = name[1:], true
			}
			outs[i], errs[i] = dwRun(t, dir, name, c[1:]...)
			if mayFail {
				errs[i] = nil
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmds[i], " "), err, outs[i])
		}
	}
	return outs
}

func dwWriteFile(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDebugInfoFollowsMovedCode(t *testing.T) {
	dwNeedTools(t, "gcc", "g++", "clang", "clang++", "llvm-dwarfdump")
	for _, c := range dwConfigs {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if keep := os.Getenv("DWARF_TEST_KEEP"); keep != "" {
				dir = filepath.Join(keep, c.name)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			src, err := filepath.Abs(filepath.Join("testdata", "dwarf", c.src))
			if err != nil {
				t.Fatal(err)
			}
			args := append(slices.Clone(c.flags), "-c", src, "-o", "in.o")
			dwMustRun(t, dir, c.cc, args...)
			in, err := os.ReadFile(filepath.Join(dir, "in.o"))
			if err != nil {
				t.Fatal(err)
			}
			p := dwPadObject(t, in, 1, 7, 0)
			if len(p.maps) == 0 {
				t.Fatal("no code was rewritten")
			}
			for _, w := range p.warns {
				if strings.Contains(w, "debug information") {
					t.Errorf("warning: %s", w)
				}
			}
			dwWriteFile(t, dir, "out.o", p.out)
			dwWriteFile(t, dir, "in-based.o", dwBased(t, in))
			dwWriteFile(t, dir, "out-based.o", dwBased(t, p.out))
			// llvm-dwarfdump 14 --verify loops on gcc's nested call sites.
			dwWriteFile(t, dir, "verify-in.o", dwHideCallSites(t, dwBased(t, in)))
			dwWriteFile(t, dir, "verify-out.o", dwHideCallSites(t, dwBased(t, p.out)))
			mapAddr := p.mapper(t)
			if os.Getenv("DWARF_TEST_STOP") != "" {
				return
			}

			// The gdb check runs alongside the others.
			gdbDone := make(chan func(), 1)
			if c.gdb && os.Getenv("DWARF_TEST_NOGDB") == "" {
				g := dwPrepareGdb(t, dir, c, src, p)
				go func() { gdbDone <- g() }()
			} else {
				gdbDone <- func() {}
			}

			outs := dwRunAll(t, dir,
				[]string{"-llvm-dwarfdump", "--verify", "verify-in.o"},
				[]string{"-llvm-dwarfdump", "--verify", "verify-out.o"},
				[]string{"llvm-dwarfdump", "--debug-line", "in-based.o"},
				[]string{"llvm-dwarfdump", "--debug-line", "out-based.o"},
				[]string{"llvm-dwarfdump", "--debug-info", "in-based.o"},
				[]string{"llvm-dwarfdump", "--debug-info", "out-based.o"},
				[]string{"llvm-dwarfdump", "--debug-frame", "in-based.o"},
				[]string{"llvm-dwarfdump", "--debug-frame", "out-based.o"},
			)

			// (1) llvm-dwarfdump --verify finds no more problems.
			if ni, no := dwCountErrors(outs[0]), dwCountErrors(outs[1]); no > ni {
				t.Errorf("llvm-dwarfdump --verify: %d errors in the output, %d in the input:\n%s\n--- input:\n%s", no, ni, outs[1], outs[0])
			}

			// (2) Line tables: the same rows at mapped addresses.
			li, lo := dwLineRows(outs[2]), dwLineRows(outs[3])
			if len(li) == 0 {
				t.Fatal("no line rows in the input")
			}
			if len(li) != len(lo) {
				t.Fatalf("line table: %d rows in the input, %d in the output", len(li), len(lo))
			}
			bad := 0
			for i := range li {
				want, err := mapAddr(dwHex(li[i][0]))
				if err != nil || li[i][1] != lo[i][1] || dwHex(lo[i][0]) != want {
					if bad++; bad <= 10 {
						t.Errorf("line row %d: input 0x%s %s, output 0x%s %s, want address 0x%x (%v)", i, li[i][0], li[i][1], lo[i][0], lo[i][1], want, err)
					}
				}
			}

			// (3) DIE ranges, range lists, location lists, aranges, frames.
			di, do := outs[4], outs[5]
			// Apart from addresses, the DIEs say the same.
			ni := strings.Split(gdbHex.ReplaceAllString(di, "0x?"), "\n")[1:]
			no := strings.Split(gdbHex.ReplaceAllString(do, "0x?"), "\n")[1:]
			if len(ni) != len(no) {
				t.Errorf("--debug-info: %d lines in the input, %d in the output", len(ni), len(no))
			}
			for i := 0; i < min(len(ni), len(no)); i++ {
				if ni[i] != no[i] {
					t.Errorf("--debug-info line %d differs beyond addresses:\n%s\n%s", i+2, ni[i], no[i])
					break
				}
			}
			ai := dwDumpAddrs(di)
			n := dwCompareAddrs(t, "--debug-info", ai, dwDumpAddrs(do), mapAddr)
			if n == 0 {
				t.Errorf("no addresses in the DIEs")
			}
			frames := dwCompareAddrs(t, ".debug_frame and .eh_frame", dwDumpAddrs(outs[6]), dwDumpAddrs(outs[7]), mapAddr)
			// llvm-dwarfdump does not relocate .debug_aranges.
			n += dwCompareAddrs(t, ".debug_aranges", dwArangesOf(t, in), dwArangesOf(t, p.out), mapAddr)
			ranges := 0
			for _, a := range ai {
				if a.what == "range begin" {
					ranges++
				}
			}
			dwStats.Lock()
			dwStats.rows += len(li)
			dwStats.pcs += n - 2*ranges
			dwStats.ranges += ranges
			dwStats.frames += frames / 2
			dwStats.Unlock()
			t.Logf("%d line rows, %d list or DIE ranges, %d other addresses, %d FDEs checked", len(li), ranges, n-2*ranges, frames/2)

			// (4) gdb on the linked program.
			(<-gdbDone)()
		})
	}
	t.Cleanup(func() {
		t.Logf("total: %d line rows, %d list or DIE ranges, %d other addresses, %d FDEs, %d gdb stops compared", dwStats.rows, dwStats.ranges, dwStats.pcs, dwStats.frames, dwStats.gdbStops)
	})
}

var (
	gdbHex     = regexp.MustCompile(`0x[0-9a-f]+`)
	gdbOffset  = regexp.MustCompile(`<[^<>]*\+\d+>`)
	gdbNoise   = regexp.MustCompile(`(?m)^(\[Inferior|\[Thread|Using host|warning: Error disabling|Download|Starting program|process \d+).*\n`)
	breakMarks = regexp.MustCompile(`BREAK-[A-Z]+`)
)

// dwPrepareGdb links the original and the rewritten object and returns a
// function that runs both under gdb, with breakpoints on marked source
// lines and on functions, and returns the reporting of the comparison of
// what gdb says (addresses blanked) for the test goroutine to call.
func dwPrepareGdb(t *testing.T, dir string, c dwConfig, src string, p *dwPadded) func() func() {
	dwNeedTools(t, "gdb")
	cxx := strings.HasSuffix(c.src, ".cpp")
	text, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for i, l := range strings.Split(string(text), "\n") {
		if breakMarks.MatchString(l) {
			cmds = append(cmds, fmt.Sprintf("break %s:%d", c.src, i+1))
		}
	}
	if cxx {
		cmds = append(cmds, "break Sq::area", "break total_area")
	} else {
		cmds = append(cmds, "break fib", "break fill")
	}
	cmds = append(cmds, "run")
	for k := 0; k < 6; k++ {
		cmds = append(cmds, "bt", "info line *$pc", "info args", "info locals", "up", "info locals", "continue")
	}
	gargs := []string{"gdb", "-nx", "-batch"}
	for _, cmd := range cmds {
		gargs = append(gargs, "-ex", cmd)
	}
	// gdb finds the end of the prologue of code from gcc by matching
	// push %rbp; mov %rsp,%rbp at the entry: code inserted before them
	// would make `break fn` stop at the opening line instead. That is no
	// matter of debug information, so the gdb check keeps the first two
	// instructions of every function in place.
	gp := dwPadObject(t, p.in, 2, 7, 2)
	dwWriteFile(t, dir, "gdb.o", gp.out)
	// Names of equal length: argv[0] is on the stack, and so is what
	// gdb shows of uninitialised locals (stale stack addresses).
	dwRunAll(t, dir, []string{c.cc, "in.o", "-o", "orig"}, []string{c.cc, "gdb.o", "-o", "rewr"})
	return func() func() {
		var outs [2]string
		var wg sync.WaitGroup
		for k, v := range []string{"orig", "rewr"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, _ := dwRun(t, dir, gargs[0], append(gargs[1:], "--args", "./"+v, "20")...)
				out = gdbNoise.ReplaceAllString(out, "")
				out = gdbOffset.ReplaceAllString(out, "<+N>")
				outs[k] = gdbHex.ReplaceAllString(out, "0x?")
			}()
		}
		wg.Wait()
		return func() { dwReportGdb(t, outs[0], outs[1]) }
	}
}

// dwReportGdb compares what gdb said about the original and the rewritten
// program.
func dwReportGdb(t *testing.T, orig, rewritten string) {
	t.Helper()
	if orig != rewritten {
		ol, nl := strings.Split(orig, "\n"), strings.Split(rewritten, "\n")
		for i := 0; i < max(len(ol), len(nl)); i++ {
			var a, b string
			if i < len(ol) {
				a = ol[i]
			}
			if i < len(nl) {
				b = nl[i]
			}
			if a != b {
				t.Errorf("gdb differs from line %d:\noriginal:  %s\nrewritten: %s", i+1, a, b)
				break
			}
		}
		t.Logf("original:\n%s\nrewritten:\n%s", orig, rewritten)
		return
	}
	stops := strings.Count(orig, "\nBreakpoint ")
	if stops < 3 || !strings.Contains(orig, " at ") {
		t.Errorf("gdb did not stop as expected:\n%s", orig)
	}
	dwStats.Lock()
	dwStats.gdbStops += stops
	dwStats.Unlock()
}

// TestDebugInfoCompressed checks that compressed debug sections
// (SHF_COMPRESSED, as gcc -gz makes them) are rewritten like plain ones.
// The object is compressed in memory: elfobj.Read refuses compressed
// sections with relocations today (it checks relocation offsets against
// the compressed size).
func TestDebugInfoCompressed(t *testing.T) {
	dwNeedTools(t, "gcc")
	dir := t.TempDir()
	src, err := filepath.Abs(filepath.Join("testdata", "dwarf", "loops.c"))
	if err != nil {
		t.Fatal(err)
	}
	dwMustRun(t, dir, "gcc", "-O2", "-g", "-c", src, "-o", "in.o")
	in, err := os.ReadFile(filepath.Join(dir, "in.o"))
	if err != nil {
		t.Fatal(err)
	}
	plain := dwPadObject(t, in, 3, 5, 0)
	f, err := elfobj.Read(in)
	if err != nil {
		t.Fatal(err)
	}
	compressed := 0
	for _, s := range f.Sections {
		if !strings.HasPrefix(s.Name, ".debug_") || s.Type != elf.SHT_PROGBITS {
			continue
		}
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write(s.Data)
		w.Close()
		hdr := make([]byte, 24)
		binary.LittleEndian.PutUint32(hdr, uint32(elf.COMPRESS_ZLIB))
		binary.LittleEndian.PutUint64(hdr[8:], uint64(len(s.Data)))
		binary.LittleEndian.PutUint64(hdr[16:], max(s.Align, 1))
		s.Data = append(hdr, z.Bytes()...)
		s.Flags |= elf.SHF_COMPRESSED
		s.Align = 8
		compressed++
	}
	if compressed == 0 {
		t.Fatal("no debug sections")
	}
	// Write refuses what Read would; compare the Files instead.
	var warns []string
	o, err := ibr.Build(f)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3^0x9e3779b97f4a7c15))
	for _, s := range o.Code {
		for _, fn := range s.Funcs {
			for i := fn.Start; i < fn.End; i++ {
				if s.Insts[i].Kind != ibr.Code {
					continue
				}
				code := make([]byte, 1+rng.IntN(5))
				FillNops(code)
				if err := s.InsertBefore(i, &ibr.Snippet{Code: code}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := Emit(o, func(w string) { warns = append(warns, w) }); err != nil {
		t.Fatal(err)
	}
	for _, w := range warns {
		t.Errorf("warning: %s", w)
	}
	pf, err := elfobj.Read(plain.out)
	if err != nil {
		t.Fatal(err)
	}
	rewritten := 0
	for i, s := range f.Sections {
		if !strings.HasPrefix(s.Name, ".debug_") || s.Type != elf.SHT_PROGBITS {
			continue
		}
		data := s.Data
		if s.Flags&elf.SHF_COMPRESSED != 0 {
			zr, err := zlib.NewReader(bytes.NewReader(data[24:]))
			if err != nil {
				t.Fatal(err)
			}
			if data, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		} else {
			rewritten++
		}
		if !bytes.Equal(data, pf.Sections[i].Data) {
			t.Errorf("section %s differs from the one rewritten without compression", s.Name)
		}
	}
	for i, s := range f.Sections {
		if s.Type == elf.SHT_RELA && !slices.Equal(s.Relocs, pf.Sections[i].Relocs) {
			t.Errorf("relocations in %s differ from those rewritten without compression", s.Name)
		}
	}
	if rewritten < 4 {
		t.Errorf("only %d compressed debug sections were rewritten", rewritten)
	}
	t.Logf("%d compressed debug sections, %d rewritten and written back uncompressed", compressed, rewritten)
}

// TestDebugInfoRelocatedCallEnds shows whether ibr accepts relocations
// from debug sections that designate the last byte of a call: gcc's DWARF 4
// location lists of functions outside .text hold `.quad .LVLn-1`, which the
// assembler leaves to an R_X86_64_64 relocation. emit maps such a byte to
// the same byte of the call's new encoding (remapRefs: inst + delta), but
// ibr.Build refuses the whole section ("inside an instruction").
func TestDebugInfoRelocatedCallEnds(t *testing.T) {
	dwNeedTools(t, "gcc")
	dir := t.TempDir()
	src, err := filepath.Abs(filepath.Join("testdata", "dwarf", "loops.c"))
	if err != nil {
		t.Fatal(err)
	}
	dwMustRun(t, dir, "gcc", "-O2", "-g", "-gdwarf-4", "-c", src, "-o", "in.o")
	o := testutil.BuildIBR(t, filepath.Join(dir, "in.o"))
	for _, s := range o.Code {
		if strings.Contains(s.Problem, ".rela.debug_") {
			t.Skipf("needs ibr to accept relocations from non-allocated sections into instructions: %s: %s", s.Elf.Name, s.Problem)
		}
	}
}

// TestDebugInfoCorrupt damages debug sections of real objects at random:
// rewriting must never fail or panic because of debug information, and
// sections it cannot read are left as they were, with a warning.
func TestDebugInfoCorrupt(t *testing.T) {
	dwNeedTools(t, "gcc", "clang")
	dir := t.TempDir()
	src, err := filepath.Abs(filepath.Join("testdata", "dwarf", "loops.c"))
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string][]string{
		"gcc5.o":   {"gcc", "-O2", "-g"},
		"clang5.o": {"clang", "-O2", "-g"},
		"gcc4.o":   {"gcc", "-O1", "-g", "-gdwarf-4", "-fno-asynchronous-unwind-tables"},
	}
	var cmds [][]string
	for name, c := range objs {
		cmds = append(cmds, append(slices.Clone(c), "-c", src, "-o", name))
	}
	dwRunAll(t, dir, cmds...)
	iters := 150
	if testing.Short() {
		iters = 30
	}
	for name := range objs {
		in, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		base, err := elfobj.Read(in)
		if err != nil {
			t.Fatal(err)
		}
		var dbgSecs []int
		for i, s := range base.Sections {
			if strings.HasPrefix(s.Name, ".debug_") && len(s.Data) > 0 {
				dbgSecs = append(dbgSecs, i)
			}
		}
		rng := rand.New(rand.NewPCG(7, 11))
		for it := 0; it < iters; it++ {
			f, err := elfobj.Read(in)
			if err != nil {
				t.Fatal(err)
			}
			sec := f.Sections[dbgSecs[rng.IntN(len(dbgSecs))]]
			for k := 1 + rng.IntN(4); k > 0; k-- {
				sec.Data[rng.IntN(len(sec.Data))] = byte(rng.Uint32())
			}
			var warns []string
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%s, damaged %s: panic: %v", name, sec.Name, r)
					}
				}()
				o, err := ibr.Build(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range o.Code {
					if !s.Rewritable() {
						continue
					}
					for i := range s.Insts {
						if s.Insts[i].Kind == ibr.Code && i%3 == 0 {
							s.InsertBefore(i, &ibr.Snippet{Code: []byte{0x90}})
						}
					}
				}
				if err := Emit(o, func(w string) { warns = append(warns, w) }); err != nil {
					t.Errorf("%s, damaged %s: %v", name, sec.Name, err)
				}
				if _, err := f.Write(); err != nil {
					t.Errorf("%s, damaged %s: write: %v", name, sec.Name, err)
				}
			}()
		}
	}
}

// TestDebugInfoFallback checks that a construct the rewriter does not know
// leaves its section as it was and says so.
func TestDebugInfoFallback(t *testing.T) {
	dwNeedTools(t, "gcc")
	dir := t.TempDir()
	src, err := filepath.Abs(filepath.Join("testdata", "dwarf", "lib.c"))
	if err != nil {
		t.Fatal(err)
	}
	dwMustRun(t, dir, "gcc", "-O2", "-g", "-c", src, "-o", "in.o")
	in, err := os.ReadFile(filepath.Join(dir, "in.o"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sec  string
		off  int
		val  byte
		want []string
	}{
		{".debug_line", 4, 9, []string{"section .debug_line: line program at 0x0: version 9 is not understood"}},
		{".debug_rnglists", 4, 7, []string{"section .debug_rnglists: unit at 0x0: version 7"}},
		// The first attribute of the first abbreviation gets an unknown
		// form: no DIE can be read, so neither the DIEs nor the lists
		// they refer to can be rewritten.
		{".debug_abbrev", 4, 0x7f, []string{
			"section .debug_info: DIE at 0xbe, attribute 0x3: unknown form 0x7f (not understood)",
			"section .debug_loclists: its lists could not be found",
			"section .debug_rnglists: its lists could not be found",
		}},
	} {
		f, err := elfobj.Read(in)
		if err != nil {
			t.Fatal(err)
		}
		var old []byte
		for _, s := range f.Sections {
			if s.Name == c.sec {
				s.Data[c.off] = c.val
				old = bytes.Clone(s.Data)
			}
		}
		p := dwPadFile(t, f, in, 5, 4, 0)
		var got []string
		for _, w := range p.warns {
			if strings.Contains(w, "debug information") {
				got = append(got, w)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("damaged %s: warnings %q, want %q", c.sec, got, c.want)
		}
		for _, w := range c.want {
			if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, w) }) {
				t.Errorf("damaged %s: no warning with %q in %q", c.sec, w, got)
			}
		}
		nf, err := elfobj.Read(p.out)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range nf.Sections {
			if s.Name == c.sec && !bytes.Equal(s.Data, old) {
				t.Errorf("damaged %s was changed", c.sec)
			}
		}
	}
}

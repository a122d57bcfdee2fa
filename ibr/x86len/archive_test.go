package x86len

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"hijack/archive"
)

// disasm is objdump's view of one member: instruction lines per
// executable section, keyed by section name and occurrence ("name#k" for
// the k-th section of that name, in section-header order).
type disasm struct {
	name     string
	sections map[string][]insnLine
}

// parseArchiveDisasm splits `objdump -d` output over an archive into
// members, in archive order.
func parseArchiveDisasm(out []byte) []disasm {
	var res []disasm
	var cur *disasm
	var sec string
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		s := sc.Text()
		if i := strings.Index(s, ":     file format "); i > 0 {
			res = append(res, disasm{name: s[:i], sections: map[string][]insnLine{}})
			cur = &res[len(res)-1]
			sec = ""
			clear(seen)
			continue
		}
		if name, ok := strings.CutPrefix(s, "Disassembly of section "); ok {
			name = strings.TrimSuffix(name, ":")
			sec = fmt.Sprintf("%s#%d", name, seen[name])
			seen[name]++
			continue
		}
		if cur == nil || sec == "" {
			continue
		}
		if l, ok := parseLine(s); ok {
			cur.sections[sec] = append(cur.sections[sec], l)
		}
	}
	return res
}

// archiveStats summarises one archive's comparison.
type archiveStats struct {
	members, funcs, insns int
	bad                   int // objdump (bad) lines inside functions, tolerated
	strayREX              int // objdump "rex" pseudo-instructions merged
	mismatches            []string
	tolerated             []string // where (bad) and stray REX were tolerated
}

// funcRange is a function symbol's extent in its section.
type funcRange struct {
	name       string
	start, end int
}

// compareArchive decodes every function of every member by linear sweep and
// checks that instruction starts agree with objdump.
func compareArchive(t *testing.T, path string) archiveStats {
	data, err := os.ReadFile(path)
	if err != nil {
		missing(t, fmt.Sprintf("%s: %v", path, err))
	}
	members, err := archive.Read(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	objdump := requireTool(t, "objdump")
	out := runObjdump(t, objdump, "-d", "-z", "--no-show-raw-insn", "-w", path)
	dis := parseArchiveDisasm(out)
	if len(dis) != len(members) {
		t.Fatalf("%s: %d members but objdump printed %d", path, len(members), len(dis))
	}
	var st archiveStats
	for mi, m := range members {
		if dis[mi].name != m.Name {
			t.Fatalf("%s: member %d is %q, objdump printed %q", path, mi, m.Name, dis[mi].name)
		}
		f, err := elf.NewFile(bytes.NewReader(m.Data))
		if err != nil {
			t.Errorf("%s(%s): %v", path, m.Name, err)
			continue
		}
		st.members++
		compareObject(f, m.Name, dis[mi], &st)
		f.Close()
	}
	return st
}

func compareObject(f *elf.File, obj string, dis disasm, st *archiveStats) {
	syms, err := f.Symbols()
	if err != nil {
		return // no symbol table: nothing to delimit functions
	}
	// Functions per section, deduplicated (aliases share a range).
	funcs := map[int][]funcRange{}
	dup := map[[3]int]bool{}
	for _, s := range syms {
		typ := elf.ST_TYPE(s.Info)
		// STT_GNU_IFUNC (10) resolvers are functions too.
		if (typ != elf.STT_FUNC && typ != 10) || s.Size == 0 ||
			s.Section < elf.SHN_UNDEF+1 || int(s.Section) >= len(f.Sections) {
			continue
		}
		k := [3]int{int(s.Section), int(s.Value), int(s.Size)}
		if dup[k] {
			continue
		}
		dup[k] = true
		funcs[int(s.Section)] = append(funcs[int(s.Section)],
			funcRange{s.Name, int(s.Value), int(s.Value + s.Size)})
	}
	occurrence := map[string]int{}
	for si, sec := range f.Sections {
		if sec.Flags&elf.SHF_EXECINSTR == 0 || sec.Type != elf.SHT_PROGBITS {
			continue
		}
		key := fmt.Sprintf("%s#%d", sec.Name, occurrence[sec.Name])
		occurrence[sec.Name]++
		fr := funcs[si]
		if len(fr) == 0 {
			continue
		}
		code, err := sec.Data()
		if err != nil {
			st.mismatches = append(st.mismatches, fmt.Sprintf("%s %s: %v", obj, sec.Name, err))
			continue
		}
		lines := dis.sections[key]
		for _, fn := range fr {
			st.funcs++
			compareFunc(code, lines, obj, sec.Name, fn, st)
		}
	}
}

// knownTolerances lists the functions where Decode and objdump are allowed
// to disagree, keyed by "member function", with the reason.
var knownTolerances = map[string]string{
	// OpenSSL's RC4_options returns pointers to option strings that the
	// perlasm places after the code, inside the function's .size range.
	// objdump decodes the text "...CRYPTOGAMS" (4f 47 41 4d 53) as three
	// dead REX prefixes printed as pseudo-instructions, then "push %r11";
	// Decode (like the CPU) makes one instruction of it. It is data either way.
	"libcrypto-lib-rc4-x86_64.o RC4_options": "strings in code; dead REX",
	// f3 0f a6 e0 is VIA PadLock xsha512 (emitted as .byte by
	// e_padlock-x86_64.pl). binutils 2.40 does not know it: it prints
	// "repz (bad)" for three bytes and then loses step for two
	// instructions (e0 0f "loopne", 28 04 24 "sub") before meeting the real
	// boundary again; the correct decode is xsha512; movaps (%rsp),%xmm0.
	// objdump is wrong here.
	"libcrypto-lib-e_padlock-x86_64.o padlock_sha512_blocks": "objdump lacks xsha512",
}

// compareFunc sweeps one function with Decode and walks objdump's lines for
// the same range in lockstep.
func compareFunc(code []byte, lines []insnLine, obj, sec string, fn funcRange, st *archiveStats) {
	report := func(off int, format string, args ...any) {
		end := min(off+15, len(code))
		st.mismatches = append(st.mismatches, fmt.Sprintf("%s %s+%#x <%s+%#x> [% x]: %s",
			obj, sec, off, fn.name, off-fn.start, code[off:end], fmt.Sprintf(format, args...)))
	}
	// tolerate records a disagreement explained by objdump's limits; the
	// site must be a known one.
	tolerate := func(from, to int, what string) {
		msg := fmt.Sprintf("%s %s+%#x <%s+%#x> [% x]: %s, Decode resumes at +%#x",
			obj, sec, from, fn.name, from-fn.start, code[from:min(to, len(code))], what, to-fn.start)
		if _, ok := knownTolerances[obj+" "+fn.name]; !ok {
			report(from, "unexpected tolerance: %s", msg)
		}
		st.tolerated = append(st.tolerated, msg)
	}
	if fn.end > len(code) {
		report(fn.start, "function extends past section end")
		return
	}
	i := sort.Search(len(lines), func(i int) bool { return lines[i].off >= int64(fn.start) })
	first := i
	// nextStart is where objdump's line i ends: the next line or the end
	// of the function.
	nextStart := func(i int) int {
		if i+1 < len(lines) && lines[i+1].off < int64(fn.end) {
			return int(lines[i+1].off)
		}
		return fn.end
	}
	pos := fn.start
	for ; i < len(lines) && lines[i].off < int64(fn.end); i++ {
		line := lines[i]
		if int64(pos) != line.off {
			report(pos, "Decode starts an instruction at %#x, objdump at %#x (%s)", pos, line.off, line.text)
			pos = int(line.off)
		}
		if line.isBad() {
			// objdump could not decode these bytes. The length it gives a
			// (bad) is not an instruction length (it stops at the byte it
			// could not place), so the two sweeps are let run on their own
			// until they meet at a common boundary again, within a few
			// instructions. Every such site must be listed in
			// knownTolerances with its reason.
			start := pos
			p := nextStart(i)
			if l, err := Decode(code[pos:]); err == nil {
				p = pos + int(l.Len)
				for k := 0; k < 8; k++ {
					for i+1 < len(lines) && lines[i+1].off < int64(p) && lines[i+1].off < int64(fn.end) {
						i++
					}
					if nextStart(i) <= p {
						break
					}
					l, err := Decode(code[p:])
					if err != nil {
						break
					}
					p += int(l.Len)
				}
			}
			st.bad++
			tolerate(start, p, fmt.Sprintf("objdump %q", line.text))
			pos = p
			continue
		}
		l, err := Decode(code[pos:])
		if err != nil {
			report(pos, "Decode: %v; objdump: %s (%d bytes)", err, line.text, nextStart(i)-pos)
			pos = nextStart(i)
			continue
		}
		end := pos + int(l.Len)
		// objdump prints a REX that is followed by another prefix (which
		// the CPU ignores, Intel SDM vol. 2 §2.2.1) as a pseudo-instruction
		// of its own, "rex.W"; for the CPU, and Decode, it is part of the
		// instruction that follows. Only data decodes like this.
		for strayREX.MatchString(lines[i].text) && nextStart(i) < end {
			st.strayREX++
			tolerate(pos, end, fmt.Sprintf("objdump %q", lines[i].text))
			i++
		}
		// objdump folds fwait into the x87 instruction that follows
		// (fstsw = 9b df e0); the CPU sees two instructions.
		if l.Map == Map1Byte && l.Opcode == 0x9b && nextStart(i) > end {
			if l2, err := Decode(code[end:]); err == nil {
				end += int(l2.Len)
				st.insns++
			}
		}
		st.insns++
		pos = end
	}
	if i > first && pos != fn.end {
		report(min(pos, len(code)), "sweep ends at %#x, function ends at %#x", pos, fn.end)
	}
}

// TestObjdumpArchives compares instruction boundaries with GNU objdump over
// every function of Debian's static archives.
func TestObjdumpArchives(t *testing.T) {
	if testing.Short() {
		t.Skip("disassembles whole archives")
	}
	requireTool(t, "objdump")
	for _, name := range []string{"libc", "libcrypto", "libz", "libsqlite3", "liblua5.4"} {
		path := "/usr/lib/x86_64-linux-gnu/" + name + ".a"
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := compareArchive(t, path)
			t.Logf("%s: %d members, %d functions, %d instructions compared, %d objdump (bad) tolerated, %d stray REX merged, %d mismatches",
				path, st.members, st.funcs, st.insns, st.bad, st.strayREX, len(st.mismatches))
			for _, m := range st.tolerated {
				t.Logf("tolerated: %s", m)
			}
			for i, m := range st.mismatches {
				if i == 100 {
					t.Errorf("... %d more", len(st.mismatches)-100)
					break
				}
				t.Error(m)
			}
			if st.insns == 0 {
				t.Errorf("%s: no instructions compared", path)
			}
		})
	}
}

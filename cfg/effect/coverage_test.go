package effect

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"hijack/archive"
	"hijack/ibr"
	"hijack/ibr/x86len"
)

// archives are the Debian static libraries the coverage test sweeps.
var archives = []string{
	"/usr/lib/x86_64-linux-gnu/libc.a",
	"/usr/lib/x86_64-linux-gnu/libcrypto.a",
	"/usr/lib/x86_64-linux-gnu/libsqlite3.a",
}

// handAsmOnly lists the instructions, by objdump mnemonic, that Of leaves
// unknown although they occur in the archives, with the reason they may
// stay so: none is emitted by gcc or clang for C or C++ code; they appear
// only in hand-written assembly (OpenSSL perlasm, glibc), mostly behind
// CPU-feature dispatch.
var handAsmOnly = map[string]string{
	"vprotd":          "AMD XOP (OpenSSL chacha/sha for Bulldozer); x86asm cannot decode XOP",
	"vprotq":          "AMD XOP, as vprotd",
	"xcrypt-ecb":      "VIA PadLock (OpenSSL e_padlock), .byte-encoded",
	"xcrypt-cbc":      "VIA PadLock",
	"xcrypt-cfb":      "VIA PadLock",
	"xcrypt-ofb":      "VIA PadLock",
	"xcrypt-ctr":      "VIA PadLock",
	"xsha1":           "VIA PadLock",
	"xsha256":         "VIA PadLock",
	"xsha512":         "VIA PadLock (objdump does not know it)",
	"xstore-rng":      "VIA PadLock RNG",
	"xstore":          "VIA PadLock RNG",
	"montmul":         "VIA PadLock",
	"cli":             "privileged",
	"sti":             "privileged",
	"in":              "port I/O (privileged); OpenSSL data decoded as code",
	"out":             "port I/O (privileged)",
	"insb":            "port I/O; in libcrypto only inside RC4_options, whose strings lie in its .size range",
	"insw":            "port I/O",
	"insl":            "port I/O",
	"outsb":           "port I/O; RC4_options strings",
	"outsw":           "port I/O; RC4_options strings",
	"outsl":           "port I/O; RC4_options strings",
	"rex.WRXB":        "dead REX prefixes: RC4_options strings (\"...CRYPTOGAMS\")",
	"lret":            "far return: not modelled (Ctrl=Return)",
	"lcall":           "far call: not modelled",
	"ljmp":            "far jump: not modelled",
	"iret":            "kernel return",
	"sysret":          "kernel return",
	"vmread":          "VMX, privileged",
	"setssbsy":        "CET supervisor",
	"clzero":          "AMD cache-line zeroing, not modelled",
	"rdmsr":           "privileged",
	"wrmsr":           "privileged",
	"swapgs":          "privileged",
	"sgdt":            "system-table store",
	"sidt":            "system-table store",
	"sldt":            "system-table store",
	"str":             "system-table store",
	"lgs":             "far pointer load",
	"lfs":             "far pointer load",
	"lss":             "far pointer load",
	"lar":             "segment descriptor access",
	"lsl":             "segment descriptor access",
	"verr":            "segment descriptor access",
	"verw":            "segment descriptor access",
	"movdir64b":       "direct stores, not modelled",
	"movdiri":         "direct stores, not modelled",
	"wrss":            "CET shadow-stack write",
	"wruss":           "CET shadow-stack write",
	"umonitor":        "user wait, not modelled",
	"umwait":          "user wait, not modelled",
	"tpause":          "user wait, not modelled",
	"ptwrite":         "processor trace",
	"monitor":         "privileged wait",
	"mwait":           "privileged wait",
	"monitorx":        "privileged wait",
	"mwaitx":          "privileged wait",
	"enqcmd":          "accelerator submission",
	"enqcmds":         "accelerator submission",
	"encls":           "SGX",
	"enclu":           "SGX",
	"xsetbv":          "privileged",
	"getsec":          "SMX",
	"rsm":             "system management",
	"invlpg":          "privileged",
	"wbinvd":          "privileged",
	"invd":            "privileged",
	"lgdt":            "privileged",
	"lidt":            "privileged",
	"clts":            "privileged",
	"smsw":            "system register",
	"lmsw":            "privileged",
	"ltr":             "privileged",
	"lldt":            "privileged",
	"sysexit":         "privileged",
	"sysenter":        "not used in 64-bit Linux user code",
	"int1":            "(bad) under x86asm; data decoded as code",
	"fneni(8087":      "8087-only, a nop",
	"fndisi(8087":     "8087-only, a nop",
	"frstpm(287":      "287-only",
	"fsetpm(287":      "287-only",
	"vpcmov":          "AMD XOP",
	"vpperm":          "AMD XOP",
	"vpmacsdd":        "AMD XOP",
	"vpshad":          "AMD XOP",
	"vpshaq":          "AMD XOP",
	"vpshld":          "AMD XOP",
	"vpshlq":          "AMD XOP",
	"vprotb":          "AMD XOP",
	"vprotw":          "AMD XOP",
	"(bad)":           "bytes objdump cannot name: VIA PadLock xsha512 (f3 0f a6 e0)",
	"loadiwkey":       "Key Locker",
	"aesenc128kl":     "Key Locker",
	"aesdec128kl":     "Key Locker",
	"aesenc256kl":     "Key Locker",
	"aesdec256kl":     "Key Locker",
	"aesencwide128kl": "Key Locker",
	"aesdecwide128kl": "Key Locker",
	"aesencwide256kl": "Key Locker",
	"aesdecwide256kl": "Key Locker",
	"encodekey128":    "Key Locker",
	"encodekey256":    "Key Locker",
	"rdpru":           "AMD",
	"hreset":          "history reset",
	"pconfig":         "privileged",
	"uiret":           "user interrupts",
	"testui":          "user interrupts",
	"clui":            "user interrupts",
	"stui":            "user interrupts",
	"senduipi":        "user interrupts",
}

// unknownSite is one instruction Of leaves unknown.
type unknownSite struct {
	where string
	code  []byte
}

// sweepStats summarises the sweep of one archive.
type sweepStats struct {
	insns    int
	unknown  map[string][]unknownSite // key: layout signature
	sizeless map[string]int           // op with a data access of Size 0
	problems []string
	// Cross-check with objdump's operands.
	crossChecked int
	crossBad     map[string]int
	crossEx      []string
}

// funcRange is a function symbol's extent in its section.
type funcRange struct {
	name       string
	start, end int
}

// sweepArchive decodes every function of every member by linear sweep and
// computes the effect of every instruction; dis, when not nil, is
// objdump's view of the members for the cross-check.
func sweepArchive(t *testing.T, path string, dis []objdumpMember) *sweepStats {
	st := newSweepStats()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return st
	}
	members, err := archive.Read(data)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return st
	}
	if dis != nil && len(dis) != len(members) {
		t.Errorf("%s: %d members, objdump printed %d", path, len(members), len(dis))
		dis = nil
	}
	for mi, m := range members {
		var d *objdumpMember
		if dis != nil {
			d = &dis[mi]
		}
		st.sweepObject(m.Name, m.Data, d)
	}
	return st
}

func newSweepStats() *sweepStats {
	return &sweepStats{unknown: map[string][]unknownSite{}, sizeless: map[string]int{}, crossBad: map[string]int{}}
}

// sweepObject sweeps the functions of one ELF object.
func (st *sweepStats) sweepObject(name string, data []byte, dis *objdumpMember) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return
	}
	defer f.Close()
	secKey := map[int]string{}
	occurrence := map[string]int{}
	for si, sec := range f.Sections {
		if sec.Flags&elf.SHF_EXECINSTR == 0 || sec.Type != elf.SHT_PROGBITS {
			continue
		}
		secKey[si] = fmt.Sprintf("%s#%d", sec.Name, occurrence[sec.Name])
		occurrence[sec.Name]++
	}
	syms, _ := f.Symbols()
	funcs := map[int][]funcRange{}
	dup := map[[3]int]bool{}
	for _, s := range syms {
		typ := elf.ST_TYPE(s.Info)
		if (typ != elf.STT_FUNC && typ != 10) || s.Size == 0 ||
			s.Section < elf.SHN_UNDEF+1 || int(s.Section) >= len(f.Sections) {
			continue
		}
		k := [3]int{int(s.Section), int(s.Value), int(s.Size)}
		if dup[k] {
			continue
		}
		dup[k] = true
		funcs[int(s.Section)] = append(funcs[int(s.Section)], funcRange{s.Name, int(s.Value), int(s.Value + s.Size)})
	}
	for si, fr := range funcs {
		sec := f.Sections[si]
		if sec.Flags&elf.SHF_EXECINSTR == 0 || sec.Type != elf.SHT_PROGBITS {
			continue
		}
		code, err := sec.Data()
		if err != nil {
			continue
		}
		var lines, intel map[int]string
		if dis != nil {
			lines = dis.sections[secKey[si]]
			intel = dis.intel[secKey[si]]
		}
		for _, fn := range fr {
			if fn.end > len(code) {
				continue
			}
			for off := fn.start; off < fn.end; {
				lay, asm, err := ibr.Decode(code[off:fn.end])
				if err != nil {
					off++
					continue
				}
				b := code[off : off+int(lay.Len)]
				e := Of(&asm, &lay, b)
				st.insns++
				where := func() string { return fmt.Sprintf("%s %s+%#x", name, fn.name, off-fn.start) }
				if msg := checkInvariants(&e); msg != "" && len(st.problems) < 50 {
					st.problems = append(st.problems, fmt.Sprintf("%s [% x] %v: %s", where(), b, asm.Op, msg))
				}
				if !e.Known {
					k := signature(&lay, b)
					st.unknown[k] = append(st.unknown[k], unknownSite{where(), b})
				} else {
					for _, a := range e.Accesses() {
						if a.Size == 0 && !a.Rep {
							st.sizeless[asm.Op.String()]++
						}
					}
				}
				if text, ok := lines[off]; ok && e.Known {
					st.crossChecked++
					msg := crossCheck(text, &e)
					if msg == "" {
						msg = checkSize(intel[off], &e)
					}
					if msg != "" {
						k := asm.Op.String() + ": " + msg
						if st.crossBad[k] == 0 {
							st.crossEx = append(st.crossEx, fmt.Sprintf("%s [% x] %q: %s (%v)", where(), b, text, msg, &e))
						}
						st.crossBad[k]++
					}
				}
				off += int(lay.Len)
			}
		}
	}
}

// unknownNames groups the unknown instructions by objdump mnemonic, with
// one example each.
func (st *sweepStats) unknownNames(t *testing.T) (names []string, count map[string]int, example map[string]string) {
	var keys []string
	for k := range st.unknown {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	codes := make([][]byte, len(keys))
	for i, k := range keys {
		codes[i] = st.unknown[k][0].code
	}
	mn := objdumpNames(t, codes)
	count = map[string]int{}
	example = map[string]string{}
	for i, k := range keys {
		n := mn[i]
		if n == "" {
			n = "?" + k
		}
		count[n] += len(st.unknown[k])
		if _, ok := example[n]; !ok {
			s := st.unknown[k][0]
			example[n] = fmt.Sprintf("%s [% x] (%s)", s.where, s.code, k)
		}
	}
	for n := range count {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		return count[names[i]] > count[names[j]] || count[names[i]] == count[names[j]] && names[i] < names[j]
	})
	return names, count, example
}

// signature groups encodings of the same operation.
func signature(lay *x86len.Layout, b []byte) string {
	var pfx []string
	for _, p := range b[:lay.Prefixes] {
		switch p {
		case 0x66, 0xf2, 0xf3:
			pfx = append(pfx, fmt.Sprintf("%02x", p))
		}
	}
	s := fmt.Sprintf("%s %s %v %02x", strings.Join(pfx, ""), lay.Escape, lay.Map, lay.Opcode)
	if lay.ModRMOff >= 0 {
		s += fmt.Sprintf(" /%d", (lay.ModRM>>3)&7)
		if lay.ModRM>>6 == 3 {
			s += fmt.Sprintf(" r%02x", lay.ModRM)
		}
	}
	return s
}

// checkInvariants verifies the set relations documented on Effect.
func checkInvariants(e *Effect) string {
	switch {
	case e.Partial&^e.Use != 0:
		return "Partial not in Use"
	case e.Def&e.Partial != 0:
		return "Def and Partial overlap"
	case e.FlagsMay&^e.FlagsUse != 0:
		return "FlagsMay not in FlagsUse"
	case e.FlagsMay&e.FlagsDef != 0:
		return "FlagsMay and FlagsDef overlap"
	case e.FlagsPass&^e.FlagsMay != 0:
		return "FlagsPass not in FlagsMay"
	case e.FlagsUndef&^e.FlagsDef != 0:
		return "FlagsUndef not in FlagsDef"
	case e.NMem < 0 || e.NMem > MaxAccesses:
		return "NMem out of range"
	case !e.Known && (e.Use != AllRegs || e.FlagsUse != AllFlags || e.Partial != AllRegs):
		return "unknown but not conservative"
	}
	for _, a := range e.Accesses() {
		if !a.Read && !a.Write {
			return "access neither read nor write"
		}
	}
	return ""
}

// objdumpNames disassembles instruction byte strings with objdump and
// returns their mnemonics.
func objdumpNames(t *testing.T, codes [][]byte) []string {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		return make([]string, len(codes))
	}
	var blob []byte
	starts := map[int]int{}
	for i, c := range codes {
		starts[len(blob)] = i
		blob = append(blob, c...)
		// A nop sled lets objdump find its step again after bytes it
		// does not know.
		blob = append(blob, bytes.Repeat([]byte{0x90}, 16)...)
	}
	path := filepath.Join(t.TempDir(), "blob.bin")
	if err := os.WriteFile(path, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(objdump, "-D", "-b", "binary", "-m", "i386:x86-64", "-w", "--no-show-raw-insn", path).Output()
	if err != nil {
		return make([]string, len(codes))
	}
	names := make([]string, len(codes))
	for _, line := range strings.Split(string(out), "\n") {
		var off int
		colon := strings.IndexByte(line, ':')
		if colon <= 0 || colon+1 >= len(line) || line[colon+1] != '\t' {
			continue
		}
		if _, err := fmt.Sscanf(strings.TrimSpace(line[:colon]), "%x", &off); err != nil {
			continue
		}
		i, ok := starts[off]
		if !ok || names[i] != "" {
			continue
		}
		f := strings.Fields(line[colon+2:])
		for len(f) > 1 && isPrefixWord(f[0]) {
			f = f[1:]
		}
		if len(f) > 0 {
			names[i] = strings.TrimSuffix(f[0], ",pt")
		}
	}
	return names
}

func isPrefixWord(s string) bool {
	switch s {
	case "rep", "repz", "repnz", "repe", "repne", "lock", "data16", "addr32", "cs", "ds", "es", "ss", "fs", "gs", "notrack", "bnd":
		return true
	}
	return strings.HasPrefix(s, "rex")
}

// objdumpMember is objdump's view of one archive member: instruction text
// by executable section ("name#k" for the k-th section of that name) and
// offset.
type objdumpMember struct {
	name     string
	sections map[string]map[int]string // AT&T syntax
	intel    map[string]map[int]string // Intel syntax
}

// objdumpArchive disassembles an archive or object with objdump, in AT&T
// and in Intel syntax (which shows memory operand sizes); it may run in
// any goroutine (it reports failure with t.Errorf and returns nil).
func objdumpArchive(t *testing.T, path string) []objdumpMember {
	att := runObjdump(t, path)
	intel := runObjdump(t, path, "-M", "intel")
	if att == nil || intel == nil || len(att) != len(intel) {
		return nil
	}
	for i := range att {
		att[i].intel = intel[i].sections
	}
	return att
}

func runObjdump(t *testing.T, path string, args ...string) []objdumpMember {
	args = append(append([]string{"-d", "-z", "-w", "--no-show-raw-insn"}, args...), path)
	out, err := exec.Command("objdump", args...).Output()
	if err != nil {
		t.Errorf("objdump %s: %v", path, err)
		return nil
	}
	var res []objdumpMember
	var cur map[int]string
	seen := map[string]int{}
	for _, s := range strings.Split(string(out), "\n") {
		if i := strings.Index(s, ":     file format "); i > 0 {
			res = append(res, objdumpMember{name: s[:i], sections: map[string]map[int]string{}})
			cur = nil
			clear(seen)
			continue
		}
		if name, ok := strings.CutPrefix(s, "Disassembly of section "); ok && len(res) > 0 {
			name = strings.TrimSuffix(name, ":")
			key := fmt.Sprintf("%s#%d", name, seen[name])
			seen[name]++
			cur = map[int]string{}
			res[len(res)-1].sections[key] = cur
			continue
		}
		colon := strings.IndexByte(s, ':')
		if cur == nil || colon <= 0 || colon+1 >= len(s) || s[colon+1] != '\t' {
			continue
		}
		var off int
		if _, err := fmt.Sscanf(strings.TrimSpace(s[:colon]), "%x", &off); err != nil {
			continue
		}
		cur[off] = strings.TrimSpace(s[colon+2:])
	}
	return res
}

// intelSizes gives the bytes of objdump's Intel-syntax operand sizes.
var intelSizes = map[string]int{"BYTE": 1, "WORD": 2, "DWORD": 4, "FWORD": 6, "QWORD": 8, "TBYTE": 10,
	"XMMWORD": 16, "OWORD": 16, "YMMWORD": 32, "ZMMWORD": 64}

// checkSize compares the size of the first explicit access with the one
// objdump prints in Intel syntax ("DWORD PTR", "QWORD BCST"); for
// gathers and scatters objdump prints the element size.
func checkSize(intel string, e *Effect) string {
	var a *Access
	for i := range e.Accesses() {
		if e.Mem[i].Arg >= 0 {
			a = &e.Mem[i]
			break
		}
	}
	if a == nil {
		return ""
	}
	f := strings.FieldsFunc(intel, func(r rune) bool { return r == ' ' || r == ',' })
	for i := 0; i+1 < len(f); i++ {
		if f[i+1] != "PTR" && f[i+1] != "BCST" {
			continue
		}
		n, ok := intelSizes[f[i]]
		if !ok {
			return ""
		}
		got := a.Size
		if a.VSIB {
			got = a.Elem
		}
		if got != n {
			return fmt.Sprintf("size %d, objdump %s %s", got, f[i], f[i+1])
		}
		return ""
	}
	return ""
}

// attRegs maps AT&T general register names to registers.
var attRegs = func() map[string]Reg {
	m := map[string]Reg{}
	for r := Reg(0); r < 16; r++ {
		m[r.String()] = r
	}
	for i, n := range []string{"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"} {
		m[n] = Reg(i)
	}
	for i, n := range []string{"ax", "cx", "dx", "bx", "sp", "bp", "si", "di"} {
		m[n] = Reg(i)
	}
	for i, n := range []string{"al", "cl", "dl", "bl", "spl", "bpl", "sil", "dil"} {
		m[n] = Reg(i)
	}
	for i, n := range []string{"ah", "ch", "dh", "bh"} {
		m[n] = Reg(i)
	}
	for r := R8; r <= R15; r++ {
		for _, suf := range []string{"d", "w", "b"} {
			m[r.String()+suf] = r
		}
	}
	return m
}()

// crossCheck compares an effect with objdump's text of the instruction:
// every general register it names must be used or written, and it has a
// memory operand exactly when the effect has an explicit access (or the
// instruction computes an address without accessing it).
func crossCheck(text string, e *Effect) string {
	f := strings.Fields(text)
	for len(f) > 1 && isPrefixWord(f[0]) {
		f = f[1:]
	}
	if len(f) == 0 {
		return ""
	}
	mn := f[0]
	ops := strings.Join(f[1:], " ")
	if i := strings.Index(ops, "#"); i >= 0 {
		ops = ops[:i]
	}
	if i := strings.Index(ops, "<"); i >= 0 {
		ops = ops[:i]
	}
	ops = strings.ReplaceAll(ops, "%st(", "%st[")
	nop := strings.HasPrefix(mn, "nop") || strings.HasPrefix(mn, "bnd") || mn == "xchg" && ops == "%ax,%ax" || strings.HasPrefix(mn, "cldemote")
	if nop {
		return ""
	}
	all := e.Use | e.Def | e.Partial
	for _, part := range strings.Split(ops, "%")[1:] {
		n := part
		if i := strings.IndexAny(n, ",)(:{} "); i >= 0 {
			n = n[:i]
		}
		if r, ok := attRegs[n]; ok && !all.Has(r) {
			return fmt.Sprintf("%%%s not in use/def/partial", n)
		}
	}
	// Roles: in AT&T order the last operand is the destination. Address
	// registers and general-register sources are used; a general
	// register destination is written (except for comparisons).
	operands := splitOperands(ops)
	zeroIdiom := len(operands) == 2 && operands[0] == operands[1] &&
		(strings.HasPrefix(mn, "xor") || strings.HasPrefix(mn, "sub") || strings.HasPrefix(mn, "sbb") || strings.HasPrefix(mn, "cmp"))
	for i, o := range operands {
		if strings.Contains(o, "(") {
			for _, part := range strings.Split(o, "%")[1:] {
				n := strings.TrimRight(part, ",)")
				if r, ok := attRegs[n]; ok && !e.Use.Has(r) {
					return fmt.Sprintf("address register %%%s not used", n)
				}
			}
			continue
		}
		r, ok := attRegs[strings.TrimPrefix(o, "%")]
		if !ok || !strings.HasPrefix(o, "%") || len(operands) < 2 {
			continue
		}
		last := i == len(operands)-1
		switch {
		case last && !readOnlyLast(mn) && !(e.Def | e.Partial).Has(r):
			return fmt.Sprintf("destination %s not written", o)
		case !last && !zeroIdiom && !(mn == "mulx" && i == len(operands)-2) && !e.Use.Has(r):
			return fmt.Sprintf("source %s not used", o)
		}
	}
	textMem := strings.Contains(ops, "(") || strings.Contains(ops, "s:0x") || strings.Contains(ops, "s:-0x")
	branch := strings.HasPrefix(mn, "j") || strings.HasPrefix(mn, "call") || strings.HasPrefix(mn, "loop") || mn == "xbegin"
	for _, o := range strings.Split(ops, ",") {
		// A bare number is an absolute address ([disp32] or moffs).
		if o = strings.TrimSpace(o); !branch && (strings.HasPrefix(o, "0x") || strings.HasPrefix(o, "-0x")) {
			textMem = true
		}
	}
	addrOnly := mn == "lea" || strings.HasPrefix(mn, "prefetch") || strings.HasPrefix(mn, "clflush") || mn == "clwb" ||
		strings.HasPrefix(mn, "vgatherpf") || strings.HasPrefix(mn, "vscatterpf")
	explicit := false
	for _, a := range e.Accesses() {
		if a.Arg >= 0 {
			explicit = true
		}
	}
	if explicit {
		if msg := compareAddress(operands, e); msg != "" {
			return msg
		}
	}
	switch {
	case textMem && !addrOnly && e.NMem == 0:
		return "objdump shows a memory operand, no access"
	case textMem && addrOnly && e.NMem != 0:
		return "address-only instruction with an access"
	case explicit && !textMem:
		return "explicit access but objdump shows no memory operand"
	}
	return ""
}

// compareAddress checks the first explicit access's address against
// objdump's memory operand: segment, displacement, base, index and scale.
func compareAddress(operands []string, e *Effect) string {
	var a *Access
	for i := range e.Accesses() {
		if e.Mem[i].Arg >= 0 {
			a = &e.Mem[i]
			break
		}
	}
	var mem string
	for _, o := range operands {
		if i := strings.IndexByte(o, '{'); i >= 0 {
			o = o[:i]
		}
		if strings.Contains(o, "(") || strings.HasPrefix(o, "0x") || strings.HasPrefix(o, "-0x") || strings.Contains(o, "s:") {
			mem = o
			break
		}
	}
	if a == nil || mem == "" {
		return ""
	}
	m := a.Mem
	seg := ""
	if i := strings.Index(mem, ":"); i > 0 {
		seg, mem = strings.TrimPrefix(mem[:i], "%"), mem[i+1:]
	}
	wantSeg := map[x86asm.Reg]string{0: "", x86asm.FS: "fs", x86asm.GS: "gs"}[m.Segment]
	if seg == "fs" || seg == "gs" || wantSeg != "" {
		if seg != wantSeg {
			return fmt.Sprintf("segment %q, objdump %q", wantSeg, seg)
		}
	}
	dispText, rest, _ := strings.Cut(mem, "(")
	var disp int64
	if dispText != "" {
		v, err := strconv.ParseInt(dispText, 0, 64)
		if err != nil {
			u, err2 := strconv.ParseUint(dispText, 0, 64)
			if err2 != nil {
				return ""
			}
			v = int64(u)
		}
		disp = v
	}
	if disp != m.Disp && !(m.Base == 0 && m.Index == 0 && uint32(disp) == uint32(m.Disp)) {
		return fmt.Sprintf("displacement %#x, objdump %#x", m.Disp, disp)
	}
	var base, index string
	scale := 0
	if rest != "" {
		parts := strings.Split(strings.TrimSuffix(rest, ")"), ",")
		base = strings.TrimPrefix(parts[0], "%")
		if len(parts) > 1 && parts[1] != "%riz" && parts[1] != "%eiz" {
			index = strings.TrimPrefix(parts[1], "%")
			scale = 1
			if len(parts) > 2 {
				scale, _ = strconv.Atoi(parts[2])
			}
		}
	}
	name := func(r x86asm.Reg) string {
		if r == 0 {
			return ""
		}
		s := strings.ToLower(r.String())
		for _, v := range [][2]string{{"x", "xmm"}, {"y", "ymm"}, {"z", "zmm"}} {
			if r >= x86asm.X0 && r <= x86asm.Z31 && strings.HasPrefix(s, v[0]) {
				return v[1] + s[1:]
			}
		}
		return s
	}
	if name(m.Base) != base || name(m.Index) != index || int(m.Scale) != scale {
		return fmt.Sprintf("address %s, objdump (%s,%s,%d)", memString(m), base, index, scale)
	}
	return ""
}

// splitOperands splits AT&T operands at the commas outside parentheses.
func splitOperands(ops string) []string {
	var res []string
	depth, start := 0, 0
	for i, c := range ops {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				res = append(res, strings.TrimSpace(ops[start:i]))
				start = i + 1
			}
		}
	}
	if s := strings.TrimSpace(ops[start:]); s != "" {
		res = append(res, s)
	}
	return res
}

// readOnlyLast reports whether the mnemonic's last operand is only read.
func readOnlyLast(mn string) bool {
	for _, p := range []string{"cmp", "test", "ptest", "vptest", "vtest", "comis", "ucomis", "vcomis", "vucomis", "kortest", "ktest"} {
		if strings.HasPrefix(mn, p) && !strings.HasPrefix(mn, "cmpxchg") && !strings.HasPrefix(mn, "cmov") {
			return true
		}
	}
	return mn == "bt" || mn == "btl" || mn == "btq" || mn == "btw" || strings.HasPrefix(mn, "out")
}

// TestArchiveCoverage sweeps Debian's libc.a, libcrypto.a and libsqlite3.a,
// reports the instructions Of leaves unknown grouped by mnemonic, and fails
// on any that is not a known hand-written-assembly-only instruction. It
// also checks the Effect invariants on every instruction.
func TestArchiveCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	t.Parallel()
	requireTool(t, "objdump")
	type result struct {
		path string
		st   *sweepStats
	}
	results := make([]result, len(archives))
	var wg sync.WaitGroup
	for i, p := range archives {
		if _, err := os.Stat(p); err != nil {
			missing(t, fmt.Sprintf("%s: %v", p, err))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = result{p, sweepArchive(t, p, objdumpArchive(t, p))}
		}()
	}
	wg.Wait()
	for _, r := range results {
		st := r.st
		names, count, example := st.unknownNames(t)
		total := 0
		for _, n := range count {
			total += n
		}
		t.Logf("%s: %d instructions, %d unknown (%.4f%%)", filepath.Base(r.path), st.insns, total, 100*float64(total)/float64(max(st.insns, 1)))
		for _, n := range names {
			reason, ok := handAsmOnly[n]
			if !ok {
				t.Errorf("  unknown %-14s %6d  e.g. %s", n, count[n], example[n])
				continue
			}
			t.Logf("  unknown %-14s %6d  allowed: %s; e.g. %s", n, count[n], reason, example[n])
		}
		var sz []string
		for op, n := range st.sizeless {
			sz = append(sz, fmt.Sprintf("%s:%d", op, n))
		}
		sort.Strings(sz)
		if len(sz) > 0 {
			t.Logf("  accesses of unknown size (by x86asm op): %s", strings.Join(sz, " "))
		}
		for _, p := range st.problems {
			t.Errorf("  invariant: %s", p)
		}
		t.Logf("  cross-checked %d instructions with objdump's operands", st.crossChecked)
		for _, x := range st.crossEx {
			t.Errorf("  objdump disagrees: %s", x)
		}
	}
}

package effect

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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
	"fisttp":          "x87 only in 32-bit-era hand asm",
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
	"xlat":            "", // placeholder removed below
	"(bad)":           "undecodable bytes inside a function (data in code)",
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

func init() { delete(handAsmOnly, "xlat") }

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
}

// funcRange is a function symbol's extent in its section.
type funcRange struct {
	name       string
	start, end int
}

// sweepArchive decodes every function of every member by linear sweep and
// computes the effect of every instruction.
func sweepArchive(t *testing.T, path string, visit func(asm *x86asm.Inst, lay *x86len.Layout, code []byte, e *Effect)) *sweepStats {
	data, err := os.ReadFile(path)
	if err != nil {
		missing(t, fmt.Sprintf("%s: %v", path, err))
	}
	members, err := archive.Read(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	st := &sweepStats{unknown: map[string][]unknownSite{}, sizeless: map[string]int{}}
	for _, m := range members {
		f, err := elf.NewFile(bytes.NewReader(m.Data))
		if err != nil {
			continue
		}
		for _, sec := range f.Sections {
			if sec.Flags&elf.SHF_EXECINSTR == 0 || sec.Type != elf.SHT_PROGBITS {
				continue
			}
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
					b := code[off : off+lay.Len]
					e := Of(&asm, &lay, b)
					st.insns++
					if msg := checkInvariants(&e); msg != "" && len(st.problems) < 50 {
						st.problems = append(st.problems, fmt.Sprintf("%s %s+%#x [% x] %v: %s", m.Name, fn.name, off-fn.start, b, asm.Op, msg))
					}
					if !e.Known {
						k := signature(&lay, b)
						st.unknown[k] = append(st.unknown[k], unknownSite{fmt.Sprintf("%s %s+%#x", m.Name, fn.name, off-fn.start), b})
					} else {
						for _, a := range e.Accesses() {
							if a.Size == 0 && !a.Rep {
								st.sizeless[asm.Op.String()]++
							}
						}
					}
					if visit != nil {
						visit(&asm, &lay, b, &e)
					}
					off += lay.Len
				}
			}
		}
		f.Close()
	}
	return st
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

// TestArchiveCoverage sweeps Debian's libc.a, libcrypto.a and libsqlite3.a,
// reports the instructions Of leaves unknown grouped by mnemonic, and fails
// on any that is not a known hand-written-assembly-only instruction. It
// also checks the Effect invariants on every instruction.
func TestArchiveCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
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
			results[i] = result{p, sweepArchive(t, p, nil)}
		}()
	}
	wg.Wait()
	for _, r := range results {
		st := r.st
		var keys []string
		total := 0
		for k, v := range st.unknown {
			keys = append(keys, k)
			total += len(v)
		}
		sort.Strings(keys)
		codes := make([][]byte, len(keys))
		for i, k := range keys {
			codes[i] = st.unknown[k][0].code
		}
		names := objdumpNames(t, codes)
		byName := map[string]int{}
		example := map[string]string{}
		for i, k := range keys {
			n := names[i]
			if n == "" {
				n = "?" + k
			}
			byName[n] += len(st.unknown[k])
			if _, ok := example[n]; !ok {
				s := st.unknown[k][0]
				example[n] = fmt.Sprintf("%s [% x] (%s)", s.where, s.code, k)
			}
		}
		var ns []string
		for n := range byName {
			ns = append(ns, n)
		}
		sort.Slice(ns, func(i, j int) bool { return byName[ns[i]] > byName[ns[j]] || byName[ns[i]] == byName[ns[j]] && ns[i] < ns[j] })
		t.Logf("%s: %d instructions, %d unknown (%.4f%%)", filepath.Base(r.path), st.insns, total, 100*float64(total)/float64(max(st.insns, 1)))
		for _, n := range ns {
			reason, ok := handAsmOnly[n]
			if !ok {
				t.Errorf("  unknown %-14s %6d  e.g. %s", n, byName[n], example[n])
				continue
			}
			t.Logf("  unknown %-14s %6d  allowed: %s; e.g. %s", n, byName[n], reason, example[n])
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
	}
}

package effect

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// Undefined outputs.
//
// The oracle finds dependencies by running an instruction twice with one
// input changed and comparing the outputs, so every output bit it compares
// must be a function of the inputs the driver sets (general registers,
// flags, g_mem, g_xmm, the two x87 values). Some instructions also store
// bits that are not, and comparing them turns noise into dependencies: a
// context switch between the two runs makes "r9 influences {mem}" out of
// nothing. Those bits are:
//
//   - values that change by themselves: the time-stamp counter (rdtsc,
//     rdtscp), random numbers (rdrand, rdseed, and their CF, clear when the
//     generator ran dry), the processor the thread happens to run on
//     (rdtscp's TSC_AUX, rdpid, cpuid's initial APIC ID), which changes
//     when the thread migrates;
//   - the x87 error pointers FIP, FCS, FOP, FDP and FDS that fnstenv,
//     fnsave, fxsave and xsave store: they should describe the last
//     non-control x87 instruction, but a context switch clears them (on
//     the AMD EPYC under KVM the suite runs on, fnstenv stores zeros after
//     a nanosleep, and after 29 of 2*10^7 runs of fldl, 200 nops, fnstenv
//     with both cores busy; TestOracle failed 3 of 400 runs that way),
//     fxsave on AMD stores them only while an exception is pending, and
//     recent Intel CPUs may store FCS/FDS as zero and update FDP only on
//     exceptions;
//   - reserved bytes, whose contents the architecture leaves open;
//   - xsave's XSTATE_BV, which records XINUSE, which a CPU may track
//     conservatively and which the kernel's xrstor on a context switch can
//     change.
//
// undefinedOutputs lists them by mnemonic; the oracle's C driver compares
// everything else. They still count as changed for check (a): storing an
// unpredictable value is still a write. TestOracleMasks shows that the
// masks reach the driver: a result whose masked bits are randomised
// compares equal, one with any other output byte changed does not, and a
// context switch forced right before the instruction changes nothing the
// driver compares.
//
// Instructions with such outputs that are not oracle forms (the model has
// them Known=false, or their output depends on more hidden state) would
// need entries too: sgdt, sidt, sldt, str and smsw (with UMIP the kernel
// emulates them with dummy values), lar, lsl, verr, verw (descriptor
// access), rdpmc, xgetbv with ECX=1 (XINUSE), xsaveopt, xsavec and xsaves
// (the init and modified optimisations skip components depending on
// XINUSE and on the last xrstor).
type undefined struct {
	regs  map[Reg]uint64 // register bits
	dest  bool           // the bytes the destination register operand receives
	flags Flags
	mem   []span // bytes from the memory operand's address
}

// span is a byte range of a stored structure.
type span struct {
	off, n int
	what   string
}

const lo32 = 0xffffffff

// x87Env is what is not compared of the 28-byte protected-mode
// environment (fnstenv, and the first 28 bytes of fnsave's image): the
// error pointers and the reserved halves of the 32-bit fields. FCW, FSW
// and FTW are.
var x87Env = []span{
	{2, 2, "reserved"}, {6, 2, "reserved"}, {10, 2, "reserved"},
	{12, 4, "FIP"}, {16, 2, "FCS"}, {18, 2, "FOP (bits 0-10), reserved"},
	{20, 4, "FDP"}, {24, 2, "FDS"}, {26, 2, "reserved"},
}

// fxArea is the same for the 512-byte legacy area of fxsave and xsave
// (both layouts: FIP/FDP as 32-bit offsets with selectors, or 64-bit):
// FCW, FSW, the abridged FTW, MXCSR, MXCSR_MASK, the x87 registers' 80
// bits and the XMM registers are compared.
var fxArea = []span{
	{5, 1, "reserved"}, {6, 2, "FOP"}, {8, 8, "FIP, FCS"}, {16, 8, "FDP, FDS"},
	{32 + 10, 6, "ST0 reserved"}, {48 + 10, 6, "ST1 reserved"}, {64 + 10, 6, "ST2 reserved"},
	{80 + 10, 6, "ST3 reserved"}, {96 + 10, 6, "ST4 reserved"}, {112 + 10, 6, "ST5 reserved"},
	{128 + 10, 6, "ST6 reserved"}, {144 + 10, 6, "ST7 reserved"},
	{416, 48, "reserved"}, // 464-511 are software's: the CPU does not write them.
}

var xsaveArea = append(append([]span{}, fxArea...), span{512, 8, "XSTATE_BV"})

var undefinedOutputs = map[string]undefined{
	"rdtsc":  {regs: map[Reg]uint64{RAX: lo32, RDX: lo32}},
	"rdtscp": {regs: map[Reg]uint64{RAX: lo32, RDX: lo32, RCX: lo32}},
	"rdrand": {dest: true, flags: CF},
	"rdseed": {dest: true, flags: CF},
	"rdpid":  {dest: true},
	// cpuid: leaf 1 EBX[31:24], the initial APIC ID. The forms run leaves
	// 0-7 (not 0xb, 0x1f: x2APIC ID). On hybrid Intel CPUs leaf 4 (cache
	// parameters) differs between core types too and would need masks.
	"cpuid":    {regs: map[Reg]uint64{RBX: 0xff000000}},
	"fnstenv":  {mem: x87Env},
	"fnsave":   {mem: x87Env},
	"fxsave":   {mem: fxArea},
	"fxsave64": {mem: fxArea},
	"xsave":    {mem: xsaveArea},
	"xsave64":  {mem: xsaveArea},
}

// mnemonic returns the mnemonic of a form's instruction, without prefixes.
func mnemonic(asm string) string {
	fs := strings.Fields(asm)
	for len(fs) > 1 {
		switch fs[0] {
		case "lock", "rep", "repe", "repz", "repne", "repnz":
			fs = fs[1:]
			continue
		}
		break
	}
	return fs[0]
}

// outMask is what the driver does not compare for one form: register
// bits, flags (bit b is flagNames[b]) and g_mem ranges {offset, length}.
type outMask struct {
	regs  [16]uint64
	flags Flags
	mem   [][2]int
}

func (m outMask) String() string {
	var b strings.Builder
	for r, bits := range m.regs {
		if bits != 0 {
			fmt.Fprintf(&b, "%v:%#x ", Reg(r), bits)
		}
	}
	fmt.Fprintf(&b, "flags:%v mem:%v", m.flags, m.mem)
	return b.String()
}

// formMask places a form's entry of undefinedOutputs: its register
// operand, and its memory operand at the pinned address of its base
// register (see pointerOff; forms with masked memory must use base+disp).
func formMask(f oracleForm) (outMask, error) {
	var m outMask
	u, ok := undefinedOutputs[mnemonic(f.asm)]
	if !ok {
		return m, nil
	}
	for r, bits := range u.regs {
		m.regs[r] |= bits
	}
	m.flags = u.flags
	ops := strings.Split(operands(f.asm), ",")
	if u.dest {
		r, w, ok := gprByName(ops[len(ops)-1])
		if !ok {
			return m, fmt.Errorf("%s: no destination register", f.asm)
		}
		m.regs[r] |= ^uint64(0) >> (64 - 8*w)
	}
	if len(u.mem) > 0 {
		base, err := pinnedOperand(f.asm)
		if err != nil {
			return m, err
		}
		for _, s := range u.mem {
			off := base + s.off
			if n := len(m.mem); n > 0 && m.mem[n-1][0]+m.mem[n-1][1] == off {
				m.mem[n-1][1] += s.n
				continue
			}
			m.mem = append(m.mem, [2]int{off, s.n})
		}
	}
	return m, nil
}

// operands returns the operand text of an AT&T instruction.
func operands(asm string) string {
	_, ops, _ := strings.Cut(asm, mnemonic(asm))
	return strings.TrimSpace(ops)
}

// gprByName maps "%eax", "%r9w", ... to the register and its width.
func gprByName(s string) (Reg, int, bool) {
	name := strings.TrimPrefix(strings.TrimSpace(s), "%")
	for r := x86asm.AL; r <= x86asm.R15; r++ {
		if strings.EqualFold(r.String(), name) {
			return GPR(r)
		}
	}
	return 0, 0, false
}

// pinnedOperand returns the g_mem offset of a "disp(%reg)" operand.
func pinnedOperand(asm string) (int, error) {
	op := operands(asm)
	ops := strings.Split(op, ",")
	op = ops[len(ops)-1]
	disp, reg, ok := strings.Cut(op, "(")
	reg, ok2 := strings.CutSuffix(reg, ")")
	if !ok || !ok2 || strings.Contains(reg, ",") {
		return 0, fmt.Errorf("%s: masked memory needs a disp(%%base) operand", asm)
	}
	r, w, ok := gprByName(reg)
	if !ok || w != 8 {
		return 0, fmt.Errorf("%s: bad base register %q", asm, reg)
	}
	d := int64(0)
	if disp != "" {
		var err error
		if d, err = strconv.ParseInt(disp, 0, 32); err != nil {
			return 0, fmt.Errorf("%s: %v", asm, err)
		}
	}
	return int(pointerOff(r)) + int(d), nil
}

// TestUndefinedOutputs keeps the table honest: every entry is exercised by
// a form, its spans are inside the stored structure and do not overlap,
// and every form places its mask.
func TestUndefinedOutputs(t *testing.T) {
	used := map[string]bool{}
	for _, s := range oracleForms {
		f := parseForm(s)
		used[mnemonic(f.asm)] = true
		if _, err := formMask(f); err != nil {
			t.Error(err)
		}
	}
	for name, u := range undefinedOutputs {
		if !used[name] {
			t.Errorf("%s: no oracle form uses this entry", name)
		}
		end := 0
		for _, s := range u.mem {
			if s.off < end || s.n <= 0 || s.what == "" {
				t.Errorf("%s: span %+v overlaps the one before or is empty", name, s)
			}
			end = s.off + s.n
		}
	}
	// fnstenv (%rdi): FCW (0-1), FSW (4-5) and FTW (8-9) are compared.
	m, _ := formMask(parseForm("fnstenv (%rdi)"))
	base := int(pointerOff(RDI))
	want := [][2]int{{base + 2, 2}, {base + 6, 2}, {base + 10, 18}}
	if fmt.Sprint(m.mem) != fmt.Sprint(want) {
		t.Errorf("fnstenv (%%rdi): mask %v, want %v", m.mem, want)
	}
	m, _ = formMask(parseForm("rdrand %ax"))
	if m.regs[RAX] != 0xffff || m.flags != CF {
		t.Errorf("rdrand %%ax: mask %#x %v, want 0xffff CF", m.regs[RAX], m.flags)
	}
}

// TestOracleMasks runs the masked forms in the driver's "masks" mode (see
// harnessC): for each, one random input, run plainly and with a context
// switch forced just before the instruction (after the x87 loads, so the
// kernel saves and restores the state the instruction stores); then the
// plain result with every masked bit randomised, and with each output bit
// (register, flag) and byte (memory) flipped in turn. It shows:
//
//   - the context switch changes only masked outputs (on AMD EPYC it
//     changes fnstenv's error pointers, logged as "raw");
//   - randomising the masked bits still compares equal;
//   - changing any other bit or byte compares different, and the bits the
//     driver ignores are exactly the table's.
func TestOracleMasks(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	t.Parallel()
	var forms []oracleForm
	for _, s := range oracleForms {
		f := parseForm(s)
		if _, ok := undefinedOutputs[mnemonic(f.asm)]; ok {
			forms = append(forms, f)
		}
	}
	o := buildOracle(t, forms, true)
	out, err := exec.Command(o.exe, "1", "masks").Output()
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(forms) {
		t.Fatalf("oracle printed %d lines for %d forms:\n%s", len(lines), len(forms), out)
	}
	for _, l := range lines {
		// fi ok raw masked randomised r0..r15 flags mem-ranges; if not ok,
		// the third field says whether the form raised #UD
		fs := strings.Fields(l)
		if len(fs) < 22 {
			t.Fatalf("oracle output: %q", l)
		}
		i, _ := strconv.Atoi(fs[0])
		f := forms[i]
		if fs[1] != "1" {
			if f.opt || fs[2] == "1" {
				t.Logf("%s: not supported by this CPU", f.asm)
				continue
			}
			t.Errorf("%s: did not run", f.asm)
			continue
		}
		hex := func(s string) uint64 { v, _ := strconv.ParseUint(s, 16, 64); return v }
		raw, masked, randomised := uint32(hex(fs[2])), uint32(hex(fs[3])), uint32(hex(fs[4]))
		if masked != 0 {
			t.Errorf("%s: a context switch changed compared outputs %s (raw %s)", f.asm, outSet(masked), outSet(raw))
		}
		if randomised != 0 {
			t.Errorf("%s: randomising the masked bits changed compared outputs %s", f.asm, outSet(randomised))
		}
		t.Logf("%s: a context switch changed %s, compared %s", f.asm, outSet(raw), outSet(masked))
		var got outMask
		for r := 0; r < 16; r++ {
			got.regs[r] = hex(fs[5+r])
		}
		got.flags = Flags(hex(fs[21]))
		for _, rg := range fs[22:] {
			a, b, _ := strings.Cut(rg, "+")
			off, _ := strconv.Atoi(a)
			n, _ := strconv.Atoi(b)
			got.mem = append(got.mem, [2]int{off, n})
		}
		want := o.masks[i]
		if got.String() != want.String() {
			t.Errorf("%s: the driver ignores %v, the table says %v", f.asm, got, want)
		}
	}
}

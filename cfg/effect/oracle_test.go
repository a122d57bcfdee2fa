package effect

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"hijack/ibr"
)

// The oracle runs instructions on this CPU under many random register,
// flag and memory values and checks the table against what they do:
//
//	(a) every register, flag and memory byte that ever changes is
//	    declared written (Def ∪ Partial, FlagsDef ∪ FlagsMay, a write
//	    access);
//	(b) a flag not in FlagsUse does not influence any other output, and a
//	    flag in FlagsDef that is not undefined does not influence its own
//	    output either (it is really killed);
//	(c) a register not in Use does not influence any other output, and a
//	    register in Def does not influence its own output;
//	(d) memory contents influence registers or flags only if a read
//	    access is declared.
//
// Dependencies are found by varying one input at a time. Registers used as
// addresses are pinned to a buffer (and not varied), index registers and
// rep counts are kept small; flags are set with popf.

// oracleForms are the instructions run. After " #" come options:
//
//	small=REG:N  keep REG in 0..N
//	const=REG:V  fix REG to V
//	opt          may fault on this CPU (then skipped); forms that raise
//	             #UD on every sample are skipped too
//	x87          load two random doubles on the x87 stack first
//	vzero        clear all vector registers first (vzeroall), so that the
//	             ones the driver does not load (xmm4-15, the upper halves)
//	             hold no leftovers of the C code's memcpy (fxsave, xsave
//	             store them)
//
// Outputs that are not a function of the inputs (the time-stamp counter,
// random numbers, x87 error pointers, ...) are not compared: see
// undefinedOutputs.
var oracleForms = []string{
	// Arithmetic and logic, all widths, register and memory forms.
	"add %ebx,%eax", "add %rbx,%rax", "add %bl,%al", "add %bh,%ah", "add %bx,%ax", "add $7,%ecx",
	"addb $1,%ah", "add 8(%rbx),%eax", "add %eax,8(%rbx)", "addq $3,(%rsi)", "addw $3,(%rsi)",
	"add 0x10+g_mem(%rip),%edx",
	"adc %ebx,%eax", "adc %rbx,%rax", "adc %bl,%al", "adc $0,%edx",
	"sub %ebx,%eax", "sub %rbx,%rax", "sub %r8w,%r9w", "sbb %ebx,%eax", "sbb %bl,%cl",
	"and %ebx,%eax", "and $0xff,%rax", "andb $0x0f,(%rdi)", "or %ebx,%eax", "or %cl,%dl",
	"xor %ebx,%eax", "xor %r10,%r11", "xor %dh,%ch",
	"cmp %ebx,%eax", "cmp %bl,%al", "cmpq $5,(%rdi)", "cmpb $1,3(%rdi,%rcx,2)", "test %ebx,%eax", "test %al,%al", "testb $1,(%rsi)",
	"xor %eax,%eax", "xor %rcx,%rcx", "sub %edx,%edx", "sbb %eax,%eax", "sbb %rdx,%rdx", "cmp %rax,%rax", "xor %al,%al", "sub %bx,%bx",
	"inc %eax", "inc %al", "inc %r12", "dec %ecx", "decw %dx", "incl (%rbx)",
	"neg %eax", "neg %rax", "neg %bl", "not %eax", "not %bx", "notq (%rsi)",
	// Moves.
	"mov %ebx,%eax", "mov %rbx,%rax", "mov %bl,%al", "mov %bh,%al", "mov %bl,%ah", "mov %bx,%ax", "mov $5,%al",
	"mov $-1,%eax", "movabs $0x123456789,%rcx", "mov (%rsi),%eax", "mov %eax,(%rdi)", "movw %ax,(%rdi)", "movb $3,(%rdi)",
	"mov 8(%rsp),%rax", "movzbl %bl,%eax", "movzwl %bx,%eax", "movzbw %bl,%ax", "movsbl %bl,%eax", "movsbq %bl,%rax",
	"movswq (%rsi),%rax", "movslq %ebx,%rax", "movsbw %al,%cx", "lea 8(%rbx,%rcx,4),%eax", "lea (%rbx),%rax", "lea 3(%rax),%ax",
	"xchg %ebx,%eax", "xchg %rbx,%rax", "xchg %bl,%al", "xchg %ah,%al", "xchg %bx,%ax", "xchg %eax,%eax", "xchg %eax,(%rbx)",
	"xadd %ebx,%eax", "xadd %rbx,(%rsi)", "xadd %bl,%al",
	"cmpxchg %ebx,%ecx", "cmpxchg %rbx,%rcx", "cmpxchg %bl,%cl", "cmpxchg %ebx,(%rsi)", "lock cmpxchg %rbx,(%rsi)", "cmpxchg %ebx,%eax",
	"cmpxchg8b (%rsi)", "cmpxchg16b (%rsi)",
	"bswap %eax", "bswap %rax", "bswap %r9",
	"movbe (%rsi),%eax", "movbe %rax,(%rdi)", "movbe (%rsi),%cx",
	"crc32b %bl,%eax", "crc32w %bx,%eax", "crc32l %ebx,%eax", "crc32q %rbx,%rax", "crc32b (%rsi),%eax",
	"popcnt %ebx,%eax", "popcnt %rbx,%rax", "popcnt %bx,%ax", "lzcnt %ebx,%eax", "lzcnt %rbx,%rax", "tzcnt %ebx,%eax", "tzcnt %rbx,%rax", "tzcnt %bx,%ax",
	"bsf %ebx,%eax", "bsf %rbx,%rax", "bsr %ebx,%eax", "bsr %rbx,%rax", "bsf %bx,%ax",
	"bt %ebx,%eax", "bt $3,%eax", "bt %rbx,%rax", "bts %ebx,%eax", "btr $63,%rax", "btc %bx,%ax", "btl $5,(%rsi)", "btsq $7,(%rsi)",
	"bt %ebx,(%rsi) #small=rbx:200",
	// Shifts and rotates: by 1, by immediates (including counts masked to
	// 0 and counts past the width), by CL.
	"shl %eax", "shl $1,%eax", "shl $3,%eax", "shl $31,%eax", "shl $32,%eax", "shl $63,%rax", "shl $0,%eax",
	"shl $8,%al", "shl $9,%al", "shl $16,%ax", "shr $3,%eax", "shr $1,%bl", "sar $5,%rax", "sar %al", "sar $31,%edx",
	"shl %cl,%eax", "shl %cl,%rax", "shl %cl,%al", "shl %cl,%bx", "shr %cl,%eax", "sar %cl,%rdx", "shlb %cl,(%rsi)",
	"rol $1,%eax", "rol $3,%eax", "rol $8,%al", "ror $13,%rax", "ror %bl", "rol %cl,%eax", "ror %cl,%rax", "rol %cl,%al", "rolw $8,%ax",
	"rcl %eax", "rcl $3,%eax", "rcr $1,%rax", "rcr $9,%al", "rcl %cl,%eax", "rcr %cl,%bx", "rcl $17,%ax",
	"shld $3,%ebx,%eax", "shld $1,%rbx,%rax", "shrd $5,%ebx,%eax", "shrd $63,%rbx,%rax", "shld %cl,%ebx,%eax", "shrd %cl,%rbx,%rax",
	"shld $4,%bx,%ax", "shrd %cl,%bx,%ax", "shld $20,%bx,%ax",
	// Multiplication and division.
	"mul %ebx", "mul %rbx", "mul %bl", "mul %bx", "imul %ebx", "imul %rbx", "imul %bl", "imul %bx", "mull (%rsi)",
	"imul %ebx,%eax", "imul %rbx,%rax", "imul %bx,%ax", "imul $7,%ebx,%eax", "imul $-3,%rbx,%rax", "imul $100,(%rsi),%ecx",
	"div %ebx #small=rdx:3", "div %rbx #small=rdx:3", "div %bl #small=rax:0x3ff", "div %bx #small=rdx:3",
	"idiv %ebx #small=rdx:0", "idiv %rbx #small=rdx:0", "idiv %bl #small=rax:0x3f", "idivw %bx #small=rdx:0",
	"divq (%rsi) #small=rdx:0",
	"cbw", "cwde", "cdqe", "cwd", "cdq", "cqo",
	// Condition codes.
	"seto %al", "setno %al", "setb %al", "setae %al", "sete %al", "setne %al", "setbe %al", "seta %al",
	"sets %al", "setns %al", "setp %al", "setnp %al", "setl %al", "setge %al", "setle %al", "setg %al",
	"setne %ah", "sete (%rdi)",
	"cmovo %ebx,%eax", "cmovno %ebx,%eax", "cmovb %ebx,%eax", "cmovae %ebx,%eax", "cmove %ebx,%eax", "cmovne %ebx,%eax",
	"cmovbe %ebx,%eax", "cmova %ebx,%eax", "cmovs %ebx,%eax", "cmovns %ebx,%eax", "cmovp %ebx,%eax", "cmovnp %ebx,%eax",
	"cmovl %ebx,%eax", "cmovge %ebx,%eax", "cmovle %ebx,%eax", "cmovg %ebx,%eax",
	"cmove %rbx,%rax", "cmovne %bx,%ax", "cmovl (%rsi),%eax",
	// Flag instructions.
	"lahf", "sahf", "clc", "stc", "cmc", "cld", "std", "pushf", "popf", "pushw $1", "pushfw",
	// Stack.
	"push %rax", "push %rsp", "push $-5", "pushq (%rsi)", "push 8(%rsp)", "pop %rax", "pop %rsp", "popq (%rdi)", "pop 8(%rsp)",
	"popw %ax", "pushw %ax", "leave", "enter $16,$0", "enter $8,$1", "enter $8,$3", "call 1f; 1:",
	// Strings.
	"movsb", "movsw", "movsl", "movsq", "rep movsb #small=rcx:15", "rep movsq #small=rcx:15",
	"stosb", "stosl", "stosq", "rep stosb #small=rcx:15", "rep stosw #small=rcx:15",
	"lodsb", "lodsw", "lodsl", "lodsq", "rep lodsl #small=rcx:15", "rep lodsb #small=rcx:15",
	"cmpsb", "cmpsq", "repe cmpsb #small=rcx:15", "repne cmpsl #small=rcx:15",
	"scasb", "scasl", "repne scasb #small=rcx:15", "repe scasq #small=rcx:15",
	"xlat",
	// System and miscellaneous.
	"syscall #const=rax:39", "cpuid #const=rax:1", "cpuid #small=rax:7", "rdtsc", "rdtscp",
	"rdrand %eax", "rdrand %rax", "rdrand %ax", "rdseed %rcx", "rdpid %rax",
	"xgetbv #const=rcx:0", "rdfsbase %rax #opt", "rdsspq %rax #opt", "rdsspd %eax #opt", "endbr64", "nop", "nopw 0(%rax,%rax,1)",
	"nopl (%rax)", "pause", "lfence", "mfence", "sfence", "prefetcht0 (%rsi)", "prefetchw (%rsi)", "clflush (%rsi)",
	"clflushopt (%rsi)", "clwb (%rsi)", "endbr32", "incsspq %rax #opt", "rdpkru #opt #const=rcx:0", "xtest #opt",
	// Branches whose target is the next instruction: both paths meet.
	"jne 1f; 1:", "jle 1f; 1:", "loop 1f; 1:", "loope 1f; 1:", "loopne 1f; 1:", "jrcxz 1f; 1:", "jmp 1f; 1:",
	// ADX, BMI1, BMI2.
	"adcx %ebx,%eax", "adcx %rbx,%rax", "adox %ebx,%eax", "adox %rbx,%rax", "adcx (%rsi),%rax",
	"andn %ebx,%ecx,%eax", "andn %rbx,%rcx,%rax", "bextr %ebx,%ecx,%eax", "bextr %rbx,%rcx,%rax", "blsi %ebx,%eax", "blsi %rbx,%rax",
	"blsmsk %ebx,%eax", "blsr %ebx,%eax", "blsr %rbx,%rax", "bzhi %ebx,%ecx,%eax", "bzhi %rbx,%rcx,%rax",
	"mulx %rbx,%rcx,%rax", "mulx %ebx,%ecx,%eax", "mulx %rbx,%rax,%rax", "pdep %rbx,%rcx,%rax", "pext %ebx,%ecx,%eax",
	"rorx $7,%ebx,%eax", "rorx $7,%rbx,%rax", "sarx %ebx,%ecx,%eax", "shlx %rbx,%rcx,%rax", "shrx %ebx,%ecx,%eax",
	// SSE/AVX with general-register or flag effects.
	"movd %xmm0,%eax", "movd %eax,%xmm1", "movq %xmm0,%rax", "movq %rax,%xmm1", "pextrb $3,%xmm0,%eax", "pextrw $2,%xmm0,%eax",
	"pextrd $1,%xmm0,%eax", "pextrq $1,%xmm0,%rax", "pextrw $2,%xmm0,(%rdi)", "pinsrw $1,%eax,%xmm1", "pinsrq $1,%rax,%xmm1",
	"pmovmskb %xmm0,%eax", "movmskps %xmm0,%eax", "movmskpd %xmm0,%rax", "cvtsi2sd %rax,%xmm1", "cvttsd2si %xmm0,%eax",
	"cvttsd2si %xmm0,%rax", "cvtsd2si %xmm0,%rax", "cvttss2si %xmm0,%eax", "extractps $1,%xmm0,%eax",
	"comiss %xmm0,%xmm1", "ucomisd %xmm0,%xmm1", "comisd (%rsi),%xmm1", "ptest %xmm0,%xmm1",
	"pcmpistri $0x0c,%xmm0,%xmm1", "pcmpistri $0x4a,(%rsi),%xmm1", "pcmpestri $0x0c,%xmm0,%xmm1", "pcmpestri $0x18,%xmm2,%xmm3",
	"pcmpistrm $0x40,%xmm0,%xmm1", "pcmpestrm $0x40,%xmm2,%xmm3",
	"vmovd %xmm0,%eax", "vmovq %xmm0,%rax", "vmovd %eax,%xmm1", "vpextrb $5,%xmm0,%eax", "vpextrq $1,%xmm0,%rax",
	"vpinsrd $2,%eax,%xmm1,%xmm2", "vpmovmskb %ymm0,%eax", "vmovmskps %ymm1,%eax", "vptest %ymm0,%ymm1", "vtestps %ymm0,%ymm1",
	"vtestpd %xmm0,%xmm1", "vucomiss %xmm0,%xmm1", "vcomisd %xmm2,%xmm3", "vcvttsd2si %xmm0,%rax", "vcvtsi2ss %eax,%xmm1,%xmm2",
	"vpcmpistri $0x0c,%xmm0,%xmm1", "vpcmpestri $0x0c,%xmm2,%xmm3", "vpbroadcastb (%rsi),%ymm1", "vmovdqu (%rsi),%ymm1",
	"vmovdqu %ymm1,(%rdi)", "vmaskmovps %ymm0,%ymm1,(%rdi)", "vzeroupper", "ldmxcsr (%rsi) #opt", "stmxcsr (%rdi)",
	"maskmovdqu %xmm0,%xmm1",
	// x87.
	"fnstsw %ax #x87", "fcomi %st(1),%st #x87", "fucomi %st(1),%st #x87", "fcomip %st(1),%st #x87", "fucomip %st(1),%st #x87",
	"fcmovb %st(1),%st #x87", "fcmovne %st(1),%st #x87", "fstpl (%rdi) #x87", "fldl (%rsi) #x87", "fnstcw (%rdi) #x87",
	"fistpl (%rdi) #x87", "fstpt (%rdi) #x87", "fnstenv (%rdi) #x87", "fnsave (%rdi) #x87",
	// State save areas (%rdi is 16-byte aligned, %rsi 64-byte aligned);
	// xsave of x87, SSE and AVX state, which fits in g_mem.
	"fxsave (%rdi) #x87 #vzero", "fxsave64 (%rdi) #x87 #vzero",
	"xsave (%rsi) #x87 #vzero #small=rax:7 #const=rdx:0", "xsave64 (%rsi) #x87 #vzero #small=rax:7 #const=rdx:0",
}

// oracleForm is a parsed entry of oracleForms.
type oracleForm struct {
	asm    string
	small  map[Reg]uint64
	consts map[Reg]uint64
	opt    bool
	x87    bool
	vzero  bool
}

func parseForm(s string) oracleForm {
	parts := strings.Split(s, " #")
	f := oracleForm{asm: strings.TrimSpace(parts[0]), small: map[Reg]uint64{}, consts: map[Reg]uint64{}}
	for _, o := range parts[1:] {
		k, v, _ := strings.Cut(o, "=")
		switch k {
		case "vzero":
			f.vzero = true
		case "opt":
			f.opt = true
		case "x87":
			f.x87 = true
		case "small", "const":
			rn, val, _ := strings.Cut(v, ":")
			n, err := strconv.ParseUint(val, 0, 64)
			if err != nil {
				panic(s)
			}
			r := regByName(rn)
			if k == "small" {
				f.small[r] = n
			} else {
				f.consts[r] = n
			}
		default:
			panic("bad oracle option in " + s)
		}
	}
	return f
}

func regByName(s string) Reg {
	for i, n := range regNames {
		if n == s {
			return Reg(i)
		}
	}
	panic("bad register " + s)
}

// Register input modes of the C driver.
const (
	modeRandom = iota
	modePointer
	modeSmall
	modeConst
)

// oracle result of one form.
type oracleResult struct {
	ok      int
	sigill  bool // the CPU lacks the instruction
	changed uint32
	dep     [24]uint32 // by input: 0-15 registers, 16-22 flags, 23 memory
}

const (
	bitFlags = 16
	bitMem   = 23
)

func outName(b int) string {
	switch {
	case b < 16:
		return Reg(b).String()
	case b < bitMem:
		return flagNames[b-bitFlags]
	}
	return "mem"
}

func outSet(m uint32) string {
	var s []string
	for b := 0; b < 24; b++ {
		if m&(1<<b) != 0 {
			s = append(s, outName(b))
		}
	}
	return "{" + strings.Join(s, ",") + "}"
}

const harnessC = `
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern uint64_t g_in[17], g_out[17];
extern unsigned char g_mem[2048], g_xmm[64];
extern double g_x87[2];

typedef void (*fn_t)(void);
/* rmask, flmask, mm: the outputs diff does not compare (undefinedOutputs
   in oracle_mask_test.go): register bits, flags, g_mem ranges {off, len}. */
#define MAXMM 16
struct form {
	fn_t fn; unsigned char mode[16]; uint64_t val[16];
	uint64_t rmask[16]; unsigned flmask; unsigned short mm[MAXMM][2];
};
#include "forms.h"

/* Called by the test functions after the x87 loads if set (masks mode). */
void (*g_hook)(void);
static void ctxswitch(void) { struct timespec ts = {0, 1000}; nanosleep(&ts, 0); }

static sigjmp_buf jb;
static volatile sig_atomic_t lastsig;
static void handler(int sig) { lastsig = sig; siglongjmp(jb, 1); }

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { rs ^= rs >> 12; rs ^= rs << 25; rs ^= rs >> 27; return rs * 0x2545f4914f6cdd1dull; }
static const uint64_t special[] = {0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000,
	0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull,
	0xffffffffffffffffull, 0xfffffffffffffffeull, 0xffffffff80000000ull, 0x00000000ffff0000ull};
static uint64_t randval(void) {
	switch (rnd() % 5) {
	case 0: case 1: return special[rnd() % (sizeof special / sizeof special[0])];
	case 2: return rnd() & 0xff;
	default: return rnd();
	}
}

struct state { uint64_t r[16]; unsigned fl; unsigned char mem[2048], xmm[64]; double x87[2]; };
struct result { uint64_t r[16]; unsigned fl; unsigned char mem[2048]; };

/* CF PF AF ZF SF OF DF */
static const int flagbit[7] = {0, 2, 4, 6, 7, 11, 10};

static uint64_t regval(const struct form *f, int i) {
	switch (f->mode[i]) {
	case 1: return (uint64_t)(uintptr_t)(g_mem + f->val[i]);
	case 2: return rnd() % (f->val[i] + 1);
	case 3: return f->val[i];
	}
	return randval();
}

static void randmem(unsigned char *m) { for (int i = 0; i < 2048; i += 8) { uint64_t v = rnd(); memcpy(m + i, &v, 8); } }

static int run(const struct form *f, const struct state *s, struct result *o) {
	uint64_t fl = 0x202;
	for (int b = 0; b < 7; b++) if (s->fl & (1u << b)) fl |= 1ull << flagbit[b];
	memcpy(g_in, s->r, sizeof s->r);
	g_in[16] = fl;
	memcpy(g_mem, s->mem, sizeof s->mem);
	memcpy(g_xmm, s->xmm, sizeof s->xmm);
	memcpy(g_x87, s->x87, sizeof s->x87);
	if (sigsetjmp(jb, 1)) {
		/* The instruction may have set AC or TF (popf): clear them. */
		__asm__ volatile("pushq $0x202; popfq" ::: "cc", "memory");
		return 0;
	}
	f->fn();
	memcpy(o->r, g_out, sizeof o->r);
	o->fl = 0;
	for (int b = 0; b < 7; b++) if (g_out[16] & (1ull << flagbit[b])) o->fl |= 1u << b;
	memcpy(o->mem, g_mem, sizeof o->mem);
	return 1;
}

static int masked(const struct form *f, int i) {
	for (int m = 0; m < MAXMM && f->mm[m][1]; m++)
		if (i >= f->mm[m][0] && i < f->mm[m][0] + f->mm[m][1]) return 1;
	return 0;
}

/* diff compares two results of form f except for its masked outputs (none
   if f is 0). */
static uint32_t diff(const struct form *f, const struct result *a, const struct result *b) {
	static const struct form none;
	if (!f) f = &none;
	uint32_t d = 0;
	for (int i = 0; i < 16; i++) if ((a->r[i] ^ b->r[i]) & ~f->rmask[i]) d |= 1u << i;
	d |= ((a->fl ^ b->fl) & 0x7f & ~f->flmask) << 16;
	if (memcmp(a->mem, b->mem, sizeof a->mem)) {
		if (!f->mm[0][1]) d |= 1u << 23;
		else for (int i = 0; i < 2048; i++) if (a->mem[i] != b->mem[i] && !masked(f, i)) { d |= 1u << 23; break; }
	}
	return d;
}

static uint32_t changed(const struct state *s, const struct result *o) {
	uint32_t d = 0;
	for (int i = 0; i < 16; i++) if (s->r[i] != o->r[i]) d |= 1u << i;
	d |= ((s->fl ^ o->fl) & 0x7f) << 16;
	if (memcmp(s->mem, o->mem, sizeof s->mem)) d |= 1u << 23;
	return d;
}

static void randstate(const struct form *f, struct state *s) {
	for (int i = 0; i < 16; i++) s->r[i] = regval(f, i);
	s->fl = rnd() & 0x7f;
	randmem(s->mem);
	for (int i = 0; i < 64; i += 8) { uint64_t x = randval(); memcpy(s->xmm + i, &x, 8); }
	for (int i = 0; i < 2; i++) s->x87[i] = (double)(int64_t)randval() / (double)(1 + (rnd() & 0xffff));
	if (rnd() % 4 == 0) s->x87[1] = s->x87[0];
}

/* masks mode, for TestOracleMasks: per form, one input run plainly (o) and
   with a context switch forced before the instruction (w); then o with its
   masked bits randomised, and with each output bit (registers, flags) and
   byte (memory) flipped in turn. Prints the form, whether it ran (if not,
   whether it raised #UD), the outputs that differ between o and w unmasked
   and masked, those that
   differ after the randomising, and the flips diff did not notice: 16
   register masks, the flag mask, and g_mem ranges as off+len. */
static void masks(void) {
	static struct state s;
	static struct result o, w, v;
	for (int fi = 0; fi < NFORMS; fi++) {
		const struct form *f = &forms[fi];
		randstate(f, &s);
		lastsig = 0;
		g_hook = ctxswitch;
		int ok = run(f, &s, &w);
		g_hook = 0;
		if (!ok || !run(f, &s, &o)) {
			printf("%d 0 %d 0 0", fi, lastsig == SIGILL);
			for (int i = 0; i < 17; i++) printf(" 0");
			printf("\n");
			continue;
		}
		v = o;
		for (int i = 0; i < 16; i++) v.r[i] ^= rnd() & f->rmask[i];
		v.fl ^= rnd() & f->flmask;
		for (int i = 0; i < 2048; i++) if (masked(f, i)) v.mem[i] = rnd();
		printf("%d 1 %x %x %x", fi, diff(0, &o, &w), diff(f, &o, &w), diff(f, &o, &v));
		for (int i = 0; i < 16; i++) {
			uint64_t un = 0;
			for (int b = 0; b < 64; b++) { v = o; v.r[i] ^= 1ull << b; if (!diff(f, &o, &v)) un |= 1ull << b; }
			printf(" %llx", (unsigned long long)un);
		}
		unsigned un = 0;
		for (int b = 0; b < 7; b++) { v = o; v.fl ^= 1u << b; if (!diff(f, &o, &v)) un |= 1u << b; }
		printf(" %x", un);
		for (int i = 0, start = -1; i <= 2048; i++) {
			int same = 0;
			if (i < 2048) { v = o; v.mem[i] ^= 0xff; same = !diff(f, &o, &v); }
			if (same && start < 0) start = i;
			if (!same && start >= 0) { printf(" %d+%d", start, i - start); start = -1; }
		}
		printf("\n");
	}
}

int main(int argc, char **argv) {
	int samples = argc > 1 ? atoi(argv[1]) : 64;
	static char altstack[1 << 16];
	stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
	sigaltstack(&ss, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = SA_ONSTACK | SA_NODEFER;
	int sigs[] = {SIGFPE, SIGSEGV, SIGBUS, SIGILL, SIGTRAP};
	for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, 0);
	if (argc > 2 && !strcmp(argv[2], "masks")) {
		masks();
		return 0;
	}
	static struct state s, v;
	static struct result o, ov;
	for (int fi = 0; fi < NFORMS; fi++) {
		const struct form *f = &forms[fi];
		uint32_t ch = 0, dep[24] = {0};
		int ok = 0, ill = 0;
		for (int n = 0; n < samples; n++) {
			randstate(f, &s);
			lastsig = 0;
			if (!run(f, &s, &o)) {
				ill |= lastsig == SIGILL;
				continue;
			}
			ok++;
			ch |= changed(&s, &o);
			for (int k = 0; k < 24; k++) {
				v = s;
				if (k < 16) {
					if (f->mode[k] == 1 || f->mode[k] == 3) continue;
					int tries = 0;
					do v.r[k] = regval(f, k); while (v.r[k] == s.r[k] && ++tries < 8);
					if (v.r[k] == s.r[k]) continue;
				} else if (k < 23) {
					v.fl ^= 1u << (k - 16);
				} else {
					randmem(v.mem);
				}
				if (run(f, &v, &ov)) dep[k] |= diff(f, &o, &ov);
			}
		}
		printf("%d %d %d %x", fi, ok, ill, ch);
		for (int k = 0; k < 24; k++) printf(" %x", dep[k]);
		printf("\n");
	}
	return 0;
}
`

// harnessAsm returns the assembly of the test function for form i.
// With hook, it calls g_hook (if set) after the x87 loads, the earliest
// state the instruction can store, and before the rest, which a C
// function may clobber.
func harnessAsm(i int, f oracleForm, hook bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\t.globl t%d\n\t.type t%d,@function\nt%d:\n", i, i, i)
	b.WriteString("\tpush %rbx\n\tpush %rbp\n\tpush %r12\n\tpush %r13\n\tpush %r14\n\tpush %r15\n")
	b.WriteString("\tmov %rsp,saved_rsp(%rip)\n")
	if f.x87 {
		b.WriteString("\tfninit\n\tfldl g_x87+8(%rip)\n\tfldl g_x87(%rip)\n")
	}
	if hook {
		// Six pushes and the return address: RSP is 8 off 16-byte alignment.
		fmt.Fprintf(&b, "\tmov g_hook(%%rip),%%rax\n\ttest %%rax,%%rax\n\tjz .Lnohook%d\n", i)
		fmt.Fprintf(&b, "\tsub $8,%%rsp\n\tcall *%%rax\n\tadd $8,%%rsp\n.Lnohook%d:\n", i)
	}
	if f.vzero {
		b.WriteString("\tvzeroall\n")
	}
	for x := 0; x < 4; x++ {
		fmt.Fprintf(&b, "\tmovdqu g_xmm+%d(%%rip),%%xmm%d\n", 16*x, x)
	}
	b.WriteString("\tpushq g_in+128(%rip)\n\tpopfq\n")
	for r := Reg(0); r < 16; r++ {
		if r != RSP {
			fmt.Fprintf(&b, "\tmov g_in+%d(%%rip),%%%s\n", 8*r, r)
		}
	}
	b.WriteString("\tmov g_in+32(%rip),%rsp\n")
	b.WriteString("\t" + f.asm + "\n")
	for r := Reg(0); r < 16; r++ {
		fmt.Fprintf(&b, "\tmov %%%s,g_out+%d(%%rip)\n", r, 8*r)
	}
	// Save the flags, then reset them all (popf may have set AC or TF).
	b.WriteString("\tmov saved_rsp(%rip),%rsp\n\tpushfq\n\tpopq g_out+128(%rip)\n\tpushq $0x202\n\tpopfq\n")
	if f.x87 {
		b.WriteString("\tfninit\n")
	}
	b.WriteString("\tpop %r15\n\tpop %r14\n\tpop %r13\n\tpop %r12\n\tpop %rbp\n\tpop %rbx\n\tret\n")
	return b.String()
}

// pointerOff is where register r points into g_mem when it is pinned.
func pointerOff(r Reg) uint64 { return 256 + 96*uint64(r) }

// oracle is the C driver built for some forms.
type oracle struct {
	exe     string
	codes   [][]byte
	effects []Effect
	modes   [][16]int
	masks   []outMask
}

// buildOracle assembles the forms, generates the test functions (with the
// masks-mode hook if hook) and the form table, and compiles the driver.
func buildOracle(t *testing.T, forms []oracleForm, hook bool) *oracle {
	t.Helper()
	cc := requireTool(t, "gcc")
	lines := make([]string, len(forms))
	for i, f := range forms {
		lines[i] = f.asm
	}
	codes := assemble(t, lines)
	effects := make([]Effect, len(forms))
	addrs := make([][]x86asm.Mem, len(forms))
	var hdr, asm strings.Builder
	asm.WriteString("\t.text\n")
	fmt.Fprintf(&hdr, "#define NFORMS %d\n", len(forms))
	for i, f := range forms {
		lay, inst, err := ibr.Decode(codes[i])
		if err != nil || int(lay.Len) != len(codes[i]) {
			t.Fatalf("%s: [% x] does not decode as one instruction: %v", f.asm, codes[i], err)
		}
		e := Of(&inst, &lay, codes[i])
		if !e.Known {
			t.Errorf("%s: not known", f.asm)
		}
		effects[i] = e
		for _, a := range e.Accesses() {
			addrs[i] = append(addrs[i], a.Mem)
		}
		for _, a := range inst.Args {
			if m, ok := a.(x86asm.Mem); ok {
				addrs[i] = append(addrs[i], m)
			}
		}
		fmt.Fprintf(&hdr, "void t%d(void);\n", i)
		asm.WriteString(harnessAsm(i, f, hook))
	}
	hdr.WriteString("static const struct form forms[] = {\n")
	modes := make([][16]int, len(forms))
	masks := make([]outMask, len(forms))
	for i, f := range forms {
		var mode [16]int
		var val [16]uint64
		e := &effects[i]
		pin := func(r Reg) { mode[r], val[r] = modePointer, pointerOff(r) }
		pin(RSP)
		// Address registers point into g_mem (index registers stay
		// small), also for operands that are not accessed (clflush).
		for _, m := range addrs[i] {
			if r, w, ok := GPR(m.Index); ok && w > 1 {
				mode[r], val[r] = modeSmall, 3
			}
		}
		for _, m := range addrs[i] {
			if r, _, ok := GPR(m.Base); ok {
				pin(r)
			}
		}
		for _, a := range e.Accesses() {
			if a.Rep && mode[RCX] == modeRandom {
				mode[RCX], val[RCX] = modeSmall, 15
			}
		}
		for r, n := range f.small {
			mode[r], val[r] = modeSmall, n
		}
		for r, v := range f.consts {
			mode[r], val[r] = modeConst, v
		}
		modes[i] = mode
		fmt.Fprintf(&hdr, "\t{t%d, {", i)
		for r := range mode {
			fmt.Fprintf(&hdr, "%d,", mode[r])
		}
		hdr.WriteString("}, {")
		for r := range val {
			fmt.Fprintf(&hdr, "%#xull,", val[r])
		}
		m, err := formMask(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.mem) > 16 { // MAXMM
			t.Fatalf("%s: %d masked ranges, the driver takes 16", f.asm, len(m.mem))
		}
		masks[i] = m
		hdr.WriteString("}, {")
		for r := range m.regs {
			fmt.Fprintf(&hdr, "%#xull,", m.regs[r])
		}
		fmt.Fprintf(&hdr, "}, %#x, {", uint8(m.flags))
		for _, r := range m.mem {
			fmt.Fprintf(&hdr, "{%d,%d},", r[0], r[1])
		}
		hdr.WriteString("}},\n")
	}
	hdr.WriteString("};\n")
	asm.WriteString(`
	.data
	.balign 64
	.globl g_in, g_out, g_mem, g_xmm, g_x87
g_in:	.zero 17*8
g_out:	.zero 17*8
	.balign 64
g_mem:	.zero 2048
g_xmm:	.zero 64
g_x87:	.zero 16
saved_rsp: .quad 0
	.section .note.GNU-stack,"",@progbits
`)
	dir := t.TempDir()
	for name, text := range map[string]string{"forms.h": hdr.String(), "harness.c": harnessC, "forms.s": asm.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(dir, "oracle")
	if out, err := exec.Command(cc, "-O1", "-no-pie", "-o", exe, filepath.Join(dir, "harness.c"), filepath.Join(dir, "forms.s")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return &oracle{exe: exe, codes: codes, effects: effects, modes: modes, masks: masks}
}

func TestOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	t.Parallel()
	forms := make([]oracleForm, len(oracleForms))
	for i, s := range oracleForms {
		forms[i] = parseForm(s)
	}
	o := buildOracle(t, forms, false)
	codes, effects, modes := o.codes, o.effects, o.modes
	out, err := exec.Command(o.exe, "96").Output()
	if err != nil {
		t.Fatalf("oracle: %v", err)
	}
	results := make([]oracleResult, len(forms))
	sc := bufio.NewScanner(bytes.NewReader(out))
	n := 0
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 28 {
			t.Fatalf("oracle output: %q", sc.Text())
		}
		i, _ := strconv.Atoi(fs[0])
		r := &results[i]
		r.ok, _ = strconv.Atoi(fs[1])
		r.sigill = fs[2] == "1"
		v, _ := strconv.ParseUint(fs[3], 16, 32)
		r.changed = uint32(v)
		for k := 0; k < 24; k++ {
			v, _ := strconv.ParseUint(fs[4+k], 16, 32)
			r.dep[k] = uint32(v)
		}
		n++
	}
	if n != len(forms) {
		t.Fatalf("oracle printed %d results for %d forms", n, len(forms))
	}
	checked := 0
	var notes, skipped []string
	for i, f := range forms {
		r := &results[i]
		e := &effects[i]
		if r.ok < 16 {
			if f.opt || r.sigill && r.ok == 0 {
				skipped = append(skipped, f.asm)
				continue
			}
			t.Errorf("%s: only %d of 96 samples ran", f.asm, r.ok)
			continue
		}
		checked++
		var formNotes []string
		for _, p := range oracleCheck(e, r, &modes[i]) {
			if n, ok := strings.CutPrefix(p, "note: "); ok {
				formNotes = append(formNotes, n)
				continue
			}
			t.Errorf("%s [% x] (%v): %s", f.asm, codes[i], e, p)
		}
		if len(formNotes) > 0 {
			notes = append(notes, fmt.Sprintf("%s: %s", f.asm, strings.Join(formNotes, "; ")))
		}
	}
	t.Logf("oracle: %d forms checked; skipped (not supported by this CPU): %s", checked, strings.Join(skipped, ", "))
	for _, s := range notes {
		t.Log(s)
	}
}

// oracleCheck compares one form's observed behaviour with its effect.
func oracleCheck(e *Effect, r *oracleResult, mode *[16]int) []string {
	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	written := uint32(e.Def|e.Partial) | uint32(e.FlagsDef|e.FlagsMay)<<bitFlags
	if e.Writes() {
		written |= 1 << bitMem
	}
	if extra := r.changed &^ written; extra != 0 {
		bad("(a) changes undeclared outputs %s", outSet(extra))
	}
	for k := 0; k < 16; k++ {
		reg := Reg(k)
		if e.Use.Has(reg) {
			if r.dep[k] == 0 && !e.Partial.Has(reg) && (mode[k] == modeRandom || mode[k] == modeSmall) {
				probs = append(probs, fmt.Sprintf("note: %s in Use never influenced anything", reg))
			}
			continue
		}
		others := r.dep[k] &^ (1 << k)
		if others != 0 {
			bad("(c) %s is not in Use but influences %s", reg, outSet(others))
		}
		if e.Def.Has(reg) && r.dep[k]&(1<<k) != 0 {
			bad("(c) %s is in Def but its output depends on its input", reg)
		}
	}
	var kept Flags
	for b := 0; b < 7; b++ {
		fl := Flags(1 << b)
		k := bitFlags + b
		if e.FlagsUse&fl != 0 {
			continue
		}
		if others := r.dep[k] &^ (1 << k); others != 0 {
			bad("(b) %v is not in FlagsUse but influences %s", fl, outSet(others))
		}
		if e.FlagsDef&fl != 0 && r.dep[k]&(1<<k) != 0 {
			if e.FlagsUndef&fl != 0 {
				kept |= fl
			} else {
				bad("(b) %v is in FlagsDef but its output depends on its input", fl)
			}
		}
	}
	if kept != 0 {
		probs = append(probs, fmt.Sprintf("note: this CPU keeps undefined %v", kept))
	}
	if others := r.dep[bitMem] &^ (1 << bitMem); others != 0 && !e.Reads() {
		bad("(d) memory influences %s but no read is declared", outSet(others))
	}
	return probs
}

/*
 * sites.S: what hijack's vptrace preset emits into an object, written by
 * hand (ABI.md version 1): a .vptrace section with the object descriptor,
 * the site records and the strings; TLS last-page slots; a constructor that
 * calls vpt_register; and functions whose accesses are instrumented with the
 * exact fast-path/slow-path sequence.
 *
 * Sites (see vt.c, which mirrors this table):
 *   0 vt_read      read   heap
 *   1 vt_write     write  heap
 *   2 vt_rmw       rmw    heap
 *   3 vt_global    write  global  vt_gbuf
 *   4 vt_tls       read   tls     vt_tvar
 *   5 vt_exact     read   heap    (exact mode: no slot, every call records)
 *   6 vt_exact_w   write  heap    (exact mode)
 *   7 vt_regtest   read   heap    (regs.S)
 *   8 vt_read2     read   heap    (scratch rdx, flags live and saved)
 *   9 vt_movsb     rep source      read   (vpt_rep, rsi, 1-byte elements)
 *  10 vt_movsb     rep destination write  (vpt_rep, rdi)
 *  11 vt_stosq     rep destination write  (vpt_rep, rdi, 8-byte elements)
 *  12 vt_movsq_back rep source     read   (DF set: backwards)
 *  13 vt_movsq_back rep destination write
 *  14 vt_sweep     read, range (kind 0x40: vpt_range at loop exit, 8-byte loads)
 *  15 vt_cread     read   heap    (default mode: the runtime's recent-page cache applies)
 *  16 vt_cread2    read   heap    (default mode)
 *  17 vt_cwrite    write  heap    (default mode)
 *  18 vt_csweep    read, range (as 14, default mode)
 *  19 vt_dsweep    read, range with a register step (kind 0x48: vpt_range_dyn; rdx x 1)
 *  20 vt_dsweep_back read, range with a register step (rdx x -1, the access after the step)
 *  21 vt_cdsweep   read, as 19, default mode
 *  22 (regs.S)     read, vector (vpt_vec, default mode): a dword gather, indices ymm1 x 4, mask ymm2
 *  23 (regs.S)     read, vector: a qword gather, indices ymm3 x 8, mask ymm4, 8-byte elements
 *  24 (regs.S)     write, vector: a masked dword store at the base, mask ymm6
 *
 * Sites 0-14, 19 and 20 have kind bit 2 (exact) set, so that the runtime
 * records every event they make and vt.c's counts stay simple; 15-18 and
 * 21-24 do not, and vt.c models the runtime's per-thread cache and range
 * memo for them.
 */
#define NSITES 25

	.section .vptrace,"a",@progbits
	.p2align 3
	.globl vt_object
vt_object:
	.long 0x31545056
	.long 1
	.long NSITES
	.long 2				/* flags: bit 1, reserved = slots' TPOFF */
	.long vt_sites - .
	.long vt_strs - .
	.long s_name - vt_strs
	.long vt_strs_end - vt_strs
	.quad 0x0123456789abcdef
	.quad vt_slots@tpoff		/* R_X86_64_TPOFF64 */

	.globl vt_sites
vt_sites:
	.macro SITE func, off, sym, symoff, kind, seg, size, exact=4, block=0
	.long \func - vt_strs, \off
	.long \sym
	.long \symoff
	.byte (\kind | \exact), \seg	/* kind bit 2: exact, every event recorded (see above) */
	.short \size
	.long 1, \block, 1000000
	.endm
	SITE s_read, 0x10, 0xffffffff, 0, 1, 0, 1
	SITE s_write, 0x10, 0xffffffff, 0, 2, 0, 1
	SITE s_rmw, 0x10, 0xffffffff, 0, 3, 0, 1
	SITE s_global, 0x18, s_gbuf-vt_strs, 0, 2, 1, 1
	SITE s_tls, 0x14, s_tvar-vt_strs, 0, 1, 3, 4
	SITE s_exact, 0x8, 0xffffffff, 0, 1, 0, 1
	SITE s_exactw, 0x8, 0xffffffff, 0, 2, 0, 1
	SITE s_regtest, 0x40, 0xffffffff, 0, 1, 0, 8
	SITE s_read2, 0x20, 0xffffffff, 0, 1, 0, 8
	SITE s_movsb, 0x10, 0xffffffff, 0, 0x11, 0, 1
	SITE s_movsb, 0x10, 0xffffffff, 0, 0x22, 0, 1
	SITE s_stosq, 0x8, 0xffffffff, 0, 0x22, 0, 8
	SITE s_movsqb, 0x14, 0xffffffff, 0, 0x11, 0, 8
	SITE s_movsqb, 0x14, 0xffffffff, 0, 0x22, 0, 8
	SITE s_sweep, 0x10, 0xffffffff, 0, 0x41, 0, 8
	SITE s_cread, 0x10, 0xffffffff, 0, 1, 0, 1, 0
	SITE s_cread2, 0x10, 0xffffffff, 0, 1, 0, 1, 0
	SITE s_cwrite, 0x10, 0xffffffff, 0, 2, 0, 1, 0
	SITE s_csweep, 0x10, 0xffffffff, 0, 0x41, 0, 8, 0
	SITE s_dsweep, 0x10, 0xffffffff, 0, 0x49, 0, 8, 4, 0x02000001
	SITE s_dsweepb, 0x10, 0xffffffff, 0, 0x49, 0, 8, 4, 0x02ffffff
	SITE s_cdsweep, 0x10, 0xffffffff, 0, 0x49, 0, 8, 0, 0x02000001
	/* vector descriptors (rt.h VD_*): index register, VSIB 1<<5, log2
	 * scale <<6, qword indices 1<<8, count <<9, mask register <<15, mask 1<<20 */
	SITE s_vec, 0x10, 0xffffffff, 0, 0x81, 0, 4, 0, 1 | 1<<5 | 2<<6 | 8<<9 | 2<<15 | 1<<20
	SITE s_vec, 0x20, 0xffffffff, 0, 0x81, 0, 8, 0, 3 | 1<<5 | 3<<6 | 1<<8 | 4<<9 | 4<<15 | 1<<20
	SITE s_vec, 0x30, 0xffffffff, 0, 0x82, 0, 4, 0, 8<<9 | 6<<15 | 1<<20

vt_strs:
	.byte 0
s_name:	.asciz "testdata/sites.o"
s_read:	.asciz "vt_read"
s_write: .asciz "vt_write"
s_rmw:	.asciz "vt_rmw"
s_global: .asciz "vt_global"
s_tls:	.asciz "vt_tls"
s_exact: .asciz "vt_exact"
s_exactw: .asciz "vt_exact_w"
s_regtest: .asciz "vt_regtest"
s_read2: .asciz "vt_read2"
s_movsb: .asciz "vt_movsb"
s_stosq: .asciz "vt_stosq"
s_movsqb: .asciz "vt_movsq_back"
s_sweep: .asciz "vt_sweep"
s_cread: .asciz "vt_cread"
s_cread2: .asciz "vt_cread2"
s_cwrite: .asciz "vt_cwrite"
s_csweep: .asciz "vt_csweep"
s_dsweep: .asciz "vt_dsweep"
s_dsweepb: .asciz "vt_dsweep_back"
s_cdsweep: .asciz "vt_cdsweep"
s_vec:	.asciz "vt_regtest_vec"
s_gbuf:	.asciz "vt_gbuf"
s_tvar:	.asciz "vt_tvar"
vt_strs_end:

	.section .tbss,"awT",@nobits
	.p2align 3
	.globl vt_slots
vt_slots:
	.zero 8*NSITES
	.p2align 6
	.globl vt_tvar
vt_tvar:
	.zero 64

	.bss
	.p2align 12
	.globl vt_gbuf
vt_gbuf:
	.zero 16*4096

	.section .init_array,"aw"
	.p2align 3
	.quad vt_ctor

	.text
vt_ctor:
	leaq vt_object(%rip), %rdi
	jmp vpt_register

/* fast path for site k: EA in %rdi, scratch \reg */
	.macro FAST k, reg
	leaq (%rdi), %\reg
	shrq $12, %\reg
	cmpq %\reg, %fs:vt_slots@tpoff+8*\k
	je 1f
	leaq -128(%rsp), %rsp
	call vpt_slow_\reg
	nopl vt_sites+32*\k(%rip)	/* 0f 1f 05 disp32: the site */
	leaq 128(%rsp), %rsp
	movq %\reg, %fs:vt_slots@tpoff+8*\k
1:
	.endm

/* exact mode: no compare, no slot */
	.macro EXACT k, reg
	leaq (%rdi), %\reg
	shrq $12, %\reg
	leaq -128(%rsp), %rsp
	call vpt_slow_\reg
	nopl vt_sites+32*\k(%rip)
	leaq 128(%rsp), %rsp
	.endm

/* a function of one instrumented access: the \seq sequence (FAST or
 * EXACT) of site \k with scratch \reg, then the access itself */
	.macro ACCESSFN name, seq, k, reg, access:vararg
	.globl \name
	.type \name, @function
\name:
	\seq \k, \reg
	\access
	ret
	.size \name, .-\name
	.endm

/* before a rep string instruction: nothing in registers */
	.macro REPSITE k
	leaq -128(%rsp), %rsp
	call vpt_rep
	nopl vt_sites+32*\k(%rip)
	leaq 128(%rsp), %rsp
	.endm

	ACCESSFN vt_read, FAST, 0, rax, movzbl (%rdi), %eax	/* int vt_read(const void *p) */
	ACCESSFN vt_write, FAST, 1, rcx, movb $1, (%rdi)	/* void vt_write(void *p) */
	ACCESSFN vt_rmw, FAST, 2, r11, incb (%rdi)	/* void vt_rmw(void *p) */

	.globl vt_global
	.type vt_global, @function
vt_global:				/* void *vt_global(long page) */
	shlq $12, %rdi
	leaq vt_gbuf(%rip), %rax
	addq %rax, %rdi
	FAST 3, r8
	movb $1, (%rdi)
	movq %rdi, %rax
	ret
	.size vt_global, .-vt_global

	.globl vt_tls
	.type vt_tls, @function
vt_tls:					/* void *vt_tls(void): reads vt_tvar, returns its address */
	movq %fs:0, %rdi
	leaq vt_tvar@tpoff(%rdi), %rdi
	FAST 4, r10
	movl (%rdi), %eax
	movq %rdi, %rax
	ret
	.size vt_tls, .-vt_tls

	ACCESSFN vt_cread, FAST, 15, rax, movzbl (%rdi), %eax	/* int vt_cread(const void *p) */
	ACCESSFN vt_cread2, FAST, 16, rsi, movzbl (%rdi), %eax	/* int vt_cread2(const void *p) */
	ACCESSFN vt_cwrite, FAST, 17, rdx, movb $3, (%rdi)	/* void vt_cwrite(void *p) */
	ACCESSFN vt_exact, EXACT, 5, rsi, movzbl (%rdi), %eax	/* void vt_exact(const void *p) */
	ACCESSFN vt_exact_w, EXACT, 6, r9, movb $2, (%rdi)	/* void vt_exact_w(void *p) */

/* vt_read2: the fast path with live flags saved around it (seto/lahf), as
 * hijack does when liveness says flags are live: returns (p1 < p2) computed
 * before the instrumented access and used after it. */
	.globl vt_read2
	.type vt_read2, @function
vt_read2:				/* int vt_read2(const void *p, long a, long b) */
	pushq %rbx
	cmpq %rdx, %rsi			/* flags live across the access */
	movq %rax, %rbx			/* spill rax for the flags dance */
	seto %al
	lahf
	movq %rax, %r11
	FAST 8, rdx
	movq %r11, %rax
	addb $0x7f, %al
	sahf
	movq %rbx, %rax
	movzbl (%rdi), %ecx
	setl %al
	movzbl %al, %eax
	popq %rbx
	ret
	.size vt_read2, .-vt_read2

	.globl vt_movsb
	.type vt_movsb, @function
vt_movsb:				/* void vt_movsb(void *dst, const void *src, size_t n) */
	movq %rdx, %rcx
	REPSITE 9
	REPSITE 10
	rep movsb
	ret
	.size vt_movsb, .-vt_movsb

	.globl vt_stosq
	.type vt_stosq, @function
vt_stosq:				/* void vt_stosq(void *dst, uint64_t v, size_t n) */
	movq %rsi, %rax
	movq %rdx, %rcx
	REPSITE 11
	rep stosq
	ret
	.size vt_stosq, .-vt_stosq

/* a sweep summarised per loop run: the entry stores the first address in
 * the site's slot, the exit hands first and last to vpt_range */
	.macro SWEEPFN name, k
	.globl \name
	.type \name, @function
\name:					/* long name(const char *p, long n >= 1, long step) */
	movq %rdi, %fs:vt_slots@tpoff+8*\k
	xorl %eax, %eax
	movq %rdi, %r8
	movq %rsi, %rcx
1:	addq (%r8), %rax
	addq %rdx, %r8
	decq %rcx
	jnz 1b
	subq %rdx, %r8			/* the last address */
	leaq -128(%rsp), %rsp
	pushq %fs:vt_slots@tpoff+8*\k	/* first */
	pushq %r8			/* last */
	call vpt_range
	nopl vt_sites+32*\k(%rip)
	leaq 16(%rsp), %rsp
	leaq 128(%rsp), %rsp
	ret
	.size \name, .-\name
	.endm

	SWEEPFN vt_sweep, 14
	SWEEPFN vt_csweep, 18

/* sweeps whose step is a register (rdx, stepped by \step), as the preset
 * emits them: adj bit 0, the step before the access (the first access is
 * one step from the entry's address); bit 1, the step after it (the exit's
 * address is one step past the last access) */
	.macro DSWEEPFN name, k, step, adj
	.globl \name
	.type \name, @function
\name:
	movq %rdi, %fs:vt_slots@tpoff+8*\k
	xorl %eax, %eax
	movq %rdi, %r8
	movq %rsi, %rcx
	.if \adj & 1
1:	\step %rdx, %r8
	addq (%r8), %rax
	.else
1:	addq (%r8), %rax
	\step %rdx, %r8
	.endif
	decq %rcx
	jnz 1b
	leaq -128(%rsp), %rsp
	pushq %fs:vt_slots@tpoff+8*\k	/* the entry's address */
	pushq %r8			/* the exit's */
	pushq $\adj
	call vpt_range_dyn
	nopl vt_sites+32*\k(%rip)
	leaq 24(%rsp), %rsp
	leaq 128(%rsp), %rsp
	ret
	.size \name, .-\name
	.endm

	DSWEEPFN vt_dsweep, 19, addq, 2		/* long vt_dsweep(const char *p, long n >= 1, long step) */
	DSWEEPFN vt_dsweep_back, 20, subq, 1	/* the same, reading p-step, p-2*step, ... */
	DSWEEPFN vt_cdsweep, 21, addq, 2	/* vt_dsweep through a default-mode site */

	.globl vt_movsq_back
	.type vt_movsq_back, @function
vt_movsq_back:				/* (dst_last, src_last, n): copies n quadwords backwards */
	movq %rdx, %rcx
	std
	REPSITE 12
	REPSITE 13
	rep movsq
	cld
	ret
	.size vt_movsq_back, .-vt_movsq_back

	.section .note.GNU-stack,"",@progbits

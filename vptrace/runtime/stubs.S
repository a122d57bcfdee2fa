//go:build !vptgohalf

/*
 * stubs.S: the slow-path entry points vpt_slow_<reg> of ABI.md.
 *
 * Per-event path (no call, no Go, async-signal-safe): saves rdi rsi rax rdx
 * rcx r8 and the arithmetic flags (seto/lahf), reserves a 24-byte slot in the
 * calling thread's buffer with one xadd on a TLS word (so a signal handler
 * that interrupts us reserves the next slot), stores page+1, time and the
 * site address (site last: a slot with site == 0 is not written yet) and
 * returns. The buffer is full, or the thread has none yet: batch path.
 *
 * Batch path (.Lfull): saves RFLAGS (pushfq, then cld for C), r9-r11, and the
 * x87/SSE/AVX/AVX-512 state with xsave (mask and size from cpuid, computed on
 * first use) on a 64-byte aligned stack area, then calls the C function
 * vpt_full(page1, site, time), which hands the buffer over and stores the
 * event. rbx, rbp, r12-r15 are callee-saved in C.
 */
#include "rt.h"

/*
 * XSAVE_CALL fn: with rbp set up as the frame, r9-r11 pushed and the
 * arguments in rdi rsi rdx rcx r8: save the x87/SSE/AVX/AVX-512 state
 * on a 64-byte aligned area below, call fn, restore. Clobbers rax, rdx
 * (after passing rdx), flags.
 */
	.macro XSAVE_CALL fn, area=0
	pushq %rdx
	movl vpt_xsave_size(%rip), %eax
	testl %eax, %eax
	jnz 1f
	call vpt_xsave_init
1:	popq %rdx
	subq %rax, %rsp
	andq $-64, %rsp
	cmpl $0, vpt_xsave_mask(%rip)
	je 2f
	pushq %rdx
	xorl %eax, %eax
	movq %rax, 8+512(%rsp)          /* the XSAVE header must be zero but XSTATE_BV */
	movq %rax, 8+520(%rsp)
	movq %rax, 8+528(%rsp)
	movq %rax, 8+536(%rsp)
	movq %rax, 8+544(%rsp)
	movq %rax, 8+552(%rsp)
	movq %rax, 8+560(%rsp)
	movq %rax, 8+568(%rsp)
	movl vpt_xsave_mask(%rip), %eax
	xorl %edx, %edx
	xsave64 8(%rsp)
	popq %rdx
	jmp 3f
2:	fxsave64 (%rsp)
3:
	.if \area
	movq %rsp, %rdx                 /* the saved state, for fn */
	.endif
	call \fn
	movl vpt_xsave_mask(%rip), %eax
	testl %eax, %eax
	je 4f
	xorl %edx, %edx
	xrstor64 (%rsp)
	jmp 5f
4:	fxrstor64 (%rsp)
5:
	.endm

	.text

	.macro STUB reg
	.globl vpt_slow_\reg
	.type vpt_slow_\reg, @function
	.p2align 4
vpt_slow_\reg:
	.cfi_startproc
	pushq %rdi
	.cfi_adjust_cfa_offset 8
	leaq 1(%\reg), %rdi            /* the register holds the page; events store page+1 */
	jmp vpt_event
	.cfi_endproc
	.size vpt_slow_\reg, .-vpt_slow_\reg
	.endm

	STUB rax
	STUB rcx
	STUB rdx
	STUB rbx
	STUB rbp
	STUB rsi
	STUB r8
	STUB r9
	STUB r10
	STUB r11
	STUB r12
	STUB r13
	STUB r14
	STUB r15

	.globl vpt_slow_rdi
	.type vpt_slow_rdi, @function
	.p2align 4
vpt_slow_rdi:
	.cfi_startproc
	pushq %rdi
	.cfi_adjust_cfa_offset 8
	leaq 1(%rdi), %rdi
	jmp vpt_event
	.cfi_endproc
	.size vpt_slow_rdi, .-vpt_slow_rdi

/* CACHE_WAY off, other: vpt_event's probe of the entry at off(%rsi) (key
 * r8, kinds eax): not this page, on to other; this page with every kind of
 * the access, .Lret; else the kinds added, on to the event (4f). */
	.macro CACHE_WAY off, other
	movq \off(%rsi), %rdx
	xorq %r8, %rdx                  /* at most 3: this page, rdx = its kinds */
	cmpq $3, %rdx
	ja \other
	notl %edx
	testl %eax, %edx
	jz .Lret                        /* every kind of this access recorded */
	orq %rax, \off(%rsi)
	jmp 4f
	.endm

/* vpt_event: rdi = page+1; the original rdi is at 0(%rsp), the return address at 8(%rsp). */
	.hidden vpt_event
	.type vpt_event, @function
	.p2align 4
vpt_event:
	.cfi_startproc
	.cfi_adjust_cfa_offset 8
	pushq %rsi
	.cfi_adjust_cfa_offset 8
	pushq %rax
	.cfi_adjust_cfa_offset 8
	pushq %rdx
	.cfi_adjust_cfa_offset 8
	pushq %rcx
	.cfi_adjust_cfa_offset 8
	pushq %r8
	.cfi_adjust_cfa_offset 8
	seto %al
	lahf
	movl %eax, %ecx                 /* cx: arithmetic flags */
	cmpl $0, vpt_hot+VH_ACTIVE(%rip)
	je .Lret
	movq 48(%rsp), %rsi             /* return address -> nopl site(%rip) */
	movslq 3(%rsi), %rax
	leaq 7(%rsi,%rax), %rsi         /* site = end of the nopl + disp32 */
	movq vpt_t@gottpoff(%rip), %rdx
	/* The recent-page cache (rt.h): an access to a page this thread
	 * recorded lately for every kind (read, write) of this access is not
	 * recorded again, unless the site is of exact mode (kind bit 2). */
	movzbl VS_KIND(%rsi), %eax      /* kind */
	testb $VPT_KIND_EXACT, %al
	jnz 1f
	andl $(VPT_KIND_READ | VPT_KIND_WRITE), %eax /* k: 1 read, 2 write, 3 both */
	jz 2f                           /* neither (no such sites): not cached */
	leaq (,%rdi,4), %r8
	addq vpt_hot+VH_EPOCH(%rip), %r8    /* the page's key: (page+1) << 2, + epoch */
	movq %fs:VT_CACHE(%rdx), %rsi   /* the thread's cache: none before its first batch */
	testq %rsi, %rsi
	jz 2f
	leaq (,%r8,4), %rdx             /* the set: page+1 mod 16384 (consecutive pages, */
	andl $VPT_CACHE_SETMASK, %edx   /*  consecutive sets: a table of up to 64 MiB */
	addq %rdx, %rsi                 /*  conflicts nowhere), two entries, key | kinds recorded */
	CACHE_WAY 0, 3f
3:	CACHE_WAY 8, 5f
5:	movq (%rsi), %rdx               /* in neither: the first entry moves to the second */
	movq %rdx, 8(%rsi)
	orq %rax, %r8
	movq %r8, (%rsi)
4:	movq vpt_t@gottpoff(%rip), %rdx
2:	movq 48(%rsp), %rsi             /* the site again */
	movslq 3(%rsi), %rax
	leaq 7(%rsi,%rax), %rsi
1:	movq vpt_hot+VH_CLOCK(%rip), %r8
	incl %fs:VT_DEPTH(%rdx)
	movl $VPT_EV_SIZE, %eax
	xaddq %rax, %fs:VT_CUR(%rdx)
	cmpq %fs:VT_END(%rdx), %rax
	jae .Lfull
	movq %rdi, (%rax)
	movq %r8, 16(%rax)
	movq %rsi, 8(%rax)
	decl %fs:VT_DEPTH(%rdx)
.Lret:
	movl %ecx, %eax
	addb $0x7f, %al                 /* OF */
	sahf                            /* SF ZF AF PF CF */
.Lpop:
	popq %r8
	.cfi_adjust_cfa_offset -8
	popq %rcx
	.cfi_adjust_cfa_offset -8
	popq %rdx
	.cfi_adjust_cfa_offset -8
	popq %rax
	.cfi_adjust_cfa_offset -8
	popq %rsi
	.cfi_adjust_cfa_offset -8
	popq %rdi
	.cfi_adjust_cfa_offset -8
	ret

.Lfull:
	.cfi_adjust_cfa_offset 48
	movl %ecx, %eax                 /* the caller's arithmetic flags back first */
	addb $0x7f, %al
	sahf
	pushfq
	.cfi_adjust_cfa_offset 8
	cld
	pushq %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -72
	movq %rsp, %rbp
	.cfi_def_cfa_register %rbp
	pushq %r9
	pushq %r10
	pushq %r11
	movq %r8, %rdx                  /* vpt_full(page1, site, time) */
	XSAVE_CALL vpt_full
	leaq -24(%rbp), %rsp
	popq %r11
	popq %r10
	popq %r9
	popq %rbp
	.cfi_def_cfa %rsp, 64
	.cfi_restore %rbp
	popfq
	.cfi_adjust_cfa_offset -8
	jmp .Lpop
	.cfi_endproc
	.size vpt_event, .-vpt_event

/*
 * FLAGS_FROM off: the arithmetic flags and DF as the rflags image at
 * off(%rsp) has them, without popfq: popfq waits for every older
 * instruction, so that the caller's loads in flight before the call stop
 * overlapping with its later ones (a loop of random loads and one popfq
 * each runs 5x slower on the machines we measured; sahf and std do not).
 * The other bits of rflags are ones the stubs do not change (TF, AC, IF:
 * user code cannot change IF anyway). Clobbers rax.
 */
	.macro FLAGS_FROM off
	testl $0x400, \off(%rsp)       /* DF: set again if it was (cld for C) */
	jz .Lflags_df\@
	std
.Lflags_df\@:
	movb \off+1(%rsp), %al         /* OF, rflags bit 11 */
	shrb $3, %al
	andb $1, %al
	addb $0x7f, %al                 /* OF */
	movb \off(%rsp), %ah           /* SF ZF AF PF CF: rflags' low byte */
	sahf
	.endm

/*
 * The frame vpt_rep and vpt_range share. RANGE_SAVE keeps rdi (in the
 * slot vpt_event restores it from, so that a one-page range continues on
 * the per-event path), the flags (DF included), rax, rcx, rdx and rsi:
 * 0 rsi, 8 rdx, 16 rcx, 24 rax, 32 flags, 40 rdi, 48 return address, 56..
 * what the caller pushed.
 */
	.macro RANGE_SAVE
	pushq %rdi
	.cfi_adjust_cfa_offset 8
	pushfq
	.cfi_adjust_cfa_offset 8
	pushq %rax
	.cfi_adjust_cfa_offset 8
	pushq %rcx
	.cfi_adjust_cfa_offset 8
	pushq %rdx
	.cfi_adjust_cfa_offset 8
	pushq %rsi
	.cfi_adjust_cfa_offset 8
	.endm

/* restores what RANGE_SAVE saved but rdi (the flags without popfq:
 * FLAGS_FROM) */
	.macro RANGE_POP
	popq %rsi
	.cfi_adjust_cfa_offset -8
	popq %rdx
	.cfi_adjust_cfa_offset -8
	popq %rcx
	.cfi_adjust_cfa_offset -8
	FLAGS_FROM 8
	popq %rax
	.cfi_adjust_cfa_offset -8
	leaq 8(%rsp), %rsp              /* the flags' slot */
	.cfi_adjust_cfa_offset -8
	.endm

/* one page, its number in \reg: on to the per-event path with rdi = page+1
 * (the saved rdi at 0(%rsp), the return address at 8) */
	.macro RANGE_EVENT reg
	leaq 1(%\reg), %rdi
	RANGE_POP
	jmp vpt_event
	.endm

/* the batch path, after RANGE_EVENT: an rbp frame, r8-r11 saved, rdi =
 * the site; the caller's arguments are at 64(%rbp) on */
	.macro RANGE_SLOW_ENTER
	.cfi_adjust_cfa_offset 40
	cld
	pushq %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -64
	movq %rsp, %rbp
	.cfi_def_cfa_register %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	movq 56(%rbp), %rax             /* return address */
	movslq 3(%rax), %rdi
	leaq 7(%rax,%rdi), %rdi
	.endm

/*
 * QUICK_CALL quick, arg3, skip: with rbp the frame and 32 bytes of
 * registers pushed below it, calls quick (C, general registers only: the
 * vector state is not saved) with rdi, rsi and arg3 (rdx; or rcx, with
 * rdx = 0) on a 16-byte aligned stack. Jumps to skip if it returns
 * non-zero; else restores the three arguments and the stack pointer.
 */
	.macro QUICK_CALL quick, arg3, skip
	pushq %rdi
	pushq %rsi
	pushq %\arg3
	andq $-16, %rsp
	.ifc \arg3,rcx
	xorl %edx, %edx
	.endif
	call \quick
	testl %eax, %eax
	jnz \skip
	movq -40(%rbp), %rdi
	movq -48(%rbp), %rsi
	movq -56(%rbp), %\arg3
	leaq -56(%rbp), %rsp
	.endm

/* calls fn with the vector state saved, and leaves the batch path; with
 * quick, calls quick(same arguments) first, general registers only, and
 * skips fn (and the xsave) when it returns non-zero */
	.macro RANGE_SLOW_CALL fn, quick
	.ifnb \quick
	QUICK_CALL \quick, rdx, 7f
	.endif
	XSAVE_CALL \fn
7:	leaq -32(%rbp), %rsp
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	.cfi_def_cfa %rsp, 56
	.cfi_restore %rbp
	.endm

	.macro RANGE_RETURN
	RANGE_POP
	popq %rdi
	.cfi_adjust_cfa_offset -8
	ret
	.endm

/*
 * vpt_rep: called before a rep string instruction (ABI.md), nothing in
 * registers but the instruction's own operands. The site's kind bit 4 says
 * the range starts at rsi, bit 5 at rdi; rcx elements of the site's size
 * bytes, forwards (DF clear) or backwards (DF set: the range ends at
 * rsi/rdi + size). One page: the per-event path (vpt_event). More pages,
 * or both bits: vpt_rep_c, an event per page.
 */
	.globl vpt_rep
	.type vpt_rep, @function
	.p2align 4
vpt_rep:
	.cfi_startproc
	RANGE_SAVE
	cmpl $0, vpt_hot+VH_ACTIVE(%rip)
	je .Lrep_ret
	movq 16(%rsp), %rcx             /* elements */
	testq %rcx, %rcx
	jz .Lrep_ret
	movq 48(%rsp), %rax
	movslq 3(%rax), %rdx
	leaq 7(%rax,%rdx), %rax         /* site */
	movzbl VS_KIND(%rax), %edx      /* kind */
	andl $(VPT_KIND_REP_SRC | VPT_KIND_REP_DEST), %edx
	movq 0(%rsp), %rsi              /* source range: rsi */
	cmpl $VPT_KIND_REP_SRC, %edx
	je 1f
	movq 40(%rsp), %rsi             /* destination range: rdi */
	cmpl $VPT_KIND_REP_DEST, %edx
	jne .Lrep_slow                  /* both, or neither */
1:	movzwl VS_SIZE(%rax), %edx      /* element size */
	testl %edx, %edx
	jz .Lrep_slow
	cmpq $4096, %rcx
	jae .Lrep_slow
	imulq %rdx, %rcx                /* bytes */
	btq $10, 32(%rsp)               /* DF */
	jnc 2f
	addq %rdx, %rsi                 /* backwards: the range ends at base + size */
	subq %rcx, %rsi
2:	leaq -1(%rsi,%rcx), %rcx        /* last byte */
	shrq $12, %rsi
	shrq $12, %rcx
	cmpq %rsi, %rcx
	jne .Lrep_slow
	RANGE_EVENT rsi

.Lrep_slow:
	RANGE_SLOW_ENTER                /* vpt_rep_c(site, rsi, rdi, rcx, rflags) */
	movq 8(%rbp), %rsi
	movq 48(%rbp), %rdx
	movq 24(%rbp), %rcx
	movq 40(%rbp), %r8
	RANGE_SLOW_CALL vpt_rep_c
.Lrep_ret:
	RANGE_RETURN
	.cfi_endproc
	.size vpt_rep, .-vpt_rep

/*
 * vpt_range: called at the exit of a loop whose site sweeps memory with a
 * constant step (ABI.md "Sweeps"): the caller pushed the first access's
 * address, then the last's; the return address points at nopl site(%rip).
 * Records every page of [min, max + size - 1] (size: the site's access
 * size). One page: the per-event path; more: vpt_range_c. Preserves
 * everything (the caller saves no flags); the caller pops the addresses.
 */
	.globl vpt_range
	.type vpt_range, @function
	.p2align 4
vpt_range:
	.cfi_startproc
	RANGE_SAVE                      /* 56 last, 64 first */
	cmpl $0, vpt_hot+VH_ACTIVE(%rip)
	je .Lrange_ret
	movq 48(%rsp), %rax
	movslq 3(%rax), %rdx
	leaq 7(%rax,%rdx), %rax         /* site */
	movzwl VS_SIZE(%rax), %edx      /* access size */
	testl %edx, %edx
	jnz 1f
	movl $1, %edx
1:	movq 64(%rsp), %rcx             /* first */
	movq 56(%rsp), %rsi             /* last */
	cmpq %rcx, %rsi
	jae 2f
	xchgq %rcx, %rsi                /* rcx = lowest, rsi = highest address */
2:	leaq -1(%rsi,%rdx), %rsi        /* last byte */
	shrq $12, %rcx
	shrq $12, %rsi
	cmpq %rcx, %rsi
	jne .Lrange_slow
	RANGE_EVENT rcx

.Lrange_slow:
	RANGE_SLOW_ENTER                /* vpt_range_c(site, first, last) */
	movq 72(%rbp), %rsi
	movq 64(%rbp), %rdx
	RANGE_SLOW_CALL vpt_range_c, vpt_range_quick
.Lrange_ret:
	RANGE_RETURN
	.cfi_endproc
	.size vpt_range, .-vpt_range

/*
 * vpt_vec, vpt_rep_after and vpt_range_dyn: the whole-machine-state path. The caller
 * stepped over the red zone and pushed one argument (vpt_vec: the base
 * address of a vector access; vpt_rep_after: rcx before a repe/repne
 * string instruction) and calls with nopl site(%rip) after the call. The
 * stub saves every general register and the flags, saves the vector state
 * with xsave, and calls fn(site, regs, state, arg), where regs[0..15] are
 * rax..r15 by hardware number (regs[4], rsp, is not meaningful) and
 * regs[16] the flags. It restores everything; the caller pops the argument.
 * With quick, it first calls quick(site, regs, 0, arg), a C function of
 * general registers only, and when that returns non-zero (nothing to
 * record) returns without the xsave and fn.
 */
	.macro FULLSTUB name, fn, quick
	.globl \name
	.type \name, @function
	.p2align 4
\name:
	.cfi_startproc
	pushfq
	.cfi_adjust_cfa_offset 8
	pushq %r15
	pushq %r14
	pushq %r13
	pushq %r12
	pushq %r11
	pushq %r10
	pushq %r9
	pushq %r8
	pushq %rdi
	pushq %rsi
	pushq %rbp
	pushq %rsp
	pushq %rbx
	pushq %rdx
	pushq %rcx
	pushq %rax                      /* 0 rax .. 120 r15, 128 flags, 136 ret, 144 arg */
	.cfi_adjust_cfa_offset 128
	cmpl $0, vpt_hot+VH_ACTIVE(%rip)
	je 9f
	cld
	pushq %rbp
	.cfi_adjust_cfa_offset 8
	movq %rsp, %rbp
	.cfi_def_cfa_register %rbp
	leaq 8(%rbp), %rsi              /* regs */
	movq 144(%rbp), %rax            /* return address -> nopl site(%rip) */
	movslq 3(%rax), %rdi
	leaq 7(%rax,%rdi), %rdi         /* site */
	movq 152(%rbp), %rcx            /* the pushed argument */
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r8
	.ifnb \quick                    /* quick(site, regs, 0, arg): non-zero, no fn (and no xsave) */
	QUICK_CALL \quick, rcx, 8f
	.endif
	XSAVE_CALL \fn, 1
8:	movq %rbp, %rsp
	popq %rbp
	.cfi_def_cfa %rsp, 144
9:	FLAGS_FROM 128
	popq %rax
	popq %rcx
	popq %rdx
	popq %rbx
	leaq 8(%rsp), %rsp              /* rsp */
	popq %rbp
	popq %rsi
	popq %rdi
	popq %r8
	popq %r9
	popq %r10
	popq %r11
	popq %r12
	popq %r13
	popq %r14
	popq %r15
	.cfi_adjust_cfa_offset -128
	leaq 8(%rsp), %rsp              /* the flags */
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size \name, .-\name
	.endm

	FULLSTUB vpt_vec_full, vpt_vec_c
	.hidden vpt_vec_full

/* pushes and pops of general registers, with their CFI */
	.macro PUSH_CFI regs:vararg
	.irp r, \regs
	pushq %\r
	.cfi_adjust_cfa_offset 8
	.endr
	.endm

	.macro POP_CFI regs:vararg
	.irp r, \regs
	popq %\r
	.cfi_adjust_cfa_offset -8
	.endr
	.endm

/* vpt_vec's frame: VEC_SAVE pushes the general registers it uses and
 * leaves the arithmetic flags in eax (seto/lahf), which vpt_vec keeps at
 * 72(%rsp) of the 80-byte area it reserves below them; VEC_RESTORE
 * restores the flags from there and the registers, and leaves the stack
 * as on entry. */
	.macro VEC_SAVE
	PUSH_CFI rax, rbx, rcx, rdx, rsi, rdi, rbp, r8, r9, r10, r11
	seto %al
	lahf
	.endm

	.macro VEC_RESTORE
	movl 72(%rsp), %eax
	addb $0x7f, %al                 /* OF */
	sahf                            /* SF ZF AF PF CF */
	leaq 80(%rsp), %rsp
	.cfi_adjust_cfa_offset -80
	POP_CFI r11, r10, r9, r8, rbp, rdi, rsi, rdx, rcx, rbx, rax
	.endm

/* VEC_STORE table, shift: the vector register numbered by bits shift..+4
 * of the descriptor (edi) to vpt_vec's area, through table; ymm16-31 (no
 * VEX encoding) go to the whole-state path. */
	.macro VEC_STORE table, shift
	movl %edi, %eax
	.if \shift
	shrl $\shift, %eax
	.endif
	andl $0x1f, %eax
	cmpl $15, %eax
	ja .Lvec_full
	leaq \table(%rip), %rdx
	leaq (%rdx,%rax,8), %rdx
	call *%rdx
	.endm

/*
 * vpt_vec: vpt_vec_full's fast path. It stores the index and mask
 * registers the site's descriptor names (rt.h VD_*) on its stack, through
 * a table of vmovdqu, and calls vpt_vec_quick (C, general registers only),
 * which records the pages the thread's cache lacks without the vector
 * state being saved. When that cannot (exact mode, no cache yet, a full
 * buffer, a descriptor it does not handle), vpt_vec_full takes over with
 * the stack as on entry. Preserves every register and the flags.
 */
	.globl vpt_vec
	.type vpt_vec, @function
	.p2align 4
vpt_vec:
	.cfi_startproc
	VEC_SAVE
	subq $80, %rsp                  /* 0 indices, 32 mask, 72 flags; 80 r11 .. 160 rax, 168 ret, 176 base */
	.cfi_adjust_cfa_offset 80
	movl %eax, 72(%rsp)
	cmpl $0, vpt_hot+VH_ACTIVE(%rip)
	je .Lvec_ret
	movq 168(%rsp), %rsi            /* return address -> nopl site(%rip) */
	movslq 3(%rsi), %rax
	leaq 7(%rsi,%rax), %rsi         /* site */
	movl VS_BLOCK(%rsi), %edi       /* the descriptor */
	btl $VD_MASK_BIT, %edi          /* a mask */
	jnc 2f
	VEC_STORE .Lvec_st32, VD_MREG_SHIFT /* the mask register to 32(%rsp) */
2:	btl $VD_VSIB_BIT, %edi          /* VSIB: indices */
	jnc 3f
	VEC_STORE .Lvec_st0, 0          /* the index register to 0(%rsp) */
3:	pushfq                          /* DF: C wants it clear; when it is */
	.cfi_adjust_cfa_offset 8        /* not, the whole-state path (no popfq */
	testl $0x400, (%rsp)            /* here: see FLAGS_FROM) */
	leaq 8(%rsp), %rsp
	.cfi_adjust_cfa_offset -8
	jnz .Lvec_full
	movq %rsp, %rbx
	.cfi_def_cfa_register %rbx
	andq $-16, %rsp
	movq %rsi, %rdi                 /* vpt_vec_quick(site, area, base) */
	movq %rbx, %rsi
	movq 176(%rbx), %rdx
	call vpt_vec_quick
	movq %rbx, %rsp
	.cfi_def_cfa_register %rsp
	testl %eax, %eax
	jz .Lvec_full
.Lvec_ret:
	VEC_RESTORE
	ret

.Lvec_full:
	.cfi_adjust_cfa_offset 168
	VEC_RESTORE
	jmp vpt_vec_full                /* the stack as on entry */
	.cfi_endproc
	.size vpt_vec, .-vpt_vec

/* vmovdqu %ymmN, 8(%rsp) / 40(%rsp) (past the return address): the index
 * and mask registers of vpt_vec, by number; 8 bytes each */
	.macro VEC_TABLE off
	.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	vmovdqu %ymm\n, \off(%rsp)
	ret
	.p2align 3
	.endr
	.endm

	.p2align 3
.Lvec_st0:
	VEC_TABLE 8
.Lvec_st32:
	VEC_TABLE 40
	FULLSTUB vpt_rep_after, vpt_rep_after_c
	FULLSTUB vpt_range_dyn, vpt_range_dyn_c, vpt_range_dyn_quick

/*
 * vpt_slots: the calling thread has no slot array yet for an object of
 * tls: indirect (ABI.md): its TLS word is 0. Called by the object's
 * __vpt_slotsetup_<id> with the word's offset from the thread pointer
 * pushed, the return address pointing at nopl desc(%rip) (the object's
 * descriptor); the red zone was stepped over. Saves everything (the
 * general registers, the flags, the vector state: once per thread and
 * object, the C code may call libc) and calls vpt_slots_c(desc, tpoff),
 * which maps the array and points the word to it. The caller pops the
 * argument.
 */
	.globl vpt_slots
	.type vpt_slots, @function
	.p2align 4
vpt_slots:
	.cfi_startproc
	pushfq
	.cfi_adjust_cfa_offset 8
	PUSH_CFI rax, rcx, rdx, rsi, rdi, r8  /* 0 r8 .. 40 rax, 48 flags, 56 ret, 64 tpoff */
	cld
	pushq %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -72
	movq %rsp, %rbp
	.cfi_def_cfa_register %rbp
	pushq %r9
	pushq %r10
	pushq %r11
	movq 64(%rbp), %rax             /* return address -> nopl desc(%rip) */
	movslq 3(%rax), %rdi
	leaq 7(%rax,%rdi), %rdi         /* the descriptor */
	movq 72(%rbp), %rsi             /* the word's offset */
	XSAVE_CALL vpt_slots_c
	leaq -24(%rbp), %rsp
	popq %r11
	popq %r10
	popq %r9
	popq %rbp
	.cfi_def_cfa %rsp, 64
	.cfi_restore %rbp
	POP_CFI r8, rdi, rsi, rdx, rcx, rax
	popfq
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size vpt_slots, .-vpt_slots

/*
 * vpt_blocks_thread: the calling thread's first call for a blockcount
 * object (its TLS word 0 is 0; ABI.md "blockcount"), the return address
 * pointing at nopl desc(%rip) (the object's struct vpt_blocks); the red
 * zone was stepped over, the stack alignment is unknown. Saves everything
 * like vpt_slots (once per thread and object: the C code may call libc)
 * and calls vpt_blocks_thread_c(desc), which registers the thread's
 * counters and sets word 0.
 */
	.globl vpt_blocks_thread
	.type vpt_blocks_thread, @function
	.p2align 4
vpt_blocks_thread:
	.cfi_startproc
	pushfq
	.cfi_adjust_cfa_offset 8
	PUSH_CFI rax, rcx, rdx, rsi, rdi, r8  /* 0 r8 .. 40 rax, 48 flags, 56 ret */
	cld
	pushq %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -72
	movq %rsp, %rbp
	.cfi_def_cfa_register %rbp
	pushq %r9
	pushq %r10
	pushq %r11
	movq 64(%rbp), %rax             /* return address -> nopl desc(%rip) */
	movslq 3(%rax), %rdi
	leaq 7(%rax,%rdi), %rdi         /* the descriptor */
	XSAVE_CALL vpt_blocks_thread_c
	leaq -24(%rbp), %rsp
	popq %r11
	popq %r10
	popq %r9
	popq %rbp
	.cfi_def_cfa %rsp, 64
	.cfi_restore %rbp
	POP_CFI r8, rdi, rsi, rdx, rcx, rax
	popfq
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size vpt_blocks_thread, .-vpt_blocks_thread

/*
 * vpt_xsave_init: computes vpt_xsave_mask (XCR0 & x87|SSE|AVX|opmask|
 * ZMM_Hi256|Hi16_ZMM: everything C code may touch; AMX tiles, PKRU, CET are
 * left alone) and vpt_xsave_size (end of the highest component in the
 * standard format), returns the size in eax. Clobbers flags only.
 * Without OS-enabled XSAVE: mask 0, fxsave (512 bytes).
 */
	.hidden vpt_xsave_init
	.type vpt_xsave_init, @function
	.p2align 4
vpt_xsave_init:
	.cfi_startproc
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	movl $1, %eax
	cpuid
	btl $27, %ecx                   /* OSXSAVE */
	jnc .Lfx
	xorl %ecx, %ecx
	xgetbv
	andl $0xe7, %eax
	movl %eax, %esi                 /* mask */
	movl $576, %edi                 /* legacy area + header */
	movl $2, %ecx
.Lcomp:
	btl %ecx, %esi
	jnc .Lnext
	pushq %rcx
	movl $0xd, %eax
	cpuid                           /* eax: size, ebx: offset of component ecx */
	addl %ebx, %eax
	cmpl %edi, %eax
	cmoval %eax, %edi
	popq %rcx
.Lnext:
	incl %ecx
	cmpl $8, %ecx
	jb .Lcomp
	movl %esi, vpt_xsave_mask(%rip)
	movl %edi, %eax
	jmp .Ldone
.Lfx:
	movl $0, vpt_xsave_mask(%rip)
	movl $512, %eax
.Ldone:
	movl %eax, vpt_xsave_size(%rip)
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbx
	ret
	.cfi_endproc
	.size vpt_xsave_init, .-vpt_xsave_init

	.data
	.p2align 2
	.hidden vpt_xsave_size
	.globl vpt_xsave_size
vpt_xsave_size:	.long 0
	.hidden vpt_xsave_mask
	.globl vpt_xsave_mask
vpt_xsave_mask:	.long 0

	.section .note.GNU-stack,"",@progbits

/*
 * regs.S: vt_regtest_<reg>(in, out) loads every general register, RFLAGS
 * (arithmetic flags and DF), ymm0-15, MXCSR, the x87 control word and an x87
 * stack value from *in, calls vpt_slow_<reg> exactly as instrumented code
 * does (site 7 of sites.S), and stores all of it to *out for vt.c to
 * compare. vt_regtest_rep, _range, _crange and _vec<k> call vpt_rep
 * (site 9), vpt_range (sites 14 and 18, the addresses from
 * vt_rfirst/vt_rlast) and vpt_vec (site k, the base from vt_vbase)
 * instead. Needs AVX.
 *
 * struct regstate (vt.c): gpr[16] (x86 encoding order, [4] = rsp unused) at
 * 0, flags at 128, ymm[16][32] at 136, mxcsr at 648, fcw at 652, st0[10] at
 * 656; 672 bytes.
 */
#define FLAGS 128
#define YMM 136
#define MXCSR 648
#define FCW 652
#define ST0 656

	.section .tbss,"awT",@nobits
	.p2align 3
vt_regout:
	.zero 8

	.text
	.macro REGTEST reg, how=slow, k=7
	.globl vt_regtest_\reg
	.type vt_regtest_\reg, @function
	.p2align 4
vt_regtest_\reg:
	pushq %rbx
	pushq %rbp
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsi, %fs:vt_regout@tpoff
	movq %rdi, %rax
	vmovdqu YMM+0*32(%rax), %ymm0
	vmovdqu YMM+1*32(%rax), %ymm1
	vmovdqu YMM+2*32(%rax), %ymm2
	vmovdqu YMM+3*32(%rax), %ymm3
	vmovdqu YMM+4*32(%rax), %ymm4
	vmovdqu YMM+5*32(%rax), %ymm5
	vmovdqu YMM+6*32(%rax), %ymm6
	vmovdqu YMM+7*32(%rax), %ymm7
	vmovdqu YMM+8*32(%rax), %ymm8
	vmovdqu YMM+9*32(%rax), %ymm9
	vmovdqu YMM+10*32(%rax), %ymm10
	vmovdqu YMM+11*32(%rax), %ymm11
	vmovdqu YMM+12*32(%rax), %ymm12
	vmovdqu YMM+13*32(%rax), %ymm13
	vmovdqu YMM+14*32(%rax), %ymm14
	vmovdqu YMM+15*32(%rax), %ymm15
	ldmxcsr MXCSR(%rax)
	fldcw FCW(%rax)
	fldt ST0(%rax)
	pushq FLAGS(%rax)
	movq 8*1(%rax), %rcx
	movq 8*2(%rax), %rdx
	movq 8*3(%rax), %rbx
	movq 8*5(%rax), %rbp
	movq 8*6(%rax), %rsi
	movq 8*7(%rax), %rdi
	movq 8*8(%rax), %r8
	movq 8*9(%rax), %r9
	movq 8*10(%rax), %r10
	movq 8*11(%rax), %r11
	movq 8*12(%rax), %r12
	movq 8*13(%rax), %r13
	movq 8*14(%rax), %r14
	movq 8*15(%rax), %r15
	movq 8*0(%rax), %rax
	popfq
	leaq -128(%rsp), %rsp
	.ifc \how,rep
	call vpt_rep
	nopl vt_sites+32*9(%rip)	/* rep source, from rsi */
	.endif
	.ifc \how,range
	pushq %fs:vt_rfirst@tpoff
	pushq %fs:vt_rlast@tpoff
	call vpt_range
	nopl vt_sites+32*\k(%rip)	/* a sweep's range */
	leaq 16(%rsp), %rsp
	.endif
	.ifc \how,vec
	pushq %fs:vt_vbase@tpoff
	call vpt_vec
	nopl vt_sites+32*\k(%rip)	/* a vector access */
	leaq 8(%rsp), %rsp
	.endif
	.ifc \how,slow
	call vpt_slow_\reg
	nopl vt_sites+32*\k(%rip)
	.endif
	leaq 128(%rsp), %rsp
	pushfq
	pushq %rax
	movq %fs:vt_regout@tpoff, %rax
	jmp vt_regtest_tail
	.size vt_regtest_\reg, .-vt_regtest_\reg
	.endm

	REGTEST rax
	REGTEST rcx
	REGTEST rdx
	REGTEST rbx
	REGTEST rbp
	REGTEST rsi
	REGTEST rdi
	REGTEST r8
	REGTEST r9
	REGTEST r10
	REGTEST r11
	REGTEST r12
	REGTEST r13
	REGTEST r14
	REGTEST r15
	REGTEST rep, rep
	REGTEST range, range, 14
	REGTEST crange, range, 18
	REGTEST vec22, vec, 22
	REGTEST vec23, vec, 23
	REGTEST vec24, vec, 24

vt_regtest_tail:
	movq %rcx, 8*1(%rax)
	movq %rdx, 8*2(%rax)
	movq %rbx, 8*3(%rax)
	movq %rbp, 8*5(%rax)
	movq %rsi, 8*6(%rax)
	movq %rdi, 8*7(%rax)
	movq %r8, 8*8(%rax)
	movq %r9, 8*9(%rax)
	movq %r10, 8*10(%rax)
	movq %r11, 8*11(%rax)
	movq %r12, 8*12(%rax)
	movq %r13, 8*13(%rax)
	movq %r14, 8*14(%rax)
	movq %r15, 8*15(%rax)
	popq %rbx
	movq %rbx, 8*0(%rax)
	popq %rbx
	movq %rbx, FLAGS(%rax)
	cld
	vmovdqu %ymm0, YMM+0*32(%rax)
	vmovdqu %ymm1, YMM+1*32(%rax)
	vmovdqu %ymm2, YMM+2*32(%rax)
	vmovdqu %ymm3, YMM+3*32(%rax)
	vmovdqu %ymm4, YMM+4*32(%rax)
	vmovdqu %ymm5, YMM+5*32(%rax)
	vmovdqu %ymm6, YMM+6*32(%rax)
	vmovdqu %ymm7, YMM+7*32(%rax)
	vmovdqu %ymm8, YMM+8*32(%rax)
	vmovdqu %ymm9, YMM+9*32(%rax)
	vmovdqu %ymm10, YMM+10*32(%rax)
	vmovdqu %ymm11, YMM+11*32(%rax)
	vmovdqu %ymm12, YMM+12*32(%rax)
	vmovdqu %ymm13, YMM+13*32(%rax)
	vmovdqu %ymm14, YMM+14*32(%rax)
	vmovdqu %ymm15, YMM+15*32(%rax)
	stmxcsr MXCSR(%rax)
	fnstcw FCW(%rax)
	fstpt ST0(%rax)
	subq $8, %rsp
	movl $0x1f80, (%rsp)
	ldmxcsr (%rsp)
	movw $0x037f, (%rsp)
	fldcw (%rsp)
	addq $8, %rsp
	vzeroupper
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbp
	popq %rbx
	ret

	.section .note.GNU-stack,"",@progbits

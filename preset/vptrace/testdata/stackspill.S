/*
 * stackspill.S: a register-starved loop that keeps variables in stack
 * slots, as compilers do when they run out of registers (spill.go: loops
 * with stack operands). ss_walk(tab, mask, n) chains n look-ups through
 * tab (two a step, each at an index the data chose), with every register
 * but rbp and r12-r15 live throughout the loop, and those five live
 * across it (constants the result adds) and never referenced in it: the
 * loop's sites have no dead register, and a spill around the loop lowers
 * rsp under operands of every form: -0x10 and -0x20 in one-byte fields
 * the shift does not fit (the second with an immediate after it), -0x78
 * in one it fits, (%rsp) without a field, and a cmp and an xor. The loop
 * also reads the constant at (%rsp) (7), below which the red zone lies.
 * stackspill_main.c computes the same in C (ss_ref).
 */
	.text
	.globl ss_walk
	.type ss_walk, @function
ss_walk:
	pushq %rbx
	pushq %rbp
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	subq $16, %rsp
	movq $7, (%rsp)
	movl $0x1111, %ebp
	movl $0x2222, %r12d
	movl $0x3333, %r13d
	movl $0x4444, %r14d
	movl $0x5555, %r15d
	movq %rdx, -0x18(%rsp)          /* n */
	movq $0, -0x10(%rsp)            /* acc0 */
	movq $0, -0x78(%rsp)            /* acc1 */
	movq $0, -0x20(%rsp)            /* count */
	xorl %eax, %eax                 /* the index */
	xorl %ecx, %ecx                 /* i */
	xorl %edx, %edx
	xorl %ebx, %ebx
	xorl %r8d, %r8d
	xorl %r9d, %r9d
	xorl %r10d, %r10d
	xorl %r11d, %r11d
	cmpq $0, -0x18(%rsp)
	jle 2f
1:	addq (%rdi,%rax,8), %rdx        /* tab[idx] */
	leaq 1(%rax,%rdx), %rax
	andq %rsi, %rax
	addq (%rdi,%rax,8), %rbx        /* tab[idx] */
	addq %rbx, %r8
	xorq %r8, %r9
	addq %r9, %r10
	addq (%rsp), %r11               /* 7 */
	xorq %r10, %r11
	addq %r11, -0x10(%rsp)
	xorq %rdx, -0x78(%rsp)
	addq $3, -0x20(%rsp)
	incq %rcx
	cmpq -0x18(%rsp), %rcx
	jb 1b
2:	movq -0x10(%rsp), %rax
	addq -0x78(%rsp), %rax
	addq -0x20(%rsp), %rax
	addq %rdx, %rax
	addq %rbx, %rax
	addq %r8, %rax
	addq %r9, %rax
	addq %r10, %rax
	addq %r11, %rax
	addq %rbp, %rax
	addq %r12, %rax
	addq %r13, %rax
	addq %r14, %rax
	addq %r15, %rax
	addq $16, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbp
	popq %rbx
	ret
	.size ss_walk, .-ss_walk

/*
 * ss_hist(p, n): counts the bytes p[0..n) by their low 3 bits in eight
 * counters in the red zone, indexed by the data, and returns the sum of
 * the counts' squares. With usestack the counters' increment is a site
 * whose address is rsp-based and not a sweep: its code computes from rsp,
 * so the loop must not be spilled around (its initial-exec slot base
 * would otherwise be hoisted into a saved register).
 */
	.text
	.globl ss_hist
	.type ss_hist, @function
ss_hist:
	movq $0, -0x40(%rsp)
	movq $0, -0x38(%rsp)
	movq $0, -0x30(%rsp)
	movq $0, -0x28(%rsp)
	movq $0, -0x20(%rsp)
	movq $0, -0x18(%rsp)
	movq $0, -0x10(%rsp)
	movq $0, -0x08(%rsp)
	xorl %ecx, %ecx
	testq %rsi, %rsi
	jle 2f
1:	movzbl (%rdi,%rcx), %eax
	andl $7, %eax
	incq -0x40(%rsp,%rax,8)
	incq %rcx
	cmpq %rsi, %rcx
	jb 1b
2:	xorl %eax, %eax
	xorl %ecx, %ecx
3:	movq -0x40(%rsp,%rcx,8), %rdx
	imulq %rdx, %rdx
	addq %rdx, %rax
	incq %rcx
	cmpq $8, %rcx
	jne 3b
	ret
	.size ss_hist, .-ss_hist
	.section .note.GNU-stack,"",@progbits

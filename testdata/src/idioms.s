# idioms.s: hand-written assembly idioms hijack must move correctly:
# short branches that stop reaching once code grows, loop/jrcxz (no rel32
# form), a branch that skips a lock prefix (glibc), data inside a code
# section (STT_OBJECT), RIP-relative references to it and to a VEX
# operand, a local function called without relocation, and a function
# that falls through into the next.
	.text
	.globl	sum_loop
	.type	sum_loop, @function
# long sum_loop(long n): sum of 1..n using the loop instruction.
# The loop body is long enough that, once padded, neither jrcxz nor loop
# reaches: both must be expanded.
sum_loop:
	xorl	%eax, %eax
	movq	%rdi, %rcx
	jrcxz	2f
1:	addq	%rcx, %rax
	.rept	12
	leaq	1(%rdx), %rdx
	.endr
	loop	1b
2:	ret
	.size	sum_loop, .-sum_loop

	.globl	count_locked
	.type	count_locked, @function
# long count_locked(long *p, int single): add 1 to *p, skipping the lock
# prefix when single is non-zero.
count_locked:
	movl	$1, %eax
	testl	%esi, %esi
	jne	1f
	lock
1:	xaddq	%rax, (%rdi)
	addq	$1, %rax
	ret
	.size	count_locked, .-count_locked

	.globl	table_lookup
	.type	table_lookup, @function
# long table_lookup(long i): constants[i & 7] + helper(i), with a VEX load.
table_lookup:
	andq	$7, %rdi
	leaq	constants(%rip), %rax
	movq	(%rax,%rdi,8), %rax
	vmovdqu	constants(%rip), %xmm0
	vmovq	%xmm0, %rdx
	addq	%rdx, %rax
	pushq	%rax
	call	helper
	popq	%rdx
	addq	%rdx, %rax
	ret
	.size	table_lookup, .-table_lookup

	.type	helper, @function
helper:
	leaq	(%rdi,%rdi,2), %rax
	cmpq	$100, %rax
	jl	1f
	.rept	30
	addq	$1, %rax
	.endr
1:	ret
	.size	helper, .-helper

	.p2align 4
	.type	constants, @object
constants:
	.quad	11, 22, 33, 44, 55, 66, 77, 88
	.size	constants, .-constants

	.globl	far_branches
	.type	far_branches, @function
# long far_branches(long x): short branches over 100 bytes of code.
far_branches:
	movq	%rdi, %rax
	testq	%rdi, %rdi
	je	3f
	.rept	25
	addq	$3, %rax
	.endr
	cmpq	$50, %rax
	jg	4f
3:	subq	$7, %rax
4:	ret
	.size	far_branches, .-far_branches

	.globl	fall_into
	.type	fall_into, @function
# long fall_into(long x): x+12 (x > 0: 2 more): past its last
# instruction it runs on into add_ten, which adds 10. Code placed after a
# function must not be in the way of one that falls through.
fall_into:
	leaq	1(%rdi), %rax
	testq	%rdi, %rdi
	jle	1f
	addq	$2, %rax
1:	incq	%rax
	.size	fall_into, .-fall_into

	.globl	add_ten
	.type	add_ten, @function
# add_ten: rax += 10 (reached only from fall_into).
add_ten:
	addq	$10, %rax
	ret
	.size	add_ten, .-add_ten
	.section	.note.GNU-stack,"",@progbits

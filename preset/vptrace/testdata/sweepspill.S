# sweepspill.S: a sweep (a loop whose accesses the preset records as one
# range at its exit) indexed by a register that the register-starved code
# after it does not reference: the registers saved around that code
# (spill.go, region.go) include it. The sweep's exit code must compute its
# range from the program's value, not from what the saved register holds
# for the region (the slot base or the cache's address).
#
#   long sw_fill(long *tab, const long *a, const long *b)
#
# writes tab[0..127] (1 KiB), then, with every general-purpose register
# live, reads a[0], a[1], b[0], b[1], and returns a sum of all of them and
# of tab[0].
	.text
	.globl	sw_fill
	.type	sw_fill, @function
sw_fill:
	push	%rbx
	push	%rbp
	push	%r12
	push	%r13
	push	%r14
	push	%r15
	mov	%rdi, %r14
	mov	$1, %ebx
	mov	$2, %ebp
	mov	$3, %r12d
	mov	$4, %r13d
	mov	$5, %r15d
	mov	$6, %ecx
	mov	$7, %r8d
	mov	$8, %r9d
	mov	$9, %r10d
	mov	$10, %r11d
	mov	$11, %edi
	xor	%eax, %eax
1:	mov	%rax, (%rax,%r14,1)
	add	$8, %rax
	cmp	$0x400, %rax
	jne	1b
	# every register live here (r14 too, read at the end)
	add	(%rsi), %rbx
	add	8(%rsi), %rbp
	add	(%rdx), %r12
	add	8(%rdx), %r13
	jmp	2f
2:	add	%rbx, %rax
	add	%rbp, %rax
	add	%r12, %rax
	add	%r13, %rax
	add	%r15, %rax
	add	%rcx, %rax
	add	%r8, %rax
	add	%r9, %rax
	add	%r10, %rax
	add	%r11, %rax
	add	%rdi, %rax
	add	%rsi, %rax
	add	%rdx, %rax
	add	8(%r14), %rax
	pop	%r15
	pop	%r14
	pop	%r13
	pop	%r12
	pop	%rbp
	pop	%rbx
	ret
	.size	sw_fill, .-sw_fill
	.section	.note.GNU-stack,"",@progbits

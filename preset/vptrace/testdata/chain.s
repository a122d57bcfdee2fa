# chain: a block whose sites' code does not run in the sites' order (the
# base chains of basechain.go): the red-zone store is placed before the
# compare, where the flags are dead, so its code runs between the first
# load's and the second's, though it comes after both.
	.text
	.globl	chain
	.type	chain, @function
chain:				# long chain(long *p, long **q)
	movq	(%rdi), %rax	# a site: its code first
	cmpq	%rax, %rsi	# the flags are live from here to the cmov
	movq	%rsi, %r10	# (its base written after the compare: the next
	movq	(%r10), %r8	#  site's code stays here, flags saved)
	movq	%r8, -8(%rsp)	# a red-zone store: placed before the compare
	movq	-8(%rsp), %rdx
	cmovne	%rdx, %rax
	ret
	.size	chain, .-chain
	.section	.note.GNU-stack,"",@progbits

# An indirect jump cfg cannot resolve is a tail call only if it cannot
# land in the middle of other code (cfg/jumptable_test.go
# TestStrayLabels). parent's .cold part, as gcc splits it off, comes back
# into the middle of parent by a direct jump: no value holds that
# address, so virtual_tail's jump is a tail call. Assembled with
# --defsym TAKEN=1, data holds the address too, and the jump may land
# there: unknown, everything live.

	.text
	.globl	parent
	.type	parent, @function
parent:
	testl	%edi, %edi
	jne	parent.cold
.Lback:
	movl	$1, %eax
	ret
	.size	parent, .-parent

	.section .text.unlikely,"ax",@progbits
	.type	parent.cold, @function
parent.cold:
	movl	$2, %edi
	jmp	.Lback
	.size	parent.cold, .-parent.cold

	.text
	.globl	virtual_tail
	.type	virtual_tail, @function
virtual_tail:
	movq	(%rdi), %rax
	jmp	*16(%rax)
	.size	virtual_tail, .-virtual_tail

.ifdef TAKEN
	.data
	.globl	taken
taken:
	.quad	.Lback
.endif

	.section .note.GNU-stack,"",@progbits

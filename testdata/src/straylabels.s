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

# With --defsym COLD=1, a jump table holds the address of a .cold
# part's entry (gcc moved a case there): not a function entry that
# follows the ABI, code that may use any register (r11 here). cold_case's
# jump is unknown, everything live, and so is virtual_tail's, which may
# land there too.
.ifdef COLD
	.text
	.globl	cold_case
	.type	cold_case, @function
cold_case:
	movl	$57, %r11d
	cmpl	$2, %edi
	ja	.Lck_def
	movl	%edi, %edi
	leaq	.Lck_tab(%rip), %rdx
	movslq	(%rdx,%rdi,4), %rax
	addq	%rdx, %rax
	jmp	*%rax
.Lck_0:	movl	$56, %eax
	ret
.Lck_def:
	movl	$-1, %eax
	ret
	.size	cold_case, .-cold_case

	.section .text.unlikely,"ax",@progbits
	.type	cold_case.cold, @function
cold_case.cold:
	movl	%r11d, %eax
	ret
	.size	cold_case.cold, .-cold_case.cold

	.section .rodata
	.align	4
.Lck_tab:
	.long	.Lck_0-.Lck_tab, cold_case.cold-.Lck_tab, .Lck_def-.Lck_tab
.endif

	.section .note.GNU-stack,"",@progbits

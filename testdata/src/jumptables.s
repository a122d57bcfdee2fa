# Jump-table forms and their counterfeits, for cfg's table-driven tests
# (cfg/jumptable_test.go TestJumpTableAsm). The first functions are table
# dispatches cfg must prove (the comment says how many entries); the others
# are not provable and must stay unresolved, as tail calls or unknown.

	.text

# clang's table of 255 of the 256 values of a byte: the one value left
# out is tested with je, which bounds the index only because it is the
# largest a byte holds. 255 entries.
	.globl	je_255
	.type	je_255, @function
je_255:
	cmpb	$0xff, %dil
	je	.Lje_def
	movzbl	%dil, %eax
	leaq	.Lje_tab(%rip), %rcx
	movslq	(%rcx,%rax,4), %rax
	addq	%rcx, %rax
	jmp	*%rax
.Lje_0:	movl	$1, %eax
	ret
.Lje_1:	movl	$2, %eax
	ret
.Lje_def:
	xorl	%eax, %eax
	ret
	.size	je_255, .-je_255

# -O0: the index kept in a stack slot, checked there, loaded again and
# copied. 4 entries.
	.globl	stack_slot
	.type	stack_slot, @function
stack_slot:
	pushq	%rbp
	movq	%rsp, %rbp
	movl	%edi, -4(%rbp)
	cmpl	$3, -4(%rbp)
	ja	.Lss_def
	movl	-4(%rbp), %eax
	movl	%eax, %edx
	leaq	.Lss_tab(%rip), %rsi
	movslq	(%rsi,%rdx,4), %rax
	addq	%rsi, %rax
	jmp	*%rax
.Lss_0:	movl	$10, %eax
	popq	%rbp
	ret
.Lss_1:	movl	$11, %eax
	popq	%rbp
	ret
.Lss_def:
	movl	$-1, %eax
	popq	%rbp
	ret
	.size	stack_slot, .-stack_slot

# The index copied before it is checked: the check is on the original,
# the table read with the copy. 6 entries.
	.globl	check_before_copy
	.type	check_before_copy, @function
check_before_copy:
	movl	%edi, %ecx
	cmpl	$5, %edi
	ja	.Lcc_def
	leaq	.Lcc_tab(%rip), %rsi
	movslq	(%rsi,%rcx,4), %rax
	addq	%rsi, %rax
	jmp	*%rax
.Lcc_0:	movl	$20, %eax
	ret
.Lcc_1:	movl	$21, %eax
	ret
.Lcc_def:
	movl	$-1, %eax
	ret
	.size	check_before_copy, .-check_before_copy

# Absolute entries (R_X86_64_64) read through a base register. 3 entries.
	.globl	abs_base
	.type	abs_base, @function
abs_base:
	leaq	.Lab_tab(%rip), %rax
	cmpl	$2, %edi
	ja	.Lab_def
	movl	%edi, %edi
	jmp	*(%rax,%rdi,8)
.Lab_0:	movl	$30, %eax
	ret
.Lab_1:	movl	$31, %eax
	ret
.Lab_def:
	movl	$-1, %eax
	ret
	.size	abs_base, .-abs_base

# Absolute entries read through the displacement (code that is not
# position-independent): jmp *T(,%idx,8). 5 entries.
	.globl	abs_disp
	.type	abs_disp, @function
abs_disp:
	cmpq	$4, %rdi
	ja	.Lad_def
	jmp	*.Lad_tab(,%rdi,8)
.Lad_0:	movl	$40, %eax
	ret
.Lad_1:	movl	$41, %eax
	ret
.Lad_def:
	movl	$-1, %eax
	ret
	.size	abs_disp, .-abs_disp

# The table address loaded again on another path into the same register
# (gcc reloads pcre2's find_minlength's first table into r11 in eleven
# places): every definition reaching the dispatch is the same address.
# 4 entries.
	.globl	base_twice
	.type	base_twice, @function
base_twice:
	testl	%esi, %esi
	je	1f
	leaq	.Lbt_tab(%rip), %rdx
	addl	$1, %esi
	jmp	2f
1:	leaq	.Lbt_tab(%rip), %rdx
2:	cmpl	$3, %edi
	ja	.Lbt_def
	movl	%edi, %edi
	movslq	(%rdx,%rdi,4), %rax
	addq	%rdx, %rax
	jmp	*%rax
.Lbt_0:	movl	$45, %eax
	ret
.Lbt_1:	movl	%esi, %eax
	ret
.Lbt_def:
	movl	$-1, %eax
	ret
	.size	base_twice, .-base_twice

# The table base kept in a caller-saved register across a call to a
# function of the object that leaves it alone (gcc's -fipa-ra does
# this). 4 entries.
	.type	leaves_rdx, @function
leaves_rdx:
	leal	1(%rdi), %eax
	ret
	.size	leaves_rdx, .-leaves_rdx

	.globl	base_across_call
	.type	base_across_call, @function
base_across_call:
	pushq	%rbx
	movl	%edi, %ebx
	leaq	.Lbk_tab(%rip), %rdx
	call	leaves_rdx
	cmpl	$3, %ebx
	ja	.Lbk_def
	movl	%ebx, %ebx
	movslq	(%rdx,%rbx,4), %rax
	addq	%rdx, %rax
	popq	%rbx
	jmp	*%rax
.Lbk_0:	movl	$46, %eax
	ret
.Lbk_1:	movl	$47, %eax
	ret
.Lbk_def:
	movl	$-1, %eax
	popq	%rbx
	ret
	.size	base_across_call, .-base_across_call

# The range check jumps over a return to the dispatch, whose label gcc
# aligns: the nops before it fall into it but nothing enters them
# (zstd's HUF_decompress1X2_usingDTable_internal). 8 entries.
	.globl	padded_label
	.type	padded_label, @function
padded_label:
	cmpq	$7, %rdi
	jbe	1f
	movl	$-1, %eax
	ret
	.p2align 4
1:	leaq	.Lpl_tab(%rip), %rdx
	movslq	(%rdx,%rdi,4), %rax
	addq	%rdx, %rax
	jmp	*%rax
.Lpl_0:	movl	$52, %eax
	ret
.Lpl_1:	movl	$53, %eax
	ret
	.size	padded_label, .-padded_label

# The same across a call to a function of the object that dispatches
# through a table of its own (it stays in the callee) and leaves rdx
# alone (pcre2's compile_recurse and get_class_iterator_size). 4 entries.
	.type	dispatching_callee, @function
dispatching_callee:
	cmpl	$1, %edi
	ja	.Ldc_def
	movl	%edi, %eax
	leaq	.Ldc_tab(%rip), %rcx
	movslq	(%rcx,%rax,4), %rax
	addq	%rcx, %rax
	jmp	*%rax
.Ldc_0:	movl	$1, %eax
	ret
.Ldc_def:
	xorl	%eax, %eax
	ret
	.size	dispatching_callee, .-dispatching_callee

	.globl	base_across_dispatch
	.type	base_across_dispatch, @function
base_across_dispatch:
	pushq	%rbx
	movl	%edi, %ebx
	leaq	.Lbd_tab(%rip), %rdx
	call	dispatching_callee
	cmpl	$3, %ebx
	ja	.Lbd_def
	movl	%ebx, %ebx
	movslq	(%rdx,%rbx,4), %rax
	addq	%rdx, %rax
	popq	%rbx
	jmp	*%rax
.Lbd_0:	movl	$54, %eax
	ret
.Lbd_def:
	movl	$-1, %eax
	popq	%rbx
	ret
	.size	base_across_dispatch, .-base_across_dispatch

# The check before a shift of a 32-bit copy: x <= 23 so x >> 3 <= 2.
# 3 entries.
	.globl	shift_check
	.type	shift_check, @function
shift_check:
	cmpl	$23, %edi
	ja	.Lsc_def
	movl	%edi, %eax
	shrl	$3, %eax
	leaq	.Lsc_tab(%rip), %rdx
	movslq	(%rdx,%rax,4), %rax
	addq	%rdx, %rax
	jmp	*%rax
.Lsc_0:	movl	$58, %eax
	ret
.Lsc_def:
	movl	$-1, %eax
	ret
	.size	shift_check, .-shift_check

# A shift of the low byte of a register whose upper bits are not known:
# the byte is checked, the shifted byte read as a 32-bit index.
	.globl	shift_byte_wide
	.type	shift_byte_wide, @function
shift_byte_wide:
	cmpb	$23, %dil
	ja	.Lsw_def
	shrb	$3, %dil
	movl	%edi, %eax
	leaq	.Lsw_tab(%rip), %rdx
	movslq	(%rdx,%rax,4), %rax
	addq	%rdx, %rax
	jmp	*%rax
.Lsw_0:	movl	$59, %eax
	ret
.Lsw_def:
	movl	$-1, %eax
	ret
	.size	shift_byte_wide, .-shift_byte_wide

# A mask instead of a range check. 8 entries.
	.globl	and_mask
	.type	and_mask, @function
and_mask:
	andl	$7, %edi
	leaq	.Lam_tab(%rip), %rdx
	movslq	(%rdx,%rdi,4), %rax
	addq	%rdx, %rax
	jmp	*%rax
.Lam_0:	movl	$50, %eax
	ret
.Lam_1:	movl	$51, %eax
	ret
	.size	and_mask, .-and_mask

# --- not provable ---

# No range check: the index may be anything.
	.globl	no_check
	.type	no_check, @function
no_check:
	leaq	.Lnc_tab(%rip), %rdx
	movslq	(%rdx,%rdi,4), %rax
	addq	%rdx, %rax
	jmp	*%rax
.Lnc_0:	movl	$60, %eax
	ret
.Lnc_1:	movl	$61, %eax
	ret
	.size	no_check, .-no_check

# The base is loaded from memory, not a table address.
	.globl	base_loaded
	.type	base_loaded, @function
base_loaded:
	movq	.Lbl_ptr(%rip), %rdx
	cmpl	$3, %edi
	ja	.Lbl_def
	movslq	(%rdx,%rdi,4), %rax
	addq	%rdx, %rax
	jmp	*%rax
.Lbl_0:	movl	$70, %eax
	ret
.Lbl_def:
	movl	$-1, %eax
	ret
	.size	base_loaded, .-base_loaded

# The base is redefined on one path: two tables reach the dispatch.
	.globl	base_redefined
	.type	base_redefined, @function
base_redefined:
	leaq	.Lbr_tab1(%rip), %rdx
	testl	%esi, %esi
	je	1f
	leaq	.Lbr_tab2(%rip), %rdx
1:	cmpl	$3, %edi
	ja	.Lbr_def
	movl	%edi, %edi
	movslq	(%rdx,%rdi,4), %rax
	addq	%rdx, %rax
	jmp	*%rax
.Lbr_0:	movl	$80, %eax
	ret
.Lbr_1:	movl	$81, %eax
	ret
.Lbr_def:
	movl	$-1, %eax
	ret
	.size	base_redefined, .-base_redefined

# The range check is on one path only.
	.globl	check_one_path
	.type	check_one_path, @function
check_one_path:
	testl	%esi, %esi
	je	1f
	cmpl	$3, %edi
	ja	.Lcp_def
1:	movl	%edi, %edi
	leaq	.Lcp_tab(%rip), %rdx
	movslq	(%rdx,%rdi,4), %rax
	addq	%rdx, %rax
	jmp	*%rax
.Lcp_0:	movl	$90, %eax
	ret
.Lcp_def:
	movl	$-1, %eax
	ret
	.size	check_one_path, .-check_one_path

# The base register written by the function called between its lea and
# the dispatch (a function of the object: no ABI to trust, what it writes
# is what counts).
	.type	writes_rdx, @function
writes_rdx:
	leaq	.Lbl_data(%rip), %rdx
	ret
	.size	writes_rdx, .-writes_rdx

	.globl	base_clobbered_by_call
	.type	base_clobbered_by_call, @function
base_clobbered_by_call:
	pushq	%rbx
	movl	%edi, %ebx
	leaq	.Lbw_tab(%rip), %rdx
	call	writes_rdx
	cmpl	$3, %ebx
	ja	.Lbw_def
	movl	%ebx, %ebx
	movslq	(%rdx,%rbx,4), %rax
	addq	%rdx, %rax
	popq	%rbx
	jmp	*%rax
.Lbw_0:	movl	$48, %eax
	ret
.Lbw_def:
	movl	$-1, %eax
	popq	%rbx
	ret
	.size	base_clobbered_by_call, .-base_clobbered_by_call

# The index changes after its check.
	.globl	check_then_add
	.type	check_then_add, @function
check_then_add:
	cmpl	$3, %edi
	ja	.Lca_def
	addl	%esi, %edi
	leaq	.Lca_tab(%rip), %rdx
	movslq	(%rdx,%rdi,4), %rax
	addq	%rdx, %rax
	jmp	*%rax
.Lca_0:	movl	$100, %eax
	ret
.Lca_def:
	movl	$-1, %eax
	ret
	.size	check_then_add, .-check_then_add

# A tail call through a bounded table of function pointers: its entries
# lead out of the function. The arguments are live into it.
	.globl	tail_table
	.type	tail_table, @function
tail_table:
	cmpl	$1, %edi
	ja	.Ltt_def
	movl	%edi, %eax
	leaq	.Ltt_tab(%rip), %r8
	movl	%edx, %edi
	jmp	*(%r8,%rax,8)
.Ltt_def:
	movl	$-1, %eax
	ret
	.size	tail_table, .-tail_table

# An indirect jump with a register pushed: not at the entry height, so
# not a tail call; anything may be live.
	.globl	pushed_jump
	.type	pushed_jump, @function
pushed_jump:
	pushq	%rbx
	movq	%rsi, %rbx
	jmp	*%rdi
	.size	pushed_jump, .-pushed_jump

	.section .rodata
	.align	4
.Lje_tab:
	.rept	127
	.long	.Lje_0-.Lje_tab
	.long	.Lje_1-.Lje_tab
	.endr
	.long	.Lje_0-.Lje_tab
	.align	4
.Lss_tab:
	.long	.Lss_0-.Lss_tab, .Lss_1-.Lss_tab, .Lss_0-.Lss_tab, .Lss_def-.Lss_tab
.Lcc_tab:
	.long	.Lcc_0-.Lcc_tab, .Lcc_1-.Lcc_tab, .Lcc_0-.Lcc_tab, .Lcc_1-.Lcc_tab, .Lcc_def-.Lcc_tab, .Lcc_0-.Lcc_tab
.Lbt_tab:
	.long	.Lbt_0-.Lbt_tab, .Lbt_1-.Lbt_tab, .Lbt_def-.Lbt_tab, .Lbt_1-.Lbt_tab
.Lbk_tab:
	.long	.Lbk_0-.Lbk_tab, .Lbk_1-.Lbk_tab, .Lbk_def-.Lbk_tab, .Lbk_1-.Lbk_tab
.Lbw_tab:
	.long	.Lbw_0-.Lbw_tab, .Lbw_def-.Lbw_tab, .Lbw_0-.Lbw_tab, .Lbw_def-.Lbw_tab
.Lpl_tab:
	.long	.Lpl_0-.Lpl_tab, .Lpl_1-.Lpl_tab, .Lpl_0-.Lpl_tab, .Lpl_1-.Lpl_tab
	.long	.Lpl_0-.Lpl_tab, .Lpl_1-.Lpl_tab, .Lpl_1-.Lpl_tab, .Lpl_0-.Lpl_tab
.Ldc_tab:
	.long	.Ldc_0-.Ldc_tab, .Ldc_def-.Ldc_tab
.Lbd_tab:
	.long	.Lbd_0-.Lbd_tab, .Lbd_def-.Lbd_tab, .Lbd_0-.Lbd_tab, .Lbd_def-.Lbd_tab
.Lsc_tab:
	.long	.Lsc_0-.Lsc_tab, .Lsc_def-.Lsc_tab, .Lsc_0-.Lsc_tab
.Lsw_tab:
	.long	.Lsw_0-.Lsw_tab, .Lsw_def-.Lsw_tab, .Lsw_0-.Lsw_tab
.Lam_tab:
	.long	.Lam_0-.Lam_tab, .Lam_1-.Lam_tab, .Lam_0-.Lam_tab, .Lam_1-.Lam_tab
	.long	.Lam_0-.Lam_tab, .Lam_1-.Lam_tab, .Lam_1-.Lam_tab, .Lam_0-.Lam_tab
.Lnc_tab:
	.long	.Lnc_0-.Lnc_tab, .Lnc_1-.Lnc_tab
.Lbr_tab1:
	.long	.Lbr_0-.Lbr_tab1, .Lbr_1-.Lbr_tab1, .Lbr_0-.Lbr_tab1, .Lbr_def-.Lbr_tab1
.Lbr_tab2:
	.long	.Lbr_1-.Lbr_tab2, .Lbr_0-.Lbr_tab2, .Lbr_1-.Lbr_tab2, .Lbr_def-.Lbr_tab2
.Lbl_data:
	.long	0, 0, 0, 0
.Lcp_tab:
	.long	.Lcp_0-.Lcp_tab, .Lcp_def-.Lcp_tab, .Lcp_0-.Lcp_tab, .Lcp_def-.Lcp_tab
.Lca_tab:
	.long	.Lca_0-.Lca_tab, .Lca_def-.Lca_tab, .Lca_0-.Lca_tab, .Lca_def-.Lca_tab

	.section .data.rel.ro.local,"aw"
	.align	8
.Lab_tab:
	.quad	.Lab_0, .Lab_1, .Lab_def
.Lad_tab:
	.quad	.Lad_0, .Lad_1, .Lad_0, .Lad_1, .Lad_def
.Lbl_ptr:
	.quad	.Lbl_data
.Ltt_tab:
	.quad	ext_a, ext_b

	.section .note.GNU-stack,"",@progbits

/*
 * bclib.S: an object of the blockcount preset for a shared library
 * (libbc.so, which bc.c dlopens), written by hand as ABI.md "blockcount"
 * says: initial-exec TLS counters, and the descriptor's tpoff stored by
 * the constructor (an R_X86_64_TPOFF64 does not link into a shared
 * library). libwork(n): block 0 once, block 1 n times.
 */
	.section .tbss,"awT",@nobits
	.p2align 3
bcl_counters:
	.zero 8 * 3

	.section .blockcount,"aw",@progbits
	.p2align 3
bcl_desc:
	.long 0x43424a48
	.short 1, 0
	.long 2
	.long bcl_end - bcl_strs
	.quad 0                 /* stored by bcl_ctor */
	.long bcl_blocks - .
	.long bcl_strs - .
	.long 1
	.long 0
	.quad 0x1ab1ab
bcl_blocks:
	.long 9, 0x0, 0
	.short 0, 2
	.long 9, 0x20, 3000000
	.short 1, 3
bcl_strs:
	.asciz ""
	.asciz "libbc.o"         /* 1 */
	.asciz "libwork"         /* 9 */
bcl_end:

	.text
	.globl libwork
	.type libwork, @function
	.p2align 4
libwork:
	movq bcl_counters@gottpoff(%rip), %r11
	cmpq $0, %fs:(%r11)
	jne 1f
	leaq -128(%rsp), %rsp
	call *vpt_blocks_thread@GOTPCREL(%rip)
	nopl bcl_desc(%rip)
	leaq 128(%rsp), %rsp
1:	addq $1, %fs:8(%r11)
	testq %rdi, %rdi
	jz 3f
2:	addq $1, %fs:16(%r11)
	decq %rdi
	jnz 2b
3:	ret
	.size libwork, .-libwork

	.type bcl_ctor, @function
bcl_ctor:
	movq bcl_counters@gottpoff(%rip), %rax
	movq %rax, bcl_desc+16(%rip)
	leaq bcl_desc(%rip), %rdi
	jmp *vpt_blocks_register@GOTPCREL(%rip)
	.size bcl_ctor, .-bcl_ctor
	.type bcl_dtor, @function
bcl_dtor:
	leaq bcl_desc(%rip), %rdi
	jmp *vpt_blocks_unregister@GOTPCREL(%rip)
	.size bcl_dtor, .-bcl_dtor

	.section .init_array,"aw"
	.p2align 3
	.quad bcl_ctor
	.section .fini_array.00000,"aw"
	.p2align 3
	.quad bcl_dtor

	.section .note.GNU-stack,"",@progbits

/*
 * bc.S: two objects of the blockcount preset, written by hand as ABI.md
 * "blockcount" says (what preset/blockcount emits), for bc.c:
 *
 * object A (bc-a.o): its descriptor's tpoff is `.quad counters@tpoff`
 * (R_X86_64_TPOFF64: executables only), constructor and destructor in
 * .init_array and .fini_array.00000. work(n): block 0 once, block 1 n
 * times (a loop), block 2 once.
 *
 * object B (bc-b.o): tpoff 0 in the file, stored by bcb_ctor (which bc.c
 * calls from main, so that bwork runs before it: the runtime must not
 * register the thread then, and must count those runs once it does).
 * bwork(n): block 0 once, block 1 n times.
 *
 * bc_regcheck / bc_regcheck_odd (in, out): load every general register,
 * the arithmetic flags and DF, and xmm0-15 from *in, call
 * vpt_blocks_thread for object A as instrumented code does (with the
 * stack 16-byte aligned at the call, or 8 off), and store them to *out.
 * struct regs (bc.c): gpr[16] (x86 order, [4] rsp unused) at 0, flags at
 * 128, xmm[16][16] at 136.
 */
#define FLAGS 128
#define XMM 136

	.section .tbss,"awT",@nobits
	.p2align 3
bca_counters:
	.zero 8 * 4             /* word 0, blocks 0-2 */
bcb_counters:
	.zero 8 * 3             /* word 0, blocks 0-1 */
bc_regout:
	.zero 8

/* DESC name, counters, tpoff, nblocks: a struct vpt_blocks with its
 * blocks at name_blocks and strings at name_strs..name_end */
	.macro DESC name, tpoff, nblocks, id
	.p2align 3
\name\()_desc:
	.long 0x43424a48        /* "HJBC" */
	.short 1, 0             /* version, flags */
	.long \nblocks
	.long \name\()_end - \name\()_strs
	.quad \tpoff
	.long \name\()_blocks - .
	.long \name\()_strs - .
	.long 1                 /* the name: the first string */
	.long 0
	.quad \id
	.endm

	.section .blockcount,"aw",@progbits
	DESC bca, bca_counters@tpoff, 3, 0xa11a
bca_blocks:                     /* func, off, score, loop depth, insns */
	.long 8, 0x0, 0
	.short 0, 3
	.long 8, 0x12, 2500000
	.short 1, 2
	.long 8, 0x1c, 0
	.short 0, 2
bca_strs:
	.asciz ""
	.asciz "bc-a.o"          /* 1 */
	.asciz "work"            /* 8 */
bca_end:

	DESC bcb, 0, 2, 0xb11b
bcb_blocks:
	.long 8, 0x0, 1000000
	.short 0, 4
	.long 8, 0x9, 4000000
	.short 2, 1
bcb_strs:
	.asciz ""
	.asciz "bc-b.o"
	.asciz "bwork"
bcb_end:

/* ENTRY counters, desc: at a function's entry, register the thread (its
 * word 0 is 0) as instrumented code does; flags are dead here */
	.macro ENTRY counters, desc
	cmpq $0, %fs:\counters@tpoff
	jne 1f
	leaq -128(%rsp), %rsp
	call *vpt_blocks_thread@GOTPCREL(%rip)
	nopl \desc(%rip)
	leaq 128(%rsp), %rsp
1:
	.endm

	.text
	.globl work
	.type work, @function
	.p2align 4
work:
	ENTRY bca_counters, bca_desc
	addq $1, %fs:bca_counters@tpoff+8       /* block 0 */
	testq %rdi, %rdi
	jz 3f
2:	addq $1, %fs:bca_counters@tpoff+16      /* block 1 */
	decq %rdi
	jnz 2b
3:	addq $1, %fs:bca_counters@tpoff+24      /* block 2 */
	ret
	.size work, .-work

	.globl bwork
	.type bwork, @function
	.p2align 4
bwork:
	ENTRY bcb_counters, bcb_desc
	addq $1, %fs:bcb_counters@tpoff+8
	testq %rdi, %rdi
	jz 3f
2:	incq %fs:bcb_counters@tpoff+16
	decq %rdi
	jnz 2b
3:	ret
	.size bwork, .-bwork

/* this thread's word 0 of object A */
	.globl bca_word0
	.type bca_word0, @function
bca_word0:
	movq %fs:bca_counters@tpoff, %rax
	ret
	.size bca_word0, .-bca_word0

/* constructors and destructors: through the GOT, as the preset emits them */
	.type bca_ctor, @function
bca_ctor:
	leaq bca_desc(%rip), %rdi
	jmp *vpt_blocks_register@GOTPCREL(%rip)
	.size bca_ctor, .-bca_ctor
	.type bca_dtor, @function
bca_dtor:
	leaq bca_desc(%rip), %rdi
	jmp *vpt_blocks_unregister@GOTPCREL(%rip)
	.size bca_dtor, .-bca_dtor

/* B's constructor, called by bc.c: tpoff stored, then registered */
	.globl bcb_ctor
	.type bcb_ctor, @function
bcb_ctor:
	movq bcb_counters@gottpoff(%rip), %rax
	movq %rax, bcb_desc+16(%rip)
	leaq bcb_desc(%rip), %rdi
	jmp *vpt_blocks_register@GOTPCREL(%rip)
	.size bcb_ctor, .-bcb_ctor
	.type bcb_dtor, @function
bcb_dtor:
	leaq bcb_desc(%rip), %rdi
	jmp *vpt_blocks_unregister@GOTPCREL(%rip)
	.size bcb_dtor, .-bcb_dtor

	.section .init_array,"aw"
	.p2align 3
	.quad bca_ctor
	.section .fini_array.00000,"aw"
	.p2align 3
	.quad bca_dtor
	.quad bcb_dtor

	.text
	.macro REGCHECK name, odd
	.globl \name
	.type \name, @function
	.p2align 4
\name:
	pushq %rbx
	pushq %rbp
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	.if \odd
	subq $8, %rsp
	.endif
	movq %rsi, %fs:bc_regout@tpoff
	movq %rdi, %rax
	.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	movdqu XMM+16*\n(%rax), %xmm\n
	.endr
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
	call *vpt_blocks_thread@GOTPCREL(%rip)
	nopl bca_desc(%rip)
	leaq 128(%rsp), %rsp
	pushfq
	pushq %rax
	movq %fs:bc_regout@tpoff, %rax
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
	.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	movdqu %xmm\n, XMM+16*\n(%rax)
	.endr
	.if \odd
	addq $8, %rsp
	.endif
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbp
	popq %rbx
	ret
	.size \name, .-\name
	.endm

	REGCHECK bc_regcheck, 0
	REGCHECK bc_regcheck_odd, 1

	.section .note.GNU-stack,"",@progbits

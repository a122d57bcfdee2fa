/* gcc splits the unlikely paths of a function into a .cold part, another
   function to the object file, but one function to its register
   allocator: any register or flag may be live across the jump into the
   cold part and the jump back. hot keeps values in rax and r11 (neither
   an argument nor callee-saved) across its jump into hot.cold, which uses
   them and jumps back into the middle of hot, where rdx, set in the cold
   part, is used. Liveness must carry them across both jumps: clobber once
   destroyed them (main printed garbage, not "0 27"). */

#include <stdio.h>

long hot(int);

__asm__(
	"	.text\n"
	"	.globl	hot\n"
	"	.type	hot, @function\n"
	"hot:\n"
	"	movq	$5, %r11\n"
	"	movl	$7, %eax\n"
	"	xorl	%edx, %edx\n"
	"	testl	%edi, %edi\n"
	"	jne	hot.cold\n"
	"	xorl	%eax, %eax\n"
	".Lhot_back:\n"
	"	addq	%rdx, %rax\n"
	"	ret\n"
	"	.size	hot, .-hot\n"
	"	.section .text.unlikely,\"ax\",@progbits\n"
	"	.type	hot.cold, @function\n"
	"hot.cold:\n"
	"	addq	%r11, %rax\n"
	"	movq	$15, %rdx\n"
	"	jmp	.Lhot_back\n"
	"	.size	hot.cold, .-hot.cold\n"
	"	.text\n");

int main(void)
{
	printf("%ld %ld\n", hot(0), hot(1));
	return 0;
}

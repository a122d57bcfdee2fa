/* Issue 10, silent miscompile 1 (pcre2 10.42, find_minlength in
   pcre2_study.c, gcc 12 -O2 -fPIC): two switches in one loop, both
   compiled to jump tables whose bases gcc hoists into registers before
   the loop, table A's first:

	lea  .rodata-0x4(%rip),%r8     # table A
	lea  .rodata+0x3c(%rip),%r9    # table B
   loop:
	...  movslq (%r8,%rdx,4),%rcx; add %r8,%rcx; jmp *%rcx    # dispatch A
	...  movslq (%r9,%rdx,4),%rcx; add %r9,%rcx; jmp *%rcx    # dispatch B

   The table address loaded nearest before dispatch A is B's. hijack once
   gave dispatch A the targets of table B, so what is live into A's cases
   only (t here, eax in pcre2) was called dead: clobber and vptrace
   changed the result (the program crashed or printed garbage). gcc -O2,
   -O3 and -Os produce this shape; main prints "minlen 81". */

#include <stdio.h>

__attribute__((noinline)) unsigned minlen(const unsigned char *code, unsigned n)
{
	unsigned len = 0, branch = 0, k = 7;
	for (unsigned i = 0; i < n; i++) {
		unsigned op = code[i], t = op * 7 + i;
		switch (op) {
		case 0: len += 1; break;
		case 1: len += t; break;
		case 2: branch = len; break;
		case 3: len = branch > len ? branch : len; break;
		case 5: k += t; break;
		case 6: len ^= t; break;
		case 8: len += 3; break;
		case 9: k = len; break;
		case 11: len -= t; break;
		case 12: branch += 2; break;
		case 14: len = len * 3 + k; break;
		case 15: k ^= branch; break;
		default: len += 2; break;
		}
		switch (code[i ^ 1]) {
		case 16: branch ^= k; break;
		case 17: k += 9; break;
		case 18: len += branch; break;
		case 19: branch = k * 5; break;
		case 20: len <<= 1; break;
		case 22: k -= len; break;
		case 23: len += 100; break;
		case 25: branch >>= 1; break;
		case 26: len ^= 0x55; break;
		case 28: k = k * 7 + 1; break;
		default: len += 2; break;
		}
	}
	return len ^ branch ^ k;
}

int main(void)
{
	unsigned char buf[2048];
	unsigned x = 1;
	for (int i = 0; i < 2048; i++) {
		x = x * 1103515245 + 12345;
		buf[i] = (x >> 16) % 56;
	}
	printf("minlen %u\n", minlen(buf, sizeof buf));
	return 0;
}

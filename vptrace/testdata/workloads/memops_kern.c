// workload: memops
// about: memcpy/memset-like kernels: byte and word loops (vectorized at
// about: -O3), __builtin_memcpy/memset and a struct copy the compiler
// about: expands to rep movsq/stosq (-minline-all-stringops), and explicit
// about: rep movsb/movsq/stosb/stosq/scasb/cmpsb, one backwards (DF=1),
// about: with zero counts too (which touch nothing)
// cflags: -minline-all-stringops -mstringop-strategy=rep_8byte
// test-args: 1
// bench-args: 8 80
#include "memops.h"

void mem_copy_loop(unsigned char *restrict d, const unsigned char *restrict s, long n)
{
	for (long i = 0; i < n; i++)
		d[i] = s[i];
}

void mem_set_loop(unsigned char *d, int c, long n)
{
	for (long i = 0; i < n; i++)
		d[i] = (unsigned char)c;
}

void mem_copy_words(long *restrict d, const long *restrict s, long n)
{
	for (long i = 0; i < n; i++)
		d[i] = s[i];
}

void mem_copy_builtin(void *d, const void *s, size_t n) { __builtin_memcpy(d, s, n); }

void mem_set_builtin(void *d, int c, size_t n) { __builtin_memset(d, c, n); }

void mem_copy_struct(struct blob *d, const struct blob *s) { *d = *s; }

void mem_rep_movsb(void *d, const void *s, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

void mem_rep_movsq(void *d, const void *s, size_t nq)
{
	__asm__ volatile("rep movsq" : "+D"(d), "+S"(s), "+c"(nq) : : "memory");
}

void mem_rep_stosb(void *d, int c, size_t n)
{
	__asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
}

void mem_rep_stosq(void *d, long v, size_t nq)
{
	__asm__ volatile("rep stosq" : "+D"(d), "+c"(nq) : "a"(v) : "memory");
}

/* copies n bytes backwards: rsi/rdi point at the last byte, DF=1 */
void mem_rep_movsb_back(void *d, const void *s, size_t n)
{
	if (n == 0)
		return;
	unsigned char *de = (unsigned char *)d + n - 1;
	const unsigned char *se = (const unsigned char *)s + n - 1;
	__asm__ volatile("std\n\trep movsb\n\tcld" : "+D"(de), "+S"(se), "+c"(n) : : "memory", "cc");
}

/* index of the first byte equal to c, or n */
long mem_rep_scasb(const void *s, int c, size_t n)
{
	size_t left = n;
	const void *p = s;
	__asm__ volatile("repne scasb" : "+D"(p), "+c"(left) : "a"(c) : "memory", "cc");
	if (n == 0)
		return 0;
	return (long)((const unsigned char *)p - (const unsigned char *)s) - (((const unsigned char *)p)[-1] == (unsigned char)c);
}

/* nonzero when the first n bytes differ */
int mem_rep_cmpsb(const void *a, const void *b, size_t n)
{
	unsigned char eq;
	__asm__ volatile("xor %%eax, %%eax\n\trepe cmpsb\n\tsete %0" : "=q"(eq), "+S"(a), "+D"(b), "+c"(n) : : "memory", "cc", "rax");
	return !eq;
}

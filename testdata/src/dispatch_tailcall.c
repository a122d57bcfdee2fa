/* Issue 10, silent miscompile 2 (xz-utils' lzma_properties_decode built
   with clang -O2): clang turns the search of a constant table into a
   switch compiled to a jump table, then tail-calls through the table of
   function pointers it found:

	lea  .rodata+X(%rip),%r10; movslq (%r10,%r9,4),%r9; add %r10,%r9; jmp *%r9
	...
	lea  decoders(%rip),%rax; jmp *0x8(%r8,%rax,1)

   The second jump is an indirect tail call, not a table dispatch: the
   argument registers (rdi, esi, edx, ecx) are live into it. hijack once
   took it for a dispatch through the switch's table, called them dead,
   and clobber and vptrace changed the result. props_decode(1, 1, 1, 9) is
   11109; main prints "11109 515622080". */

#include <stdio.h>

typedef int (*decode_fn)(unsigned long id, int a, int b, int c);

struct decoder {
	unsigned long id;
	decode_fn f;
};

static int d_a(unsigned long id, int a, int b, int c) { return (int)id * 10000 + a * 1000 + b * 100 + c; }
static int d_b(unsigned long id, int a, int b, int c) { return (int)id * 20000 + a * 2000 + b * 200 + c; }
static int d_c(unsigned long id, int a, int b, int c) { return (int)id * 30000 + a * 3000 + b * 300 + c; }

static const struct decoder decoders[] = {
	{ 1, d_a }, { 3, d_b }, { 4, d_c }, { 5, d_a }, { 6, d_b }, { 8, d_c }, { 9, NULL },
};

static const struct decoder *find(unsigned long id)
{
	for (unsigned long i = 0; i < sizeof decoders / sizeof decoders[0]; ++i)
		if (decoders[i].id == id)
			return decoders + i;
	return NULL;
}

__attribute__((noinline)) int props_decode(unsigned long id, int a, int b, int c)
{
	const struct decoder *d = find(id);
	if (d == NULL)
		return -1;
	if (d->f == NULL)
		return c == 0 ? 0 : -2;
	return d->f(id, a, b, c);
}

int main(void)
{
	long sum = 0;
	for (unsigned long id = 0; id < 11; id++)
		sum = sum * 3 + props_decode(id, (int)id + 1, 2, 7);
	printf("%d %ld\n", props_decode(1, 1, 1, 9), sum);
	return 0;
}

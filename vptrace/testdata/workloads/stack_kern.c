// workload: stack
// about: a 16 KiB local histogram, a recursion 40 deep with a 2400-byte
// about: array per frame, a variable-length array; each kernel stores its
// about: arrays' addresses into an output argument so that the driver knows
// about: which stack pages they occupy (required with usestack: true)
// usestack: all
// test-args: 1
// bench-args: 1 4000
#include "stack.h"

void stack_hist(const unsigned char *data, long n, unsigned *out, uintptr_t *where)
{
	unsigned hist[4096];
	*where = (uintptr_t)hist;
	for (int i = 0; i < 4096; i++)
		hist[i] = 0;
	for (long i = 0; i < n; i++)
		hist[data[i] * 16 + (i & 15)]++;
	for (int i = 0; i < 4096; i++)
		out[i] = hist[i];
}

long stack_rec(const long *a, int depth, uintptr_t *frames)
{
	long buf[300];
	frames[depth] = (uintptr_t)buf;
	for (int i = 0; i < 300; i++)
		buf[i] = a[i] + depth;
	long s = 0;
	if (depth > 0)
		s = stack_rec(a + 300, depth - 1, frames);
	for (int i = 299; i >= 0; i--)
		s = s * 7 + buf[i];
	return s;
}

long stack_vla(const int *a, int n, uintptr_t *where)
{
	int tmp[n];
	*where = (uintptr_t)tmp;
	for (int i = 0; i < n; i++)
		tmp[i] = a[n - 1 - i];
	long s = 0;
	for (int i = 0; i < n; i++)
		s = s * 3 + tmp[i];
	return s;
}

// workload: stride
// about: strided reads, writes and read-modify-writes with strides of 4096,
// about: 8192, 1000 and 4100 bytes from page-unaligned starts; a backward
// about: walk; a column walk down a row-major matrix (one page per row)
// test-args: 1
// bench-args: 1 5000
#include "stride.h"

long stride_read_int(const char *base, long n, long stride)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += *(const int *)(base + i * stride);
	return s;
}

void stride_write_int(char *base, long n, long stride, int v)
{
	for (long i = 0; i < n; i++)
		*(int *)(base + i * stride) = v + (int)i;
}

void stride_rmw_long(char *base, long n, long stride)
{
	for (long i = 0; i < n; i++)
		*(long *)(base + i * stride) += i;
}

long stride_read_back(const char *base, long n, long stride)
{
	long s = 0;
	for (long i = n - 1; i >= 0; i--)
		s = s * 3 + *(const short *)(base + i * stride);
	return s;
}

double stride_colsum(const double *m, long rows, long cols, long col)
{
	double s = 0;
	for (long r = 0; r < rows; r++)
		s += m[r * cols + col];
	return s;
}

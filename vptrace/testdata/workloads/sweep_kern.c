// workload: sweep
// about: sequential sweeps over int, double and byte arrays: pure reads,
// about: pure writes, read-modify-write, twelve arrays at once (register
// about: pressure: gcc -O2 keeps pointers in rbp too), a backward sweep
// test-args: 1
// bench-args: 2 40
#include "sweep.h"

long sweep_sum_int(const int *a, long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += a[i];
	return s;
}

void sweep_fill_int(int *a, long n, int v)
{
	for (long i = 0; i < n; i++)
		a[i] = v + (int)i;
}

void sweep_inc_int(int *a, long n)
{
	for (long i = 0; i < n; i++)
		a[i] += 3;
}

double sweep_sum_double(const double *a, long n)
{
	double s = 0;
	for (long i = 0; i < n; i++)
		s += a[i];
	return s;
}

void sweep_scale_double(double *restrict dst, const double *restrict src, long n, double k)
{
	for (long i = 0; i < n; i++)
		dst[i] = src[i] * k;
}

long sweep_count_byte(const unsigned char *a, long n, unsigned char c)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += a[i] == c;
	return s;
}

void sweep_fill_byte(unsigned char *a, long n, unsigned char v)
{
	for (long i = 0; i < n; i++)
		a[i] = v;
}

void sweep_xor_byte(unsigned char *restrict dst, const unsigned char *restrict src, long n)
{
	for (long i = 0; i < n; i++)
		dst[i] = src[i] ^ 0x5a;
}

long sweep_sum12(const int *const *p, long n)
{
	const int *a0 = p[0], *a1 = p[1], *a2 = p[2], *a3 = p[3], *a4 = p[4], *a5 = p[5];
	const int *a6 = p[6], *a7 = p[7], *a8 = p[8], *a9 = p[9], *a10 = p[10], *a11 = p[11];
	long s = 0;
	for (long i = 0; i < n; i++) {
		s += (long)a0[i] * 1 + a1[i] * 2 + a2[i] * 3 + a3[i] * 4 + a4[i] * 5 + a5[i] * 6;
		s ^= (long)a6[i] * 7 + a7[i] * 8 + a8[i] * 9 + a9[i] * 10 + a10[i] * 11 + a11[i] * 12;
	}
	return s;
}

long sweep_sum_back(const long *a, long n)
{
	long s = 0;
	for (long i = n - 1; i >= 0; i--)
		s = s * 31 + a[i];
	return s;
}

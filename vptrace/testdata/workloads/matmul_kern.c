// workload: matmul
// about: C = A x B for rows [r0, r1): double (i-j-k with a dot product:
// about: C written, A and B read) and float (i-k-j, tiled: C read and written);
// about: two threads share A and B and split C
// test-args: 1
// bench-args: 3 4
#include "matmul.h"

void matmul_rows(double *c, const double *a, const double *b, long n, long r0, long r1)
{
	for (long i = r0; i < r1; i++)
		for (long j = 0; j < n; j++) {
			double s = 0;
			for (long k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
}

#define TILE 64

void matmul_tiled(float *restrict c, const float *restrict a, const float *restrict b, long n, long r0, long r1)
{
	for (long i = r0; i < r1; i++)
		for (long j = 0; j < n; j++)
			c[i * n + j] = 0;
	for (long kk = 0; kk < n; kk += TILE)
		for (long i = r0; i < r1; i++)
			for (long k = kk; k < kk + TILE && k < n; k++) {
				float x = a[i * n + k];
				for (long j = 0; j < n; j++)
					c[i * n + j] += x * b[k * n + j];
			}
}

// workload: stencil
// about: a 5-point Jacobi step over an n x n grid of doubles walked column
// about: by column (n = 512 per SCALE: every access of a column on another
// about: row, a row being 4 KiB per SCALE), the grids swapped each step, and
// about: column sums walked the same way; one thread
// test-args: 1
// bench-args: 3 24
#include "stencil.h"

void stencil_cols(double *restrict b, const double *restrict a, long n)
{
	for (long j = 1; j < n - 1; j++)
		for (long i = 1; i < n - 1; i++)
			b[i * n + j] = 0.25 * (a[(i - 1) * n + j] + a[(i + 1) * n + j] + a[i * n + j - 1] + a[i * n + j + 1]);
}

void stencil_colsum(const double *a, long n, double *sums)
{
	for (long j = 0; j < n; j++) {
		double s = 0;
		for (long i = 0; i < n; i++)
			s += a[i * n + j];
		sums[j] = s;
	}
}

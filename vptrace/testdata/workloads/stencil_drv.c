/* Driver of the stencil workload: one thread runs REPS Jacobi steps
 * (swapping the grids) and the column sums of the result; the driver
 * repeats the arithmetic and checks every value.
 * usage: stencil_drv [SCALE [REPS]] */
#include "oracle.h"
#include "stencil.h"

static void step(double *restrict b, const double *restrict a, long n)
{
	for (long i = 1; i < n - 1; i++)
		for (long j = 1; j < n - 1; j++)
			b[i * n + j] = 0.25 * (a[(i - 1) * n + j] + a[(i + 1) * n + j] + a[i * n + j - 1] + a[i * n + j + 1]);
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	uint64_t seed = 777;
	orc_workload("stencil");
	long n = 512 * scale;
	size_t bytes = (size_t)n * n * sizeof(double);
	double *g[2] = {orc_map("grid0", bytes, 0), orc_map("grid1", bytes, 0)};
	double *sums = orc_map("sums", n * sizeof *sums, 200);
	double *r[2] = {orc_xmalloc(bytes), orc_xmalloc(bytes)}, *rs = orc_xmalloc(n * sizeof *rs);
	for (long i = 0; i < n * n; i++)
		g[0][i] = g[1][i] = r[0][i] = r[1][i] = (double)(orc_rand(&seed) % 1000);
	orc_self self;
	orc_self_init(&self);
	orc_thr *t = orc_thread_self("main", &self);
	for (long s = 0; s < reps; s++) {
		double *a = g[s % 2], *b = g[1 - s % 2];
		stencil_cols(b, a, n);
		/* every row of a is read (row 0 and n-1 but their corners, each a
		 * page or more), rows 1..n-2 of b written (columns 1..n-2 span
		 * the row's pages) */
		orc_touch(t, a, bytes, ORC_R);
		for (long i = 1; i < n - 1; i++)
			orc_touch(t, &b[i * n + 1], (n - 2) * sizeof(double), ORC_W);
		step(r[1 - s % 2], r[s % 2], n);
	}
	double *last = g[reps % 2], *rlast = r[reps % 2];
	stencil_colsum(last, n, sums);
	orc_touch(t, last, bytes, ORC_R);
	orc_touch(t, sums, n * sizeof *sums, ORC_W);
	uint64_t check = 0;
	for (long j = 0; j < n; j++) {
		double sum = 0;
		for (long i = 0; i < n; i++)
			sum += rlast[i * n + j];
		rs[j] = sum;
	}
	for (long i = 0; i < n * n; i++) {
		orc_check(last[i] == rlast[i], "grid value");
		check = check * 31 + (uint64_t)(last[i] * 1024);
	}
	for (long j = 0; j < n; j++) {
		orc_check(sums[j] == rs[j], "column sum");
		check = check * 31 + (uint64_t)(sums[j] * 1024);
	}
	orc_write();
	printf("stencil n=%ld reps=%ld check=%016llx\n", n, reps, (unsigned long long)check);
	return 0;
}

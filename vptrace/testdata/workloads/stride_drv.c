/* Driver of the stride workload: 2 threads; each runs every kernel on
 * buffers of its own, with strides 4096, 8192, 1000 and 4100 bytes from
 * starts 4, 0x7fc and 0xffc bytes into a page.
 * usage: stride_drv [SCALE [REPS]] */
#include "oracle.h"
#include "stride.h"

#define NTHR 2
#define NCASE 4

static const long strides[NCASE] = {4096, 8192, 1000, 4100};
static const long skews[NCASE] = {4, 0x7fc, 0xff8, 12};

struct job {
	int k;
	long n, reps;
	orc_self self;
	char *rd[NCASE], *wr[NCASE], *rmw[NCASE], *back[NCASE];
	double *mat;
	long rows, cols;
	long sum[NCASE], sback[NCASE];
	double col;
};

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	for (long r = 0; r < j->reps; r++) {
		for (int c = 0; c < NCASE; c++) {
			j->sum[c] = stride_read_int(j->rd[c], j->n, strides[c]);
			stride_write_int(j->wr[c], j->n, strides[c], c);
			stride_rmw_long(j->rmw[c], j->n, strides[c]);
			j->sback[c] = stride_read_back(j->back[c], j->n, strides[c]);
		}
		j->col = stride_colsum(j->mat, j->rows, j->cols, 5 + j->k);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 7;
	orc_workload("stride");
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->k = k;
		j->reps = reps;
		j->n = 700 * scale + 11 * k;
		for (int c = 0; c < NCASE; c++) {
			size_t len = (size_t)j->n * strides[c] + 8;
#define MAP(f, w) (snprintf(nm, sizeof nm, "t%d.%s%ld", k, w, strides[c]), j->f[c] = orc_map(nm, len, skews[c]))
			MAP(rd, "rd");
			MAP(wr, "wr");
			MAP(rmw, "rmw");
			MAP(back, "back");
			for (long i = 0; i < j->n; i++) {
				*(int *)(j->rd[c] + i * strides[c]) = (int)(orc_rand(&seed) & 0xffff);
				*(long *)(j->rmw[c] + i * strides[c]) = (long)i * 100;
				*(short *)(j->back[c] + i * strides[c]) = (short)(orc_rand(&seed) & 0x7fff);
			}
		}
		j->rows = 300 * scale;
		j->cols = 1024; /* 8 KiB rows */
		snprintf(nm, sizeof nm, "t%d.mat", k);
		j->mat = orc_map(nm, sizeof(double) * j->rows * j->cols, 0);
		for (long r = 0; r < j->rows; r++)
			j->mat[r * j->cols + 5 + k] = (double)r;
	}
	for (int k = 0; k < NTHR; k++)
		if (pthread_create(&th[k], 0, work, &jobs[k]) != 0)
			orc_die("pthread_create");
	for (int k = 0; k < NTHR; k++)
		pthread_join(th[k], 0);

	uint64_t check = 0;
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		snprintf(nm, sizeof nm, "t%d", k);
		orc_thr *t = orc_thread_self(nm, &j->self);
		for (int c = 0; c < NCASE; c++) {
			long s = 0, sb = 0;
			for (long i = 0; i < j->n; i++) {
				long st = strides[c];
				s += *(int *)(j->rd[c] + i * st);
				orc_check(*(int *)(j->wr[c] + i * st) == c + (int)i, "write_int");
				orc_check(*(long *)(j->rmw[c] + i * st) == (long)i * 100 + i * j->reps, "rmw_long");
				orc_touch(t, j->rd[c] + i * st, sizeof(int), ORC_R);
				orc_touch(t, j->wr[c] + i * st, sizeof(int), ORC_W);
				orc_touch(t, j->rmw[c] + i * st, sizeof(long), ORC_RW);
				orc_touch(t, j->back[c] + i * st, sizeof(short), ORC_R);
			}
			for (long i = j->n - 1; i >= 0; i--)
				sb = sb * 3 + *(short *)(j->back[c] + i * strides[c]);
			orc_check(s == j->sum[c], "read_int");
			orc_check(sb == j->sback[c], "read_back");
			check = check * 31 + (uint64_t)s + (uint64_t)sb;
		}
		double cs = 0;
		for (long r = 0; r < j->rows; r++) {
			cs += j->mat[r * j->cols + 5 + k];
			orc_touch(t, &j->mat[r * j->cols + 5 + k], sizeof(double), ORC_R);
		}
		orc_check(cs == j->col, "colsum");
		check = check * 31 + (uint64_t)cs;
	}
	orc_write();
	printf("stride threads=%d scale=%ld reps=%ld check=%016llx\n", NTHR, scale, reps, (unsigned long long)check);
	return 0;
}

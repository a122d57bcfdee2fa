/* Driver of the sweep workload: 3 threads, each with its own arrays (of
 * slightly different sizes and page offsets), one array per kernel so that
 * each array is purely read, purely written, or read and written.
 * usage: sweep_drv [SCALE [REPS]] */
#include "oracle.h"
#include "sweep.h"

#define NTHR 3

struct job {
	int k;
	long n, reps;
	orc_self self;
	int *ri, *wi, *mi, *r12[12];
	double *rd, *wd;
	unsigned char *rb, *wb, *xb;
	long *rl;
	long sum_i, cnt_b, s12, sback;
	double sum_d;
};

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	for (long r = 0; r < j->reps; r++) {
		j->sum_i = sweep_sum_int(j->ri, j->n);
		sweep_fill_int(j->wi, j->n, 7);
		sweep_inc_int(j->mi, j->n);
		j->sum_d = sweep_sum_double(j->rd, j->n);
		sweep_scale_double(j->wd, j->rd, j->n, 0.5);
		j->cnt_b = sweep_count_byte(j->rb, j->n, 3);
		sweep_fill_byte(j->wb, j->n, 0xab);
		sweep_xor_byte(j->xb, j->rb, j->n);
		j->s12 = sweep_sum12((const int *const *)j->r12, j->n / 4);
		j->sback = sweep_sum_back(j->rl, j->n / 2);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	uint64_t seed = 42;
	char nm[64];
	orc_workload("sweep");
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->k = k;
		j->reps = reps;
		j->n = 256 * 1024 * scale + 1000 * k + 3;
		size_t skew = 16 + 1000 * k;
#define MAP(field, what, elems) \
	(snprintf(nm, sizeof nm, "t%d.%s", k, what), j->field = orc_map(nm, sizeof(*j->field) * (elems), skew))
		MAP(ri, "ri", j->n);
		MAP(wi, "wi", j->n);
		MAP(mi, "mi", j->n);
		MAP(rd, "rd", j->n);
		MAP(wd, "wd", j->n);
		MAP(rb, "rb", j->n);
		MAP(wb, "wb", j->n);
		MAP(xb, "xb", j->n);
		MAP(rl, "rl", j->n / 2);
		for (int a = 0; a < 12; a++) {
			snprintf(nm, sizeof nm, "t%d.r12.%d", k, a);
			j->r12[a] = orc_map(nm, sizeof(int) * (j->n / 4), 64 * a + 8);
		}
		for (long i = 0; i < j->n; i++) {
			uint64_t x = orc_rand(&seed);
			j->ri[i] = (int)(x & 0xffff);
			j->mi[i] = (int)i;
			j->rd[i] = (double)(x >> 40) / 1024.0;
			j->rb[i] = (unsigned char)(x >> 20) & 7;
		}
		for (long i = 0; i < j->n / 2; i++)
			j->rl[i] = (long)orc_rand(&seed);
		for (int a = 0; a < 12; a++)
			for (long i = 0; i < j->n / 4; i++)
				j->r12[a][i] = (int)(orc_rand(&seed) & 0xfff);
	}
	for (int k = 0; k < NTHR; k++)
		if (pthread_create(&th[k], 0, work, &jobs[k]) != 0)
			orc_die("pthread_create");
	for (int k = 0; k < NTHR; k++)
		pthread_join(th[k], 0);

	uint64_t check = 0;
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		long n = j->n, si = 0, cb = 0, s12 = 0, sb = 0;
		double sd = 0;
		for (long i = 0; i < n; i++) {
			si += j->ri[i];
			sd += j->rd[i];
			cb += j->rb[i] == 3;
			orc_check(j->wi[i] == 7 + (int)i, "fill_int");
			orc_check(j->mi[i] == (int)i + 3 * (int)j->reps, "inc_int");
			orc_check(j->wd[i] == j->rd[i] * 0.5, "scale_double");
			orc_check(j->wb[i] == 0xab, "fill_byte");
			orc_check(j->xb[i] == (j->rb[i] ^ 0x5a), "xor_byte");
		}
		for (long i = 0; i < n / 4; i++) {
			const int *const *a = (const int *const *)j->r12;
			s12 += (long)a[0][i] * 1 + a[1][i] * 2 + a[2][i] * 3 + a[3][i] * 4 + a[4][i] * 5 + a[5][i] * 6;
			s12 ^= (long)a[6][i] * 7 + a[7][i] * 8 + a[8][i] * 9 + a[9][i] * 10 + a[10][i] * 11 + a[11][i] * 12;
		}
		for (long i = n / 2 - 1; i >= 0; i--)
			sb = sb * 31 + j->rl[i];
		orc_check(si == j->sum_i, "sum_int");
		orc_check(cb == j->cnt_b, "count_byte");
		orc_check(s12 == j->s12, "sum12");
		orc_check(sb == j->sback, "sum_back");
		/* the double sum's order may differ when vectorized */
		orc_check(sd - j->sum_d < 1e-6 * sd && j->sum_d - sd < 1e-6 * sd, "sum_double");
		check = check * 1000003 + (uint64_t)si + (uint64_t)cb * 7 + (uint64_t)s12 + (uint64_t)sb;

		snprintf(nm, sizeof nm, "t%d", k);
		orc_thr *t = orc_thread_self(nm, &j->self);
		orc_touch(t, j->ri, n * sizeof(int), ORC_R);
		orc_touch(t, j->wi, n * sizeof(int), ORC_W);
		orc_touch(t, j->mi, n * sizeof(int), ORC_RW);
		orc_touch(t, j->rd, n * sizeof(double), ORC_R);
		orc_touch(t, j->wd, n * sizeof(double), ORC_W);
		orc_touch(t, j->rb, n, ORC_R);
		orc_touch(t, j->wb, n, ORC_W);
		orc_touch(t, j->xb, n, ORC_W);
		orc_touch(t, j->r12, sizeof j->r12, ORC_R);
		for (int a = 0; a < 12; a++)
			orc_touch(t, j->r12[a], (n / 4) * sizeof(int), ORC_R);
		orc_touch(t, j->rl, (n / 2) * sizeof(long), ORC_R);
	}
	orc_write();
	printf("sweep threads=%d scale=%ld reps=%ld check=%016llx\n", NTHR, scale, reps, (unsigned long long)check);
	return 0;
}

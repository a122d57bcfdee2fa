/* Driver of the globals workload: 2 threads work on the kernel object's
 * global, static and thread-local arrays, whose addresses the oracle uses.
 * usage: globals_drv [SCALE [REPS]] (SCALE is ignored: the arrays are
 * fixed-size) */
#include "oracle.h"
#include "globals.h"

#define NTHR 2

struct job {
	int k;
	long reps;
	orc_self self;
	long bss_lo, bss_hi, data_lo, data_hi;
	int *idx;
	long nidx, tls_n, sb_start, sb_n, sb_stride;
	long *tls;
	double dsum;
	long rsum, tsum;
};

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	j->tls = globals_tls_addr();
	for (long r = 0; r < j->reps; r++) {
		globals_fill_bss(j->bss_lo, j->bss_hi, 77 + j->k);
		j->dsum = globals_sum_data(j->data_lo, j->data_hi);
		j->rsum = globals_lookup_ro(j->idx, j->nidx);
		j->tsum = globals_tls_work(j->tls_n);
		globals_sbss_stride(j->sb_start, j->sb_n, j->sb_stride);
	}
	return 0;
}

int main(int argc, char **argv)
{
	(void)orc_scale(argc, argv);
	long reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 5;
	orc_workload("globals");
	orc_region("g_bss", g_bss, sizeof g_bss);
	orc_region("g_data", g_data, sizeof g_data);
	orc_region("g_ro", g_ro, sizeof g_ro);
	long *sb = globals_sbss_addr();
	orc_region("s_bss", sb, G_SBSS_N * sizeof(long));
	for (long i = 0; i < G_DATA_N; i++)
		g_data[i] = (double)(i % 10);
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->k = k;
		j->reps = reps;
		j->bss_lo = k * G_BSS_N / 2 + 100 * k;
		j->bss_hi = (k + 1) * G_BSS_N / 2 - 50 * (1 - k);
		j->data_lo = k ? 1000 : 0;
		j->data_hi = k ? G_DATA_N : 5000;
		j->nidx = 40;
		snprintf(nm, sizeof nm, "t%d.idx", k);
		j->idx = orc_map(nm, j->nidx * sizeof(int), 100);
		for (long i = 0; i < j->nidx; i++) /* sparse: some .rodata pages untouched */
			j->idx[i] = (int)(orc_rand(&seed) % (G_RO_N / 1024)) * 1024 + (int)(orc_rand(&seed) % 900);
		j->tls_n = k ? G_TLS_N : 1500;
		j->sb_start = k ? 1 : 0;
		j->sb_stride = k ? 1200 : 700;
		j->sb_n = (G_SBSS_N - j->sb_start - 1) / j->sb_stride + 1;
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
		snprintf(nm, sizeof nm, "tls:t%d", k);
		orc_region(nm, j->tls, G_TLS_N * sizeof(long));
		for (long i = j->bss_lo; i < j->bss_hi; i++)
			orc_check(g_bss[i] == ((77 + k) ^ (int)i), "fill_bss");
		orc_touch(t, &g_bss[j->bss_lo], (j->bss_hi - j->bss_lo) * sizeof(int), ORC_W);
		double ds = 0;
		for (long i = j->data_lo; i < j->data_hi; i++)
			ds += g_data[i];
		orc_check(ds == j->dsum, "sum_data");
		orc_touch(t, &g_data[j->data_lo], (j->data_hi - j->data_lo) * sizeof(double), ORC_R);
		long rs = 0;
		for (long i = 0; i < j->nidx; i++) {
			rs += g_ro[j->idx[i]];
			orc_touch(t, &g_ro[j->idx[i]], sizeof(int), ORC_R);
		}
		orc_touch(t, j->idx, j->nidx * sizeof(int), ORC_R);
		orc_check(rs == j->rsum, "lookup_ro");
		long ts = 0;
		for (long i = j->tls_n - 1; i >= 0; i -= 3)
			ts += i * 5;
		orc_check(ts == j->tsum, "tls_work");
		orc_touch(t, j->tls, j->tls_n * sizeof(long), ORC_RW);
		for (long i = 0; i < j->sb_n; i++)
			orc_touch(t, &sb[j->sb_start + i * j->sb_stride], sizeof(long), ORC_RW);
		check = check * 31 + (uint64_t)ds + (uint64_t)rs + (uint64_t)ts;
	}
	for (long i = 0; i < G_SBSS_N; i++)
		check += (uint64_t)sb[i] * (uint64_t)(i + 1);
	orc_write();
	printf("globals threads=%d reps=%ld check=%016llx\n", NTHR, reps, (unsigned long long)check);
	return 0;
}

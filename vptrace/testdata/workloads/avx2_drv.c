/* Driver of the avx2 workload: 2 threads with their own data.
 * usage: avx2_drv [SCALE [REPS]] */
#include "oracle.h"
#include "avx2.h"

#define NTHR 2

struct job {
	int k;
	long reps, n, ng, pairs;
	orc_self self;
	float *x, *y, *nt, *bc;
	double *dx, *dy;
	int *gbase, *gidx, *sbase, *sidx, *ml, *ms;
	double dot;
	long gsum, mlsum;
	float bsum;
};

#define ML_AT (4096 - 12) /* 3 lanes fit before the page end */
#define ML_LANES 3

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	for (long r = 0; r < j->reps; r++) {
		avx_saxpy(j->y, j->x, j->n, 0.5f);
		j->dot = avx_dot(j->dx, j->dy, j->n);
		j->gsum = avx_gather_sum(j->gbase, j->gidx, j->ng);
		avx_scatter_like(j->sbase, j->sidx, j->ng);
		j->mlsum = avx_maskload_sum(j->ml, j->pairs, ML_AT, ML_LANES);
		avx_maskstore(j->ms, j->pairs, ML_AT, ML_LANES);
		avx_stream_fill(j->nt, j->n, 2.5f);
		j->bsum = avx_bcast_sum(j->bc, j->n);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 17;
	orc_workload("avx2");
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->k = k;
		j->reps = reps;
		j->n = 128 * 1024 * scale + 5 + k;
		j->ng = 1600 * scale + 3;
		j->pairs = 128 * scale;
		long gspan = 4L << 20; /* ints: 16 MiB */
#define MAP(f, w, len, skew) (snprintf(nm, sizeof nm, "t%d.%s", k, w), j->f = orc_map(nm, len, skew))
		MAP(x, "x", j->n * 4, 4);
		MAP(y, "y", j->n * 4, 28);
		MAP(dx, "dx", j->n * 8, 8);
		MAP(dy, "dy", j->n * 8, 16);
		MAP(nt, "nt", j->n * 4, 0); /* 32-byte aligned for movntps */
		MAP(bc, "bc", j->n * 4, 0);
		MAP(gbase, "gbase", gspan * 4, 0);
		MAP(gidx, "gidx", j->ng * 4, 12);
		MAP(sbase, "sbase", gspan * 4, 0);
		MAP(sidx, "sidx", j->ng * 4, 36);
		MAP(ml, "maskload", j->pairs * 8192, 0);
		MAP(ms, "maskstore", j->pairs * 8192, 0);
		for (long i = 0; i < j->n; i++) {
			j->x[i] = (float)(i % 10);
			j->y[i] = 1;
			j->dx[i] = (double)(i % 3);
			j->dy[i] = 2;
			j->bc[i] = 1;
		}
		/* distinct indexes (the scatter must not collide), spread thin */
		for (long i = 0; i < j->ng; i++) {
			j->gidx[i] = (int)((uint64_t)i * (gspan / j->ng) + orc_rand(&seed) % 64);
			j->sidx[i] = (int)((uint64_t)i * (gspan / j->ng) + orc_rand(&seed) % 64);
			j->gbase[j->gidx[i]] = (int)i;
		}
		for (long i = j->ng - 1; i > 0; i--) { /* random order */
			long r = (long)(orc_rand(&seed) % (uint64_t)(i + 1));
			int t = j->gidx[i];
			j->gidx[i] = j->gidx[r];
			j->gidx[r] = t;
			t = j->sidx[i];
			j->sidx[i] = j->sidx[r];
			j->sidx[r] = t;
		}
		for (long q = 0; q < j->pairs; q++)
			for (int l = 0; l < 8; l++)
				if (ML_AT + 4 * l < 4096)
					j->ml[(q * 8192 + ML_AT) / 4 + l] = l + 1;
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
		long n = j->n;
		orc_check(j->y[n - 1] == 1 + j->reps * 0.5f * j->x[n - 1], "saxpy");
		orc_touch(t, j->x, n * 4, ORC_R);
		orc_touch(t, j->y, n * 4, ORC_RW);
		orc_touch(t, j->dx, n * 8, ORC_R);
		orc_touch(t, j->dy, n * 8, ORC_R);
		orc_touch(t, j->nt, n / 8 * 8 * 4, ORC_W);
		orc_check(j->nt[n / 8 * 8 - 1] == 2.5f, "stream_fill");
		for (long i = 0; i < n; i += 512)
			orc_touch(t, j->bc + i, 4, ORC_R);
		long gs = 0;
		for (long i = 0; i < j->ng; i++) {
			gs += j->gbase[j->gidx[i]];
			orc_touch(t, &j->gbase[j->gidx[i]], 4, ORC_R);
			orc_touch(t, &j->sbase[j->sidx[i]], 4, ORC_RW);
			orc_check(j->sbase[j->sidx[i]] == j->reps, "scatter_like");
		}
		orc_touch(t, j->gidx, j->ng * 4, ORC_R);
		orc_touch(t, j->sidx, j->ng * 4, ORC_R);
		orc_check(gs == j->gsum, "gather_sum");
		long ml = 0;
		for (long q = 0; q < j->pairs; q++) {
			orc_touch(t, (char *)j->ml + q * 8192 + ML_AT, 4 * ML_LANES, ORC_R);
			orc_touch(t, (char *)j->ms + q * 8192 + ML_AT, 4 * ML_LANES, ORC_W);
			for (int l = 0; l < ML_LANES; l++) {
				ml += j->ml[(q * 8192 + ML_AT) / 4 + l];
				orc_check(j->ms[(q * 8192 + ML_AT) / 4 + l] == (int)q + 1, "maskstore");
			}
		}
		orc_check(ml == j->mlsum, "maskload");
		check = check * 31 + (uint64_t)gs + (uint64_t)ml + (uint64_t)j->dot + (uint64_t)j->bsum;
	}
	orc_note("maskload/maskstore: %d lanes at page offset %#x; the masked-off lanes would lie on the next page, which is not accessed", ML_LANES, ML_AT);
	orc_write();
	printf("avx2 threads=%d scale=%ld reps=%ld check=%016llx\n", NTHR, scale, reps, (unsigned long long)check);
	return 0;
}

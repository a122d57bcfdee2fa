/* Driver of the mt workload: 8 threads in two waves of 4 (the second wave
 * starts after the first has been joined), each with a private array and
 * histogram and a slice of a shared table.
 * usage: mt_drv [SCALE [REPS]] */
#include "oracle.h"
#include "mt.h"

#define NTHR 8

struct job {
	int k;
	long reps, lo, hi, np;
	orc_self self;
	uint32_t *priv;
	uint64_t *hist, seed, seed0;
};

static const uint32_t *shared;

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	for (long r = 0; r < j->reps; r++)
		mt_work(shared, j->lo, j->hi, j->priv, j->np, j->hist, &j->seed);
	return 0;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 31;
	orc_workload("mt");
	long ns = 600000 * scale;
	uint32_t *sh = orc_map("shared", ns * sizeof *sh, 28);
	for (long i = 0; i < ns; i++)
		sh[i] = (uint32_t)orc_rand(&seed);
	shared = sh;
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->k = k;
		j->reps = reps;
		/* overlapping slices */
		j->lo = ns * k / (NTHR + 1);
		j->hi = ns * (k + 2) / (NTHR + 1);
		j->np = 100000 * scale + 333 * k;
		j->seed = j->seed0 = orc_rand(&seed);
		snprintf(nm, sizeof nm, "t%d.priv", k);
		j->priv = orc_map(nm, j->np * sizeof *j->priv, 4 * k);
		snprintf(nm, sizeof nm, "t%d.hist", k);
		j->hist = orc_map(nm, 256 * sizeof *j->hist, 4096 - 1024);
	}
	for (int wave = 0; wave < 2; wave++) {
		for (int k = wave * NTHR / 2; k < (wave + 1) * NTHR / 2; k++)
			if (pthread_create(&th[k], 0, work, &jobs[k]) != 0)
				orc_die("pthread_create");
		for (int k = wave * NTHR / 2; k < (wave + 1) * NTHR / 2; k++)
			pthread_join(th[k], 0);
	}

	uint64_t check = 0;
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		snprintf(nm, sizeof nm, "t%d", k);
		orc_thr *t = orc_thread_self(nm, &j->self);
		uint64_t s = j->seed0, h[256] = {0};
		for (long r = 0; r < j->reps; r++)
			for (long i = j->lo; i < j->hi; i++) {
				s = s * 6364136223846793005ULL + 1442695040888963407ULL;
				orc_touch(t, &j->priv[(s >> 33) % (uint64_t)j->np], 4, ORC_RW);
				h[sh[i] & 255]++;
			}
		orc_check(s == j->seed, "seed");
		orc_check(memcmp(h, j->hist, sizeof h) == 0, "histogram");
		orc_touch(t, &sh[j->lo], (j->hi - j->lo) * sizeof *sh, ORC_R);
		orc_touch(t, j->hist, 256 * sizeof *j->hist, ORC_RW);
		orc_touch(t, &j->seed, sizeof j->seed, ORC_RW);
		for (long i = 0; i < j->np; i++)
			check += j->priv[i] * (uint64_t)(i + 1);
	}
	orc_write();
	printf("mt threads=%d scale=%ld reps=%ld check=%016llx\n", NTHR, scale, reps, (unsigned long long)check);
	return 0;
}

/* Driver of the shared workload: 12 threads read one table built here,
 * each at the positions of its own random sequence, REPS times; the driver
 * replays the sequences, checks sums and histograms and writes the oracle.
 * usage: shared_drv [SCALE [REPS]] */
#include "oracle.h"
#include "shared.h"

#define NTHR 12

struct job {
	long reps, n;
	orc_self self;
	uint64_t seed, acc;
	uint32_t *hist;
};

static const uint64_t *table;
static uint64_t mask;

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	for (long r = 0; r < j->reps; r++)
		j->acc += shared_lookup(table, mask, j->seed + (uint64_t)r, j->n, j->hist);
	return 0;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 8086;
	orc_workload("shared");
	long nw = (1L << 20) * scale;
	if (nw & (nw - 1))
		orc_die("SCALE must be a power of two");
	mask = (uint64_t)nw - 1;
	uint64_t *t = orc_map("table", nw * sizeof *t, 0);
	for (long i = 0; i < nw; i++)
		t[i] = orc_rand(&seed) >> 4;
	table = t;
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->reps = reps;
		j->n = 100000 * scale + 1000 * k; /* about 50 reads a page per SCALE: every page */
		j->seed = orc_rand(&seed);
		snprintf(nm, sizeof nm, "t%d.hist", k);
		j->hist = orc_map(nm, 1024 * sizeof *j->hist, 2048);
	}
	for (int k = 0; k < NTHR; k++)
		if (pthread_create(&th[k], 0, work, &jobs[k]) != 0)
			orc_die("pthread_create");
	for (int k = 0; k < NTHR; k++)
		pthread_join(th[k], 0);

	uint64_t check = 0;
	uint32_t *hist = orc_xmalloc(1024 * sizeof *hist);
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		snprintf(nm, sizeof nm, "t%d", k);
		orc_thr *th = orc_thread_self(nm, &j->self);
		uint64_t acc = 0;
		memset(hist, 0, 1024 * sizeof *hist);
		for (long r = 0; r < reps; r++) {
			uint64_t s = j->seed + (uint64_t)r;
			for (long i = 0; i < j->n; i++) {
				s = s * 6364136223846793005ULL + 1442695040888963407ULL;
				const uint64_t *p = &t[(s >> 24) & mask];
				acc += *p;
				hist[*p & 1023]++;
				orc_touch(th, p, 8, ORC_R);
				orc_touch(th, &j->hist[*p & 1023], 4, ORC_RW);
			}
		}
		orc_check(acc == j->acc, "sum");
		orc_check(memcmp(hist, j->hist, 1024 * sizeof *hist) == 0, "histogram");
		check = check * 31 + acc;
	}
	free(hist);
	orc_write();
	printf("shared threads=%d scale=%ld reps=%ld check=%016llx\n", NTHR, scale, reps, (unsigned long long)check);
	return 0;
}

/* Driver of the probe workload: one table built here (never instrumented),
 * probed by 2 threads, each with its own keys (half of them present) and
 * output. The oracle replays the probes.
 * usage: probe_drv [SCALE [REPS]] */
#include "oracle.h"
#include "probe.h"

#define NTHR 2

struct job {
	long reps, n, hits;
	orc_self self;
	uint64_t *keys, *out;
};

static const struct bucket *table;
static uint64_t mask;

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	for (long r = 0; r < j->reps; r++)
		j->hits = probe_join(table, mask, j->keys, j->n, j->out);
	return 0;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 1234;
	orc_workload("probe");
	long nb = (1L << 17) * scale; /* 8 MiB per scale */
	if (nb & (nb - 1))
		orc_die("SCALE must be a power of two");
	mask = (uint64_t)nb - 1;
	struct bucket *t = orc_map("table", nb * sizeof *t, 0);
	long nbuild = nb / 2;
	uint64_t *built = orc_xmalloc(nbuild * sizeof *built);
	for (long i = 0; i < nbuild; i++) {
		uint64_t k = orc_rand(&seed) | 1;
		struct bucket *b = &t[probe_index(k, mask)];
		if (b->key == 0) {
			b->key = k;
			b->val = k >> 7;
		}
		built[i] = k; /* a key that lost its bucket to another misses */
	}
	table = t;
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->reps = reps;
		j->n = 100000 * scale + 77 * k;
		snprintf(nm, sizeof nm, "t%d.keys", k);
		j->keys = orc_map(nm, j->n * sizeof *j->keys, 40 * k);
		snprintf(nm, sizeof nm, "t%d.out", k);
		j->out = orc_map(nm, j->n * sizeof *j->out, 8);
		for (long i = 0; i < j->n; i++)
			j->keys[i] = i % 2 ? built[orc_rand(&seed) % nbuild] : orc_rand(&seed) << 1; /* even: never built */
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
		orc_thr *th = orc_thread_self(nm, &j->self);
		long hits = 0;
		for (long i = 0; i < j->n; i++) {
			uint64_t key = j->keys[i];
			const struct bucket *b = &t[probe_index(key, mask)];
			uint64_t v = b->key == key ? b->val : 0;
			hits += b->key == key;
			orc_check(j->out[i] == v, "probe result");
			orc_touch(th, &j->keys[i], 8, ORC_R);
			orc_touch(th, b, 16, ORC_R);
			orc_touch(th, &j->out[i], 8, ORC_W);
			check = check * 31 + v;
		}
		orc_check(hits == j->hits, "hit count");
		check = check * 31 + (uint64_t)hits;
	}
	free(built);
	orc_write();
	printf("probe threads=%d scale=%ld reps=%ld check=%016llx\n", NTHR, scale, reps, (unsigned long long)check);
	return 0;
}

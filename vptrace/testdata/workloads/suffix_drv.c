/* Driver of the suffix workload: a block of long equal runs with mostly
 * zero tags (comparisons go deep, as in a block sort's later buckets),
 * and 2 threads that each Shell-sort their own random positions by
 * suffix. The oracle replays each sort with the kernel's own code, its
 * reads of the block and the tags recorded; positions and budgets are
 * read and written.
 * usage: suffix_drv [SCALE [REPS]] */
#include "oracle.h"
#include "suffix.h"

#define NTHR 2

struct job {
	long reps, m, moved;
	orc_self self;
	uint32_t *idx, *init;
	int32_t *budget;
};

static uint8_t *block;
static uint16_t *tag;
static uint32_t n;

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	for (long r = 0; r < j->reps; r++) {
		memcpy(j->idx, j->init, j->m * sizeof *j->idx);
		j->moved = sfx_sort(block, tag, n, j->idx, j->m, j->budget);
	}
	return 0;
}

/* the replay: the kernel's code with its block and tag reads recorded */
static orc_thr *replaying;
#define SFX_AT(p) (orc_touch(replaying, (p), sizeof *(p), ORC_R), *(p))
#define SFX_GT replay_gt
#define SFX_SORT replay_sort
#include "suffix.h"

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 777;
	orc_workload("suffix");
	n = (uint32_t)(1 << 20) * (uint32_t)scale;
	block = orc_map("block", n + SFX_OVERSHOOT, 100);
	tag = orc_map("tag", (n + SFX_OVERSHOOT) * sizeof *tag, 200);
	/* runs of one byte, 1 to 2000 long, of a few symbols */
	for (uint32_t i = 0; i < n;) {
		uint64_t r = orc_rand(&seed);
		uint32_t len = 1 + (uint32_t)(r % 2000), c = 'a' + (uint32_t)((r >> 20) % 3);
		for (uint32_t k = 0; k < len && i < n; k++)
			block[i++] = (uint8_t)c;
	}
	for (uint32_t i = 0; i < n; i++)
		tag[i] = orc_rand(&seed) % 64 == 0 ? (uint16_t)(1 + orc_rand(&seed) % 3) : 0;
	for (uint32_t i = 0; i < SFX_OVERSHOOT; i++) {
		block[n + i] = block[i];
		tag[n + i] = tag[i];
	}
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->reps = reps;
		j->m = 3000 * scale + 7 * k;
		snprintf(nm, sizeof nm, "t%d.idx", k);
		j->idx = orc_map(nm, j->m * sizeof *j->idx, 40 * k);
		snprintf(nm, sizeof nm, "t%d.budget", k);
		j->budget = orc_map(nm, sizeof *j->budget, 0);
		*j->budget = 1 << 30;
		j->init = orc_xmalloc(j->m * sizeof *j->init);
		for (long i = 0; i < j->m; i++)
			j->init[i] = (uint32_t)(orc_rand(&seed) % n);
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
		replaying = orc_thread_self(nm, &j->self);
		/* one run: every repetition sorts the same positions alike */
		uint32_t *idx = orc_xmalloc(j->m * sizeof *idx);
		int32_t budget = 1 << 30;
		memcpy(idx, j->init, j->m * sizeof *idx);
		long moved = replay_sort(block, tag, n, idx, j->m, &budget);
		budget = (int32_t)((1L << 30) - j->reps * ((1L << 30) - budget));
		orc_check(moved == j->moved && budget == *j->budget, "moves and budget");
		orc_check(memcmp(idx, j->idx, j->m * sizeof *idx) == 0, "sorted positions");
		orc_touch(replaying, j->idx, j->m * sizeof *j->idx, ORC_RW);
		orc_touch(replaying, j->budget, sizeof *j->budget, ORC_RW);
		for (long i = 0; i < j->m; i++)
			check = check * 31 + idx[i];
		check = check * 31 + (uint64_t)moved + (uint64_t)(uint32_t)budget;
		free(idx);
	}
	orc_write();
	printf("suffix threads=%d scale=%ld reps=%ld n=%u check=%016llx\n", NTHR, scale, reps, n, (unsigned long long)check);
	return 0;
}

/* Driver of the hash workload: 2 threads, each with its own table, keys
 * (with repeats) to insert and keys to look up (half of them absent). The
 * oracle replays the probe sequences on a shadow table.
 * usage: hash_drv [SCALE [REPS]] */
#include "oracle.h"
#include "hash.h"

#define NTHR 2

struct job {
	int k;
	long reps, nins, nlook;
	orc_self self;
	uint64_t mask;
	struct slot *t;
	uint64_t *ins, *look, *vals;
	long added, found;
};

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	for (long r = 0; r < j->reps; r++) {
		j->added = hash_insert(j->t, j->mask, j->ins, j->nins);
		j->found = hash_lookup(j->t, j->mask, j->look, j->nlook, j->vals);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 99;
	orc_workload("hash");
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->k = k;
		j->reps = reps;
		long slots = (1L << 18) * scale; /* 16 MiB per scale */
		j->mask = (uint64_t)slots - 1;
		if (slots & (slots - 1))
			orc_die("SCALE must be a power of two");
		j->nins = 3000 * scale + 100 * k;
		j->nlook = 2 * j->nins;
		snprintf(nm, sizeof nm, "t%d.table", k);
		j->t = orc_map(nm, slots * sizeof(struct slot), 0);
		snprintf(nm, sizeof nm, "t%d.ins", k);
		j->ins = orc_map(nm, j->nins * sizeof(uint64_t), 24);
		snprintf(nm, sizeof nm, "t%d.look", k);
		j->look = orc_map(nm, j->nlook * sizeof(uint64_t), 48);
		snprintf(nm, sizeof nm, "t%d.vals", k);
		j->vals = orc_map(nm, j->nlook * sizeof(uint64_t), 8);
		for (long i = 0; i < j->nins; i++) /* clustered keys: long probe runs */
			j->ins[i] = i % 10 == 9 ? j->ins[i / 2] : (orc_rand(&seed) % (slots * 4)) + 1;
		for (long i = 0; i < j->nlook; i++)
			j->look[i] = i % 2 ? j->ins[(i / 2) % j->nins] : orc_rand(&seed) | (1ULL << 62);
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
		/* replay on a shadow table of keys: the kernel's table ends up
		 * with the same keys in the same slots */
		uint64_t *sh = orc_xmalloc((j->mask + 1) * sizeof *sh);
		long added = 0, found = 0;
		uint64_t vsum = 0;
		for (long r = 0; r < j->reps; r++) {
			added = 0;
			for (long i = 0; i < j->nins; i++) {
				uint64_t key = j->ins[i], h = hash_index(key, j->mask);
				orc_touch(t, &j->ins[i], 8, ORC_R);
				while (sh[h] != 0 && sh[h] != key) {
					orc_touch(t, &j->t[h], 8, ORC_R);
					h = (h + 1) & j->mask;
				}
				if (sh[h] == 0) {
					sh[h] = key;
					added++;
				}
				orc_touch(t, &j->t[h], sizeof(struct slot), ORC_RW);
			}
			found = 0;
			for (long i = 0; i < j->nlook; i++) {
				uint64_t key = j->look[i], h = hash_index(key, j->mask);
				orc_touch(t, &j->look[i], 8, ORC_R);
				orc_touch(t, &j->vals[i], 8, ORC_W);
				while (sh[h] != 0 && sh[h] != key) {
					orc_touch(t, &j->t[h], 8, ORC_R);
					h = (h + 1) & j->mask;
				}
				orc_touch(t, &j->t[h], 8, ORC_R);
				if (sh[h] == key) {
					orc_touch(t, &j->t[h], sizeof(struct slot), ORC_R);
					found++;
					orc_check(j->vals[i] == j->t[h].val + key * 3, "lookup value");
				} else {
					orc_check(j->vals[i] == 0, "lookup miss");
				}
			}
		}
		for (long i = 0; i < j->nlook; i++)
			vsum += j->vals[i];
		free(sh);
		orc_check(added == j->added, "insert count");
		orc_check(found == j->found, "lookup count");
		check = check * 31 + (uint64_t)added * 1000 + (uint64_t)found + vsum;
	}
	orc_write();
	printf("hash threads=%d scale=%ld reps=%ld check=%016llx\n", NTHR, scale, reps, (unsigned long long)check);
	return 0;
}

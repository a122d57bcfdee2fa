/* Driver of the chase workload: 2 threads, each with its own arenas and
 * lists; nodes are placed at random slots and linked in random order.
 * usage: chase_drv [SCALE [REPS]] */
#include "oracle.h"
#include "chase.h"

#define NTHR 2

struct job {
	int k;
	long reps;
	orc_self self;
	long nsmall, nbig;
	struct node *arena, *head;
	struct bignode *barena, *bhead;
	size_t slots, bslots;
	long sum1, sum2, bsum, cnt;
};

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	for (long r = 0; r < j->reps; r++) {
		j->sum1 = chase_sum(j->head);
		chase_inc(j->head);
		j->sum2 = chase_sum(j->head);
		j->bsum = chase_big(j->bhead);
		j->cnt = chase_count(j->head, j->nsmall / 2);
	}
	return 0;
}

/* pick returns n distinct random slots of [0, slots) in random order. */
static size_t *pick(size_t slots, long n, uint64_t *seed)
{
	size_t *perm = orc_xmalloc(sizeof *perm * slots);
	for (size_t i = 0; i < slots; i++)
		perm[i] = i;
	for (long i = 0; i < n; i++) {
		size_t k = i + orc_rand(seed) % (slots - i);
		size_t x = perm[i];
		perm[i] = perm[k];
		perm[k] = x;
	}
	return perm;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 1234;
	orc_workload("chase");
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->k = k;
		j->reps = reps;
		j->nsmall = 4000 * scale + 17 * k;
		j->nbig = 600 * scale + 5 * k;
		j->slots = (16u << 20) / sizeof(struct node) * scale;
		j->bslots = (size_t)(32u << 20) * scale / sizeof(struct bignode);
		snprintf(nm, sizeof nm, "t%d.arena", k);
		j->arena = orc_map(nm, j->slots * sizeof(struct node), 0);
		snprintf(nm, sizeof nm, "t%d.bigarena", k);
		j->barena = orc_map(nm, j->bslots * sizeof(struct bignode), 8);
		size_t *p = pick(j->slots, j->nsmall, &seed);
		for (long i = 0; i < j->nsmall; i++) {
			struct node *n = &j->arena[p[i]];
			n->val = (long)(orc_rand(&seed) % 1000);
			n->next = i + 1 < j->nsmall ? &j->arena[p[i + 1]] : 0;
		}
		j->head = &j->arena[p[0]];
		free(p);
		p = pick(j->bslots, j->nbig, &seed);
		for (long i = 0; i < j->nbig; i++) {
			struct bignode *n = &j->barena[p[i]];
			n->head = (long)(orc_rand(&seed) % 1000);
			n->tail = (long)(orc_rand(&seed) % 1000);
			n->next = i + 1 < j->nbig ? &j->barena[p[i + 1]] : 0;
		}
		j->bhead = &j->barena[p[0]];
		free(p);
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
		long s = 0, bs = 0, i = 0;
		for (struct node *n = j->head; n; n = n->next, i++) {
			s += n->val;
			/* chase_sum and chase_count read next (and val): read;
			 * chase_inc writes val: the node is read and written */
			orc_touch(t, &n->next, sizeof n->next, ORC_R);
			orc_touch(t, &n->val, sizeof n->val, ORC_RW);
		}
		orc_check(i == j->nsmall, "list length");
		orc_check(s == j->sum2, "chase_sum after chase_inc");
		orc_check(j->sum1 == j->sum2 - 2 * j->nsmall, "chase_inc");
		orc_check(j->cnt == j->nsmall / 2, "chase_count");
		for (struct bignode *n = j->bhead; n; n = n->next) {
			bs += n->head * 3 + n->tail;
			orc_touch(t, &n->next, sizeof n->next, ORC_R);
			orc_touch(t, &n->head, sizeof n->head, ORC_R);
			orc_touch(t, &n->tail, sizeof n->tail, ORC_R);
		}
		orc_check(bs == j->bsum, "chase_big");
		check = check * 31 + (uint64_t)s + (uint64_t)bs;
	}
	orc_write();
	printf("chase threads=%d scale=%ld reps=%ld check=%016llx\n", NTHR, scale, reps, (unsigned long long)check);
	return 0;
}

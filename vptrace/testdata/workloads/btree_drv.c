/* Driver of the btree workload: bulk-loads a B+-tree (nodes in an arena,
 * shuffled so that consecutive nodes of a level are far apart) and runs 2
 * threads of lookups over it. The oracle replays the searches.
 * usage: btree_drv [SCALE [REPS]] */
#include "oracle.h"
#include "btree.h"

#define NTHR 2

struct job {
	long reps, n, found;
	orc_self self;
	int64_t *q, *out;
};

static struct node *root;

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	for (long r = 0; r < j->reps; r++)
		j->found = bt_search(root, j->q, j->n, j->out);
	return 0;
}

/* the arena: nodes handed out in a shuffled order */
static struct node *arena;
static long *order, nnodes, used;

static struct node *node_new(int leaf)
{
	if (used >= nnodes)
		orc_die("arena too small");
	struct node *x = &arena[order[used++]];
	x->leaf = (uint32_t)leaf;
	return x;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 4242;
	orc_workload("btree");
	/* keys 3, 6, 9, ...: every third integer (the queries' misses are not) */
	long nkeys = 400000 * scale, per = BT_ORDER - 1 - 3; /* leaves not full */
	long nleaves = (nkeys + per - 1) / per;
	nnodes = nleaves * 2 + 64;
	arena = orc_map("nodes", nnodes * sizeof *arena, 0);
	order = orc_xmalloc(nnodes * sizeof *order);
	for (long i = 0; i < nnodes; i++)
		order[i] = i;
	for (long i = nnodes - 1; i > 0; i--) {
		long j = (long)(orc_rand(&seed) % (uint64_t)(i + 1)), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	/* the leaves, then each level above them, until one node */
	long nlev = nleaves;
	struct node **lev = orc_xmalloc(nlev * sizeof *lev);
	int64_t *low = orc_xmalloc(nlev * sizeof *low); /* each node's lowest key */
	for (long l = 0; l < nleaves; l++) {
		struct node *x = node_new(1);
		for (long i = l * per; i < nkeys && i < (l + 1) * per; i++) {
			x->keys[x->n] = 3 * (i + 1);
			x->u.vals[x->n] = (int64_t)(i * 7 + 1);
			x->n++;
		}
		lev[l] = x;
		low[l] = x->keys[0];
	}
	while (nlev > 1) {
		long up = 0;
		for (long l = 0; l < nlev; l += BT_ORDER - 4) {
			struct node *x = node_new(0);
			long m = 0;
			for (long c = l; c < nlev && c < l + BT_ORDER - 4; c++, m++) {
				x->u.child[m] = lev[c];
				if (m > 0)
					x->keys[m - 1] = low[c];
			}
			x->n = (uint32_t)(m - 1);
			low[up] = low[l];
			lev[up++] = x;
		}
		nlev = up;
	}
	root = lev[0];
	free(lev);
	free(low);
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->reps = reps;
		j->n = 60000 * scale + 13 * k;
		snprintf(nm, sizeof nm, "t%d.q", k);
		j->q = orc_map(nm, j->n * sizeof *j->q, 24);
		snprintf(nm, sizeof nm, "t%d.out", k);
		j->out = orc_map(nm, j->n * sizeof *j->out, 16 * k);
		for (long i = 0; i < j->n; i++) {
			int64_t r = (int64_t)(orc_rand(&seed) % (uint64_t)(3 * nkeys + 6));
			j->q[i] = i % 4 == 3 ? r : 3 * (r / 3 + 1); /* a quarter mostly absent */
		}
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
		long found = 0;
		for (long i = 0; i < j->n; i++) {
			int64_t key = j->q[i];
			orc_touch(t, &j->q[i], 8, ORC_R);
			const struct node *x = root;
			for (;;) {
				orc_touch(t, x, 8, ORC_R); /* n, leaf */
				if (x->leaf)
					break;
				uint32_t c = 0;
				while (c < x->n && key >= x->keys[c])
					c++;
				orc_touch(t, &x->keys[0], 8 * (c < x->n ? c + 1 : c), ORC_R);
				orc_touch(t, &x->u.child[c], 8, ORC_R);
				x = x->u.child[c];
			}
			int64_t v = -1;
			uint32_t c = 0;
			for (; c < x->n; c++)
				if (x->keys[c] == key)
					break;
			orc_touch(t, &x->keys[0], 8 * (c < x->n ? c + 1 : c), ORC_R);
			if (c < x->n) {
				v = x->u.vals[c];
				orc_touch(t, &x->u.vals[c], 8, ORC_R);
				found++;
			}
			int64_t want = key % 3 == 0 && key / 3 >= 1 && key / 3 <= nkeys ? (key / 3 - 1) * 7 + 1 : -1;
			orc_check(v == want && j->out[i] == v, "lookup result");
			orc_touch(t, &j->out[i], 8, ORC_W);
			check = check * 31 + (uint64_t)v;
		}
		orc_check(found == j->found, "found count");
		check = check * 31 + (uint64_t)found;
	}
	orc_write();
	printf("btree threads=%d scale=%ld reps=%ld nodes=%ld check=%016llx\n", NTHR, scale, reps, used, (unsigned long long)check);
	return 0;
}

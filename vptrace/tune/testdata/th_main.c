/* Driver of the th workload (never instrumented, see th.h); prints a
 * checksum.
 *   usage: th [threads] [rounds] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "th.h"

#define NODES 20000    /* 1.3 MiB of nodes per thread */
#define BIG (1L << 18) /* longs: 2 MiB */

static long rounds = 2;

/* Every worker has made all its allocations before any frees one: which
 * arena a thread gets, and whether its 2 MiB block is mapped of its own
 * or comes from the arena (glibc raises its mmap threshold at the first
 * free of such a block), then do not depend on how the threads' runs
 * interleave, and an arena per thread gives each run the same pages. */
static pthread_barrier_t allocated;

struct arg {
	long id, sum;
};

static void *worker(void *p)
{
	struct arg *w = p;
	struct node **v = malloc(NODES * sizeof *v);
	if (!v)
		abort();
	for (long i = 0; i < NODES; i++) {
		if (!(v[i] = malloc(sizeof **v)))
			abort();
		v[i]->key = i + w->id;
		v[i]->val = 0;
	}
	unsigned long x = 88172645463325252UL + (unsigned long)w->id;
	for (long i = NODES - 1; i > 0; i--) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		long j = (long)(x % (unsigned long)(i + 1));
		struct node *t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
	for (long i = 0; i < NODES; i++)
		v[i]->next = i + 1 < NODES ? v[i + 1] : 0;
	long *big = malloc(BIG * sizeof *big);
	if (!big)
		abort();
	pthread_barrier_wait(&allocated);
	th_fill(big, BIG, w->id);
	long s = th_chase(v[0], rounds);
	s += th_sweep(big, BIG, 3 + w->id);
	for (long i = 0; i < NODES; i++)
		free(v[i]);
	free(v);
	free(big);
	w->sum = s;
	return 0;
}

int main(int argc, char **argv)
{
	long nt = argc > 1 ? atol(argv[1]) : 8;
	if (argc > 2)
		rounds = atol(argv[2]);
	if (nt < 1 || nt > 64 || rounds < 1)
		return 2;
	long *mine = malloc(50000 * sizeof *mine);
	if (!mine)
		abort();
	th_fill(mine, 50000, 7);
	if (pthread_barrier_init(&allocated, 0, (unsigned)nt))
		abort();
	pthread_t th[64];
	struct arg args[64];
	for (long k = 0; k < nt; k++) {
		args[k].id = k;
		if (pthread_create(&th[k], 0, worker, &args[k]))
			abort();
	}
	long total = th_sweep(mine, 50000, 1);
	for (long k = 0; k < nt; k++) {
		pthread_join(th[k], 0);
		total += args[k].sum;
	}
	printf("th: %ld threads, %ld rounds, checksum %ld\n", nt, rounds, total);
	free(mine);
	return 0;
}

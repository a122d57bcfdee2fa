/* Driver of the tune tests' workload (never instrumented): two threads,
 * each with its own arrays and records; prints a checksum.
 *   usage: tw [rounds] [threads]
 *
 * Every thread allocates before any frees (the barrier): the layout is
 * then the same in every run but for the order of the threads' mappings,
 * which tune lines up. Without it, a thread that frees its mmapped arrays
 * early raises glibc's dynamic mmap threshold, and a thread allocating
 * after that gets its arrays from its arena instead, at other addresses
 * (or an exited thread's arena): one run in tens compared as not
 * comparable. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "tw.h"

#define N (1L << 15)    /* 256 KiB of longs per thread */
#define NREC 64         /* records (pages) per thread */
#define NTAB (1L << 16) /* shared table: 512 KiB */

static long rounds = 6;
static long table[NTAB];
static pthread_barrier_t allocated;

struct arg {
	long id, sum;
};

static void *worker(void *p)
{
	struct arg *w = p;
	long *a = malloc(N * sizeof *a);
	long *idx = malloc(N * sizeof *idx);
	struct rec *recs = calloc(NREC, sizeof *recs);
	if (!a || !idx || !recs)
		abort();
	pthread_barrier_wait(&allocated);
	unsigned long x = 88172645463325252UL + (unsigned long)w->id;
	for (long i = 0; i < N; i++) {
		a[i] = i;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		idx[i] = (long)(x % N);
	}
	long s = tw_mix(idx, a, N, rounds);
	s += tw_scan(table, NTAB);
	for (long k = 0; k < NREC; k++)
		tw_touch(&recs[(k * 37) % NREC], k);
	for (long k = 0; k < NREC; k++)
		s += recs[k].val;
	w->sum = s;
	free(a);
	free(idx);
	free(recs);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atol(argv[1]);
	long nt = argc > 2 ? atol(argv[2]) : 2;
	if (nt < 1 || nt > 16 || rounds < 1)
		return 2;
	for (long i = 0; i < NTAB; i++)
		table[i] = i;
	pthread_barrier_init(&allocated, 0, (unsigned)nt);
	pthread_t th[16];
	struct arg args[16];
	for (long k = 0; k < nt; k++) {
		args[k].id = k;
		pthread_create(&th[k], 0, worker, &args[k]);
	}
	long total = 0;
	for (long k = 0; k < nt; k++) {
		pthread_join(th[k], 0);
		total += args[k].sum;
	}
	printf("tw: %ld threads, %ld rounds, checksum %ld\n", nt, rounds, total);
	return 0;
}

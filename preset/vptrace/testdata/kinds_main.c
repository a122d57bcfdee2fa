/* Driver for kinds.c: in a thread of its own (its first event is in a
 * loop of kinds.c, while its probes still read the runtime's zeros), each
 * loop runs over pages of a table whose entries in the thread's cache
 * have other kinds by then. Prints the table's pages with the kinds the
 * thread must have recorded for each ("page 0x... R", "W" or "RW"). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

void rd(const long *a, const unsigned *idx, long n, long *sum);
void wr(long *a, const unsigned *idx, long n);
void rmw(long *a, const unsigned *idx, long n);

#define PAGES 160
#define PER (4096 / sizeof(long))

static long *table;
static long sum;

/* idx gets every element of pages [lo, hi) of the table, in a scrambled
 * order; returns how many */
static long indices(unsigned *idx, unsigned lo, unsigned hi)
{
	long n = (hi - lo) * PER;
	for (long i = 0; i < n; i++)
		idx[i] = lo * PER + (unsigned)((i * 2654435761u) % n);
	return n;
}

static void *work(void *arg)
{
	unsigned *idx = malloc(PAGES * PER * sizeof *idx);
	long n;
	(void)arg;
	/* A: written, then read (the read is a new kind: recorded) */
	n = indices(idx, 0, 32);
	wr(table, idx, n);
	n = indices(idx, 0, 64);
	rd(table, idx, n, &sum); /* B: read only, then read-modify-written */
	n = indices(idx, 32, 96);
	rmw(table, idx, n); /* C: both kinds at once, then read and written (nothing new) */
	n = indices(idx, 64, 96);
	rd(table, idx, n, &sum);
	wr(table, idx, n);
	n = indices(idx, 96, 128); /* D: read only */
	rd(table, idx, n, &sum);
	n = indices(idx, 128, 160); /* E: written only, twice */
	wr(table, idx, n);
	wr(table, idx, n);
	free(idx);
	return 0;
}

int main(void)
{
	pthread_t th;
	table = aligned_alloc(4096, PAGES * 4096);
	for (long i = 0; i < PAGES * (long)PER; i++)
		table[i] = i;
	if (pthread_create(&th, 0, work, 0) != 0 || pthread_join(th, 0) != 0)
		return 1;
	printf("sum %ld\n", sum);
	for (int p = 0; p < PAGES; p++)
		printf("page 0x%lx %s\n", (unsigned long)(uintptr_t)(table + p * PER), p < 96 ? "RW" : p < 128 ? "R" : "W");
	return 0;
}

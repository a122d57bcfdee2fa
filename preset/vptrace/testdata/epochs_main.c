/* Driver for kinds.c's rd (TestProbeEpochs): reads every element of a
 * table of PAGES pages in a scrambled order, round after round, for at
 * least MS milliseconds, so that with VPTRACE_INTERVAL_MS well below MS the
 * recent-page cache forgets the table's pages many times over: each
 * interval records each page again (the probes' keys take the new epoch
 * from the object's epoch word, which the runtime raises). Prints the
 * table's pages ("page 0x... R") and how long it ran ("ms N"). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void rd(const long *a, const unsigned *idx, long n, long *sum);

#define PAGES 64
#define PER (4096 / sizeof(long))
#define MS 300

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(void)
{
	long n = PAGES * PER, sum = 0;
	long *table = aligned_alloc(4096, PAGES * 4096);
	unsigned *idx = malloc(n * sizeof *idx);
	for (long i = 0; i < n; i++) {
		table[i] = i;
		idx[i] = (unsigned)((i * 2654435761u) % n);
	}
	double start = now_ms(), el;
	long rounds = 0;
	do {
		rd(table, idx, n, &sum);
		rounds++;
	} while ((el = now_ms() - start) < MS);
	for (int p = 0; p < PAGES; p++)
		printf("page 0x%lx R\n", (unsigned long)(table + p * PER));
	printf("ms %.0f rounds %ld sum %ld\n", el, rounds, sum);
	return 0;
}

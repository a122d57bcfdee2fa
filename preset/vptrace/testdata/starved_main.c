/* Driver for starved.c: calls starved on three pages of each of its
 * arrays in turn (both of a site's slots miss at every call), checks the
 * result against the same function compiled in (not instrumented), and
 * prints every page of the arrays ("page 0x... R" or "RW"). Exits 1 if a
 * result differs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STARVED reference
#include "starved.c"
#undef STARVED
long starved(const long *p, long *q, const long *r, long a, long b, long c);

#define PAGES 3

int main(void)
{
	long *p = aligned_alloc(4096, PAGES * 4096), *r = aligned_alloc(4096, PAGES * 4096);
	long *q = aligned_alloc(4096, PAGES * 4096), *qref = aligned_alloc(4096, PAGES * 4096);
	for (long i = 0; i < PAGES * 512; i++)
		p[i] = i * 7 + 1, r[i] = i * 13 + 5, q[i] = qref[i] = i;
	long sum = 0;
	for (long k = 0; k < 3000; k++) {
		long o = (k % PAGES) * 512;
		long got = starved(p + o, q + o, r + (2 - k % PAGES) * 512, k, k * 31 + 7, k ^ 0x5a5a);
		long want = reference(p + o, qref + o, r + (2 - k % PAGES) * 512, k, k * 31 + 7, k ^ 0x5a5a);
		if (got != want) {
			printf("call %ld: %ld, want %ld\n", k, got, want);
			return 1;
		}
		sum += got;
	}
	if (memcmp(q, qref, PAGES * 4096) != 0) {
		printf("the stores differ\n");
		return 1;
	}
	for (int i = 0; i < PAGES; i++)
		printf("page 0x%lx R\npage 0x%lx R\npage 0x%lx RW\n", (unsigned long)(p + i * 512),
		       (unsigned long)(r + i * 512), (unsigned long)(q + i * 512));
	printf("sum %ld\n", sum);
	return 0;
}

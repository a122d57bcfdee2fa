/* Driver for regions.c: runs gt_run over a block of bytes and a table of
 * 16-bit tags laid across page boundaries of a 6-page mapping, pairs of
 * runs chosen pseudo-randomly, and again its own copy (gt_ref, the same
 * body, which records the page of every read). Prints what both returned,
 * the pages gt_ref read ("page 0x... R") and the mapping's extent ("span
 * ADDR PAGES"). */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

int gt_run(unsigned i1, unsigned i2, const unsigned char *blk, const unsigned short *tag, unsigned n, int *budget);

static char *m;
static unsigned char read[6];

static void note(const void *p)
{
	read[((uintptr_t)p - (uintptr_t)m) >> 12] = 1;
}

#define GT_RUN gt_ref
#define AT(p) (note(p), *(p))
#include "regions.h"

int main(void)
{
	enum { N = 3000 };
	m = mmap(0, 6 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	/* blk: N bytes from 1200 before page 1 (pages 0-1); tag: N entries
	 * from 2000 bytes before page 3 (pages 2-3); pages 4-5 unread */
	unsigned char *blk = (unsigned char *)(m + 4096 - 1200);
	unsigned short *tag = (unsigned short *)(m + 3 * 4096 - 2000);
	uint64_t seed = 11;
	for (int i = 0; i < N; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		blk[i] = (seed >> 60) < 12 ? 'a' : 'b'; /* long equal runs */
		tag[i] = (uint16_t)(seed >> 62);
	}
	long got = 0, want = 0;
	int budget = 1 << 30, ref = 1 << 30;
	for (int k = 0; k < 20000; k++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		unsigned i1 = (unsigned)(seed >> 33) % N, i2 = (unsigned)(seed >> 13) % N;
		if (i1 == i2)
			continue;
		got = got * 3 + gt_run(i1, i2, blk, tag, N, &budget);
		want = want * 3 + gt_ref(i1, i2, blk, tag, N, &ref);
	}
	printf("gt %ld %ld budget %d %d\n", got, want, budget, ref);
	for (int p = 0; p < 6; p++)
		if (read[p])
			printf("page 0x%lx R\n", (unsigned long)(uintptr_t)(m + p * 4096));
	printf("span 0x%lx 6\n", (unsigned long)(uintptr_t)m);
	return got != want || budget != ref;
}

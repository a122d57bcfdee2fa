/* Driver for sweeps.c: runs every kernel on known memory and prints, after
 * the results, the pages each kernel must have touched ("page 0x..."). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

long fill(long *a, long n);
long strided(const char *p, long n, long stride);
long backwards(const int *a, long n);
long chase(long **p, long steps);
long early_exit(const long *a, long n, long key);
void scatter(const unsigned *in, long lo, long hi, unsigned *priv, long np, unsigned long *hist, unsigned long *seed);
int gtu(unsigned i1, unsigned i2, const unsigned char *block);
long spilled(const int *const *p, long n);
int mismatch(const char *l, const char *r);
int wmismatch(const int *a, const int *b);
struct snode {
	long n;
	long keys[15];
};
long search(const struct snode *nodes, long count, long k);
long best(const unsigned char *ip, const unsigned char *base, const unsigned *cand, long n, long *bestpos);
long alternate(const unsigned char *p, const unsigned *len, long n);
extern unsigned char sweeps_lower[256];

static void pages(const void *lo, size_t len) {
	uintptr_t a = (uintptr_t)lo >> 12, b = ((uintptr_t)lo + len - 1) >> 12;
	for (uintptr_t p = a; p <= b; p++)
		printf("page 0x%lx\n", (unsigned long)(p << 12));
}

int main(void) {
	long n = 300000;
	long *a = malloc(n * sizeof *a);
	printf("fill %ld\n", fill(a, n));
	pages(a, n * sizeof *a);

	char *c = calloc(1, 1 << 22);
	printf("strided %ld\n", strided(c + 100, (1 << 22) - 100, 4096 * 3));
	for (long i = 100; i < (1 << 22); i += 4096 * 3)
		pages(c + i, 1);
	printf("strided %ld\n", strided(c + (1 << 21), 40000, 24)); /* within pages: all of them */
	pages(c + (1 << 21), 40000 - 23);

	int *b = calloc(200001, sizeof *b);
	printf("backwards %ld\n", backwards(b, 200001));
	for (long i = 200000; i >= 0; i -= 2)
		pages(b + i, sizeof *b);

	long **nodes = malloc(64 * sizeof *nodes);
	char *arena = malloc(64 << 12);
	for (int i = 0; i < 64; i++)
		nodes[i] = (long *)(arena + ((i * 37) % 64 << 12));
	for (int i = 0; i < 63; i++)
		*nodes[i] = (long)nodes[i + 1];
	*nodes[63] = 0;
	printf("chase %ld\n", chase((long **)nodes[0], 1000));
	for (int i = 0; i < 64; i++)
		pages(nodes[i], sizeof(long));

	printf("early_exit %ld\n", early_exit(a, n, 123456));
	pages(a, 123457 * sizeof *a);

	/* scatter over 400 pages, of which it skips some */
	long np = 400 * 1024;
	unsigned *in = malloc(20000 * sizeof *in), *priv = calloc(np, sizeof *priv);
	char *hp = aligned_alloc(4096, 3 * 4096);
	unsigned long *hist = (unsigned long *)(hp + 4096 - 1024), seed = 5, s = seed;
	for (long i = 0; i < 20000; i++)
		in[i] = (unsigned)(i * 2654435761u);
	for (int i = 0; i < 256; i++)
		hist[i] = 0;
	scatter(in, 0, 2000, priv, np, hist, &seed);
	printf("scatter %lu\n", seed);
	pages(in, 2000 * sizeof *in);
	pages(&seed, sizeof seed);
	for (long i = 0; i < 2000; i++) {
		s = s * 6364136223846793005UL + 1442695040888963407UL;
		pages(&priv[(s >> 33) % (unsigned long)np], sizeof *priv);
		pages(&hist[in[i] & 255], sizeof *hist);
	}

	/* spilled: 12 arrays of 5000 ints, the first 3001 of each read */
	const int *arr[12];
	for (int k = 0; k < 12; k++) {
		int *x = malloc(5000 * sizeof *x);
		for (int i = 0; i < 5000; i++)
			x[i] = i * (k + 1);
		arr[k] = x;
	}
	printf("spilled %ld\n", spilled(arr, 3001));
	pages(arr, sizeof arr);
	for (int k = 0; k < 12; k++)
		pages(arr[k], 3001 * sizeof *arr[k]);

	/* mismatch: 3 pages alike from 100 bytes into the first (an X and
	 * an x among them), then a difference; then equal strings of 5000
	 * bytes */
	char *ma = aligned_alloc(4096, 8 * 4096), *mb = aligned_alloc(4096, 8 * 4096);
	memset(ma, 'x', 8 * 4096);
	memset(mb, 'x', 8 * 4096);
	ma[2000] = 'X';
	mb[100 + 3 * 4096] = 'y';
	printf("mismatch %d\n", mismatch(ma + 100, mb + 100));
	pages(&sweeps_lower['X'], 1);
	pages(&sweeps_lower['x'], 1);
	pages(&sweeps_lower['y'], 1);
	pages(ma + 100, 3 * 4096 + 1);
	pages(mb + 100, 3 * 4096 + 1);
	ma[4 * 4096 + 5000] = mb[4 * 4096 + 5000] = 0;
	printf("mismatch %d\n", mismatch(ma + 4 * 4096, mb + 4 * 4096));
	pages(ma + 4 * 4096, 5001);
	pages(mb + 4 * 4096, 5001);

	/* wmismatch: 3 pages alike from 100 words into the first (one word
	 * differing in its high bytes only), then a difference; then equal
	 * arrays of 5000 words */
	int *wa = aligned_alloc(4096, 16 * 4096), *wb = aligned_alloc(4096, 16 * 4096);
	for (int i = 0; i < 4 * 4096; i++)
		wa[i] = wb[i] = 'x';
	wa[2000] = 'X';
	wb[2000] = 'x' | 0x100;
	wb[100 + 3 * 1024] = 'y';
	printf("wmismatch %d\n", wmismatch(wa + 100, wb + 100));
	pages(&sweeps_lower['X'], 1);
	pages(&sweeps_lower['x'], 1);
	pages(&sweeps_lower['y'], 1);
	pages(wa + 100, 3 * 4096 + 4);
	pages(wb + 100, 3 * 4096 + 4);
	wa[8 * 1024 + 5000] = wb[8 * 1024 + 5000] = 0;
	printf("wmismatch %d\n", wmismatch(wa + 8 * 1024, wb + 8 * 1024));
	pages(wa + 8 * 1024, 5001 * sizeof *wa);
	pages(wb + 8 * 1024, 5001 * sizeof *wb);

	/* wmismatch again: a run within page 15 of the arrays (its exit finds
	 * the page inline), then one from page 14 that ends on page 15, which
	 * the cache has: page 14 must be recorded all the same */
	wb[15 * 1024 + 200] = 'z';
	printf("wmismatch %d\n", wmismatch(wa + 15 * 1024 + 100, wb + 15 * 1024 + 100));
	pages(&sweeps_lower['z'], 1);
	pages(wa + 15 * 1024 + 100, 101 * sizeof *wa);
	pages(wb + 15 * 1024 + 100, 101 * sizeof *wb);
	wb[15 * 1024 + 50] = 'z';
	printf("wmismatch %d\n", wmismatch(wa + 14 * 1024 + 100, wb + 14 * 1024 + 100));
	pages(wa + 14 * 1024 + 100, (1024 - 100 + 51) * sizeof *wa);
	pages(wb + 14 * 1024 + 100, (1024 - 100 + 51) * sizeof *wb);

	/* search: 2000 nodes (128 bytes each, 32 a page, 63 pages), whose
	 * key counts and keys vary; the key k = 50 stops each search at the
	 * first key above it or at its count */
	long nn = 2000;
	struct snode *sn = aligned_alloc(4096, nn * sizeof *sn);
	for (long i = 0; i < nn; i++) {
		sn[i].n = i % 16;
		for (long j = 0; j < 15; j++)
			sn[i].keys[j] = (i % 7) * 10 + j * (1 + i % 5);
	}
	printf("search %ld\n", search(sn, nn, 50));
	for (long i = 0; i < nn; i++) {
		pages(&sn[i].n, sizeof sn[i].n);
		long j = 0;
		while (j < sn[i].n && 50 >= sn[i].keys[j])
			j++;
		if (j > 0)
			pages(&sn[i].keys[0], j * sizeof(long));
		if (j < sn[i].n)
			pages(&sn[i].keys[j], sizeof(long));
	}

	/* gtu: equal suffixes (all 8 steps) whose first one crosses from the
	 * first page to the second after 3 bytes; then suffixes that differ
	 * at the second byte, one byte before the third page */
	unsigned char *blk = aligned_alloc(4096, 4 * 4096);
	for (int i = 0; i < 4 * 4096; i++)
		blk[i] = (unsigned char)(i % 7 == 0 ? 1 : 0);
	memset(blk + 4096 - 3, 9, 8);
	memset(blk + 3 * 4096 + 100, 9, 8);
	printf("gtu %d\n", gtu(4096 - 3, 3 * 4096 + 100, blk));
	pages(blk + 4096 - 3, 8);
	pages(blk + 3 * 4096 + 100, 8);
	blk[3 * 4096 - 1] = 5;
	blk[4096 + 10] = 5;
	blk[3 * 4096 - 1 + 1] = 6;
	blk[4096 + 10 + 1] = 7;
	printf("gtu %d\n", gtu(3 * 4096 - 1, 4096 + 10, blk));
	pages(blk + 3 * 4096 - 1, 2);
	pages(blk + 4096 + 10, 2);

	/* best: 16 pages of bytes that repeat with a drift, 3000 candidates
	 * in them, ip 10 bytes before the end of a page, a copy of 30 bytes of
	 * them (then 10 of elsewhere, then 30 more): most candidates match a
	 * few bytes, some up to 30, and the best length grows past 10, which
	 * moves ip + ml - 3 to the next page. The driver walks the loop as
	 * the kernel does and prints the pages it reads. */
	unsigned char *mb2 = aligned_alloc(4096, 16 * 4096), *ib = aligned_alloc(4096, 2 * 4096);
	for (long k = 0; k < 16 * 4096; k++)
		mb2[k] = (unsigned char)((k * 7 + k / 251) % 251);
	unsigned char *ip = ib + 4096 - 10;
	memcpy(ib, mb2, 4096 - 10);
	memcpy(ip, mb2 + 30000, 30);
	memcpy(ip + 30, mb2 + 5030, 10);
	memcpy(ip + 40, mb2 + 30040, 30);
	long nc = 3000;
	unsigned *cand = malloc(nc * sizeof *cand);
	unsigned long cs = 77;
	for (long k = 0; k < nc; k++) {
		cs = cs * 6364136223846793005UL + 1442695040888963407UL;
		cand[k] = (unsigned)((cs >> 33) % (16 * 4096 - 64));
	}
	cand[100] = 5000;
	cand[2000] = 30000;
	long bp;
	printf("best %ld", best(ip, mb2, cand, nc, &bp));
	printf(" at %ld\n", bp);
	pages(cand, nc * sizeof *cand);
	pages(&bp, sizeof bp);
	{
		long ml = 3;
		for (long i = 0; i < nc; i++) {
			const unsigned char *m = mb2 + cand[i];
			pages(m + ml - 3, 4);
			pages(ip + ml - 3, 4);
			if (memcmp(m + ml - 3, ip + ml - 3, 4) != 0)
				continue;
			long l = 0;
			while (l < 60) {
				pages(m + l, 1);
				pages(ip + l, 1);
				if (m[l] != ip[l])
					break;
				l++;
			}
			if (l > ml)
				ml = l;
		}
	}

	/* alternate: lengths odd and even, the reads across 3 pages */
	unsigned *lens = malloc(1000 * sizeof *lens);
	for (long k = 0; k < 1000; k++)
		lens[k] = (unsigned)((k * 37) % 8000);
	printf("alternate %ld\n", alternate(mb2, lens, 1000));
	pages(lens, 1000 * sizeof *lens);
	for (long k = 0; k < 1000; k++)
		pages(mb2 + (lens[k] & 1 ? lens[k] >> 1 : lens[k] >> 3), 4);
	return 0;
}

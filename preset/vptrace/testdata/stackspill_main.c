/* Driver for stackspill.S: runs ss_walk over a table of 8 pages of a
 * 10-page mapping (a page unread on each side) and its own copy in C
 * (ss_ref, which records the page of every read), then ss_hist over the
 * same 8 pages (read in full by ss_ref already), prints what both
 * returned, the pages ss_ref read ("page 0x... R") and the mapping's
 * extent ("span ADDR PAGES"). */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

long ss_walk(const long *tab, unsigned long mask, long n);
long ss_hist(const unsigned char *p, long n);

static char *m;
static unsigned char read[10];

static uint64_t at(const long *tab, uint64_t i)
{
	read[((uintptr_t)&tab[i] - (uintptr_t)m) >> 12] = 1;
	return (uint64_t)tab[i];
}

static long ss_ref(const long *tab, unsigned long mask, long n)
{
	uint64_t idx = 0, rdx = 0, rbx = 0, r8 = 0, r9 = 0, r10 = 0, r11 = 0, acc0 = 0, acc1 = 0, cnt = 0;
	for (long i = 0; i < n; i++) {
		rdx += at(tab, idx);
		idx = (idx + rdx + 1) & mask;
		rbx += at(tab, idx);
		r8 += rbx;
		r9 ^= r8;
		r10 += r9;
		r11 += 7;
		r11 ^= r10;
		acc0 += r11;
		acc1 ^= rdx;
		cnt += 3;
	}
	return (long)(acc0 + acc1 + cnt + rdx + rbx + r8 + r9 + r10 + r11 + 0x1111 + 0x2222 + 0x3333 + 0x4444 + 0x5555);
}

int main(void)
{
	enum { N = 8 * 512 };
	m = mmap(0, 10 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	long *tab = (long *)(m + 4096);
	uint64_t seed = 5;
	for (int i = 0; i < N; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		tab[i] = (long)(seed >> 7);
	}
	long got = 0, want = 0;
	for (long n = 0; n < 3000; n += 7) {
		got = got * 31 + ss_walk(tab, N - 1, n);
		want = want * 31 + ss_ref(tab, N - 1, n);
	}
	long hist[8] = {0}, sq = 0;
	for (int i = 0; i < N * 8; i++)
		hist[m[4096 + i] & 7]++;
	for (int k = 0; k < 8; k++)
		sq += hist[k] * hist[k];
	got = got * 31 + ss_hist((const unsigned char *)(m + 4096), N * 8);
	want = want * 31 + sq;
	printf("ss %ld %ld\n", got, want);
	for (int p = 0; p < 10; p++)
		if (read[p])
			printf("page 0x%lx R\n", (unsigned long)(uintptr_t)(m + p * 4096));
	printf("span 0x%lx 10\n", (unsigned long)(uintptr_t)m);
	return got != want;
}

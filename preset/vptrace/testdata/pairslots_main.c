/* Driver for pairslots.c: two histograms and two tables of 256 8-byte
 * entries, each 2 KiB across a page boundary (1 KiB on either side),
 * indexed by pseudo-random bytes: the second of each finds the slots
 * holding the first's pages; then a histogram 3 bytes off 8-byte alignment
 * (entry 127 crosses the boundary) and a table of 256 bytes across one. Prints the pages of both with the kinds of access
 * the instrumented functions made ("page 0x... RW", "R": the driver fills
 * the table itself) and their extent ("span ADDR PAGES"). */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

void hist_bytes(const uint8_t *in, long n, uint64_t *hist);
uint64_t sum_low(const uint32_t *in, long n, const uint64_t *table);
uint64_t sum_bytes(const uint8_t *in, long n, const uint8_t *table);
void hist_spread(const uint8_t *in, long n, uint64_t *hist);
uint64_t sum_spread(const uint8_t *in, long n, const uint8_t *table);

static void pages(const void *p, long from, long to, const char *kinds)
{
	for (uintptr_t q = ((uintptr_t)p + from) >> 12; q <= ((uintptr_t)p + to - 1) >> 12; q++)
		printf("page 0x%lx %s\n", (unsigned long)(q << 12), kinds);
}

int main(void)
{
	static uint8_t bytes[100000];
	static uint32_t words[100000];
	uint64_t seed = 7;
	for (long i = 0; i < 100000; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		bytes[i] = (uint8_t)(seed >> 56);
		words[i] = (uint32_t)(seed >> 24);
	}
	char *m = mmap(0, 12 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	uint64_t *hist[2], *table[2], s = 0;
	for (int k = 0; k < 2; k++) {
		hist[k] = (uint64_t *)(m + (2 * k + 1) * 4096 - 1024);
		table[k] = (uint64_t *)(m + (2 * k + 5) * 4096 - 1024);
		hist_bytes(bytes + k, 100000 - k, hist[k]);
	}
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < 256; i++)
			table[k][i] = hist[k][i] * 2654435761u;
		s += sum_low(words + k, 100000 - k, table[k]);
	}
	uint64_t *odd = (uint64_t *)(m + 9 * 4096 - 1021);
	hist_bytes(bytes, 100000, odd);
	const uint8_t *small = (const uint8_t *)(m + 11 * 4096 - 128);
	s += sum_bytes(bytes + 2, 100000 - 2, small);
	printf("sum %016llx\n", (unsigned long long)s);
	for (int k = 0; k < 2; k++) {
		pages(hist[k], 0, 2048, "RW");
		pages(table[k], 0, 2048, "R");
	}
	pages(odd, 0, 2048, "RW");
	pages(small, 0, 256, "R");
	printf("span 0x%lx 12\n", (unsigned long)(uintptr_t)m);

	/* hist_spread over a table 4 bytes before a page boundary of a new
	 * mapping (entries 0, 32, 64, ... cross a boundary): the bytes first
	 * touch its pages 0 and 1 (entry 0, across), 4, 2, 3, 6, 8, 7, then
	 * others of them over and over, never 3 or 7 again, nor 9. A run
	 * that took page 2 for a neighbour of page 4 would claim page 3
	 * before the code records it, one that took page 8 for the page
	 * after 6 would claim 7: they would be missing. */
	char *m2 = mmap(0, 10 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m2 == MAP_FAILED)
		return 1;
	uint64_t *spread = (uint64_t *)(m2 + 4096 - 4);
	static const uint8_t first[] = {0, 100, 40, 70, 170, 250, 200};
	static const uint8_t then[] = {140, 5, 45, 105, 145, 175, 255};
	static uint8_t in2[1200];
	for (int i = 0; i < 1200; i++)
		in2[i] = i < 7 ? first[i] : then[i % 7];
	hist_spread(in2, 1200, spread);
	printf("spread %llu\n", (unsigned long long)spread[140 * 16]);
	for (int k = 0; k < 7; k++) {
		pages(spread, first[k] * 128, first[k] * 128 + 8, "RW");
		pages(spread, then[k] * 128, then[k] * 128 + 8, "RW");
	}
	printf("span 0x%lx 10\n", (unsigned long)(uintptr_t)m2);
	/* sum_spread: the same order over a table of bytes, 128 apart, from
	 * 100 bytes into a third mapping: pages 0, 3, 1, 2, 5, 7, 6, then
	 * others, never 2 or 6 again, nor 8 or 9 */
	char *m3 = mmap(0, 10 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m3 == MAP_FAILED)
		return 1;
	static const uint8_t bfirst[] = {0, 100, 40, 70, 170, 250, 200};
	static const uint8_t bthen[] = {140, 5, 35, 105, 145, 175, 255};
	for (int i = 0; i < 1200; i++)
		in2[i] = i < 7 ? bfirst[i] : bthen[i % 7];
	printf("sum_spread %llu\n", (unsigned long long)sum_spread(in2, 1200, (const uint8_t *)m3 + 100));
	for (int k = 0; k < 7; k++) {
		pages(m3 + 100, bfirst[k] * 128, bfirst[k] * 128 + 1, "R");
		pages(m3 + 100, bthen[k] * 128, bthen[k] * 128 + 1, "R");
	}
	printf("span 0x%lx 10\n", (unsigned long)(uintptr_t)m3);
	return 0;
}

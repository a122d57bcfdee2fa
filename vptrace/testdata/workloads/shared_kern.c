// workload: shared
// about: 12 threads (six times the cores) share one table of 2^20 words
// about: (8 MiB, 2048 pages, per SCALE) and read it at random positions of
// about: a private random sequence, each counting the values in a private
// about: histogram
// test-args: 1
// bench-args: 4 4
#include "shared.h"

uint64_t shared_lookup(const uint64_t *table, uint64_t mask, uint64_t seed, long n, uint32_t *hist)
{
	uint64_t s = seed, acc = 0;
	for (long i = 0; i < n; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		uint64_t v = table[(s >> 24) & mask];
		acc += v;
		hist[v & 1023]++;
	}
	return acc;
}

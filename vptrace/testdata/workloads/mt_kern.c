// workload: mt
// about: 8 threads (more than cores: they are preempted and migrate), in
// about: two waves; each reads a slice of a shared table, scatters
// about: increments over a private array by a private random sequence and
// about: keeps a private histogram
// test-args: 1
// bench-args: 4 40
#include "mt.h"

void mt_work(const uint32_t *shared, long lo, long hi, uint32_t *priv, long nprivate, uint64_t *hist, uint64_t *seed)
{
	uint64_t s = *seed;
	for (long i = lo; i < hi; i++) {
		uint32_t v = shared[i];
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		priv[(s >> 33) % (uint64_t)nprivate] += v;
		hist[v & 255]++;
	}
	*seed = s;
}

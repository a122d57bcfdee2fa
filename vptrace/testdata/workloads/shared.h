/* shared: many threads reading one table at random. */
#include <stdint.h>

uint64_t shared_lookup(const uint64_t *table, uint64_t mask, uint64_t seed, long n, uint32_t *hist);

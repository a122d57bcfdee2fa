/* probe: the probe side of a hash join: a direct-mapped table of 64-byte
 * buckets, each probe key looked up in one random bucket. */
#include <stdint.h>

struct bucket {
	uint64_t key; /* 0: empty */
	uint64_t val;
	uint64_t pad[6]; /* 64 bytes: a bucket never straddles a page */
};

/* probe_index is shared by the kernel and the driver (the build side and
 * the oracle). */
static inline uint64_t probe_index(uint64_t key, uint64_t mask)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 29;
	return key & mask;
}

long probe_join(const struct bucket *t, uint64_t mask, const uint64_t *keys, long n, uint64_t *out);

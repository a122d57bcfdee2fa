/* hash: an open-addressing (linear probing) hash table. */
#include <stdint.h>

struct slot {
	uint64_t key; /* 0: empty */
	uint64_t val;
	uint64_t payload[6]; /* 64 bytes: a slot never straddles a page */
};

/* hash_index is shared by the kernel and the driver's oracle. */
static inline uint64_t hash_index(uint64_t key, uint64_t mask)
{
	key ^= key >> 31;
	key *= 0x7fb5d329728ea185ULL;
	key ^= key >> 27;
	return key & mask;
}

long hash_insert(struct slot *t, uint64_t mask, const uint64_t *keys, long n);
long hash_lookup(const struct slot *t, uint64_t mask, const uint64_t *keys, long n, uint64_t *vals);

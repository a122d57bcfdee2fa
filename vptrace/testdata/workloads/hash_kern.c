// workload: hash
// about: inserts into and lookups in an open-addressing table (linear
// about: probing) of 64-byte slots spread over 4096 pages, about half of
// about: them touched; keys read from an array, results written to another
// test-args: 1
// bench-args: 2 600
#include "hash.h"

long hash_insert(struct slot *t, uint64_t mask, const uint64_t *keys, long n)
{
	long added = 0;
	for (long i = 0; i < n; i++) {
		uint64_t k = keys[i], h = hash_index(k, mask);
		while (t[h].key != 0 && t[h].key != k)
			h = (h + 1) & mask;
		if (t[h].key == 0) {
			t[h].key = k;
			t[h].payload[0] = k * 3;
			t[h].payload[5] = (uint64_t)i;
			added++;
		}
		t[h].val += 1;
	}
	return added;
}

long hash_lookup(const struct slot *t, uint64_t mask, const uint64_t *keys, long n, uint64_t *vals)
{
	long found = 0;
	for (long i = 0; i < n; i++) {
		uint64_t k = keys[i], h = hash_index(k, mask);
		while (t[h].key != 0 && t[h].key != k)
			h = (h + 1) & mask;
		if (t[h].key == k) {
			vals[i] = t[h].val + t[h].payload[0];
			found++;
		} else {
			vals[i] = 0;
		}
	}
	return found;
}

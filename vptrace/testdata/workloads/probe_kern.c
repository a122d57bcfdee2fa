// workload: probe
// about: the probe phase of a hash join: random lookups of a key array in
// about: a table of 64-byte buckets shared by 2 threads (2^17 buckets, 2048
// about: pages, per SCALE: 16384 pages at the bench's 8), every probe on a
// about: page of its own; matches written to an output array
// test-args: 1
// bench-args: 8 24
#include "probe.h"

long probe_join(const struct bucket *t, uint64_t mask, const uint64_t *keys, long n, uint64_t *out)
{
	long hits = 0;
	for (long i = 0; i < n; i++) {
		uint64_t k = keys[i];
		const struct bucket *b = &t[probe_index(k, mask)];
		uint64_t v = 0;
		if (b->key == k) {
			v = b->val;
			hits++;
		}
		out[i] = v;
	}
	return hits;
}

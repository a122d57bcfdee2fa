// workload: btree
// about: lookups in a B+-tree of 512-byte nodes (about 16k nodes, 8 MiB,
// about: per SCALE): each lookup walks from the root to a leaf, a linear
// about: search in each node, one node a page; 2 threads share the tree,
// about: each with its own queries (a quarter of them absent) and results
// test-args: 1
// bench-args: 4 12
#include "btree.h"

long bt_search(const struct node *root, const int64_t *q, long n, int64_t *out)
{
	long found = 0;
	for (long i = 0; i < n; i++) {
		int64_t k = q[i];
		const struct node *x = root;
		while (!x->leaf) {
			uint32_t j = 0;
			while (j < x->n && k >= x->keys[j])
				j++;
			x = x->u.child[j];
		}
		int64_t v = -1;
		for (uint32_t j = 0; j < x->n; j++)
			if (x->keys[j] == k) {
				v = x->u.vals[j];
				found++;
				break;
			}
		out[i] = v;
	}
	return found;
}

// workload: leaf
// about: many short calls into instrumented leaf functions: accessors
// about: (get, set, length) of small vectors (8 pages, per SCALE) called
// about: from axpy and dot loops, which the compiler may not inline; every
// about: call reads the vector's header and one element; 2 threads
// test-args: 1
// bench-args: 1 2000
#include "leaf.h"

/* noipa: called as if from another translation unit (no purity or
 * constant propagation across the call either) */
#define LEAF __attribute__((noinline, noipa))

LEAF int64_t leaf_get(const struct vec *v, long i) { return v->data[i]; }

LEAF void leaf_set(struct vec *v, long i, int64_t x) { v->data[i] = x; }

LEAF long leaf_len(const struct vec *v) { return v->n; }

int64_t leaf_axpy(struct vec *y, const struct vec *x, int64_t a)
{
	int64_t s = 0;
	for (long i = 0; i < leaf_len(y); i++) {
		int64_t v = leaf_get(y, i) + a * leaf_get(x, i);
		leaf_set(y, i, v);
		s += v;
	}
	return s;
}

int64_t leaf_dot(const struct vec *x, const struct vec *y)
{
	int64_t s = 0;
	for (long i = 0; i < leaf_len(x); i++)
		s += leaf_get(x, i) * leaf_get(y, i);
	return s;
}

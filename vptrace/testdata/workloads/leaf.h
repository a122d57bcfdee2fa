/* leaf: small objects behind accessor functions the compiler may not
 * inline: many short calls, each an instrumented leaf function. */
#include <stdint.h>

struct vec {
	long n;
	int64_t *data;
};

int64_t leaf_get(const struct vec *v, long i);
void leaf_set(struct vec *v, long i, int64_t x);
long leaf_len(const struct vec *v);
int64_t leaf_axpy(struct vec *y, const struct vec *x, int64_t a);
int64_t leaf_dot(const struct vec *x, const struct vec *y);

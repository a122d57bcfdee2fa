/* btree: a B+-tree of 512-byte nodes (31 keys, 32 children), bulk-loaded
 * by the driver, searched by the kernel. */
#include <stdint.h>

#define BT_ORDER 32

struct node {
	uint32_t n;    /* keys in use */
	uint32_t leaf; /* 1: vals are values, else children */
	int64_t keys[BT_ORDER - 1];
	union {
		struct node *child[BT_ORDER]; /* child[i]: keys < keys[i] (and >= keys[i-1]) */
		int64_t vals[BT_ORDER];       /* leaf: vals[i] goes with keys[i] */
	} u;
};

long bt_search(const struct node *root, const int64_t *q, long n, int64_t *out);

// workload: chase
// about: pointer chasing through lists whose nodes lie at random places in
// about: big arenas: 64-byte nodes (read, then read-modify-write) and
// about: 3 KiB nodes read at offsets 0 and 3000 (same base register, two
// about: pages for most nodes)
// test-args: 1
// bench-args: 4 60
#include "chase.h"

long chase_sum(const struct node *n)
{
	long s = 0;
	for (; n; n = n->next)
		s += n->val;
	return s;
}

void chase_inc(struct node *n)
{
	for (; n; n = n->next)
		n->val += 2;
}

long chase_big(const struct bignode *n)
{
	long s = 0;
	for (; n; n = n->next)
		s += n->head * 3 + n->tail;
	return s;
}

long chase_count(const struct node *n, long steps)
{
	long c = 0;
	while (n && c < steps) {
		n = n->next;
		c++;
	}
	return c;
}

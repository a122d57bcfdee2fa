// outofline_main.c: drives outofline.c (TestOutOfLine): a 4 MiB table
// and a list of 4096 nodes, one a page, linked in a scrambled order.
#include <stdio.h>
#include <stdlib.h>

struct node {
	struct node *next;
	long v;
};

long lcg(const long *t, unsigned long mask, long n);
long chase(const struct node *p);

int main(void)
{
	enum { entries = 1 << 19, nodes = 4096, stride = 4096 / sizeof(struct node) };
	long *t = malloc(entries * sizeof *t);
	struct node *pool = calloc((size_t)nodes * stride, sizeof *pool);
	if (!t || !pool)
		return 1;
	for (long i = 0; i < entries; i++)
		t[i] = i * 7 % 1000;
	struct node *head = NULL;
	for (long i = 0; i < nodes; i++) {
		struct node *n = &pool[(i * 1237 % nodes) * stride];
		n->v = i;
		n->next = head;
		head = n;
	}
	printf("%ld %ld\n", lcg(t, entries - 1, 1000000), chase(head));
	return 0;
}

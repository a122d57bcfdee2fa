/* The instrumented part of the th workload (see th.h). */
#include "th.h"

/* Follows the list rounds times. */
long th_chase(struct node *n, long rounds)
{
	long s = 0;
	for (long r = 0; r < rounds; r++)
		for (struct node *p = n; p; p = p->next) {
			p->val += p->key;
			s += p->val;
		}
	return s;
}

long th_sweep(long *a, long n, long step)
{
	long s = 0;
	for (long i = 0; i < n; i += step)
		s += a[i]++;
	return s;
}

void th_fill(long *a, long n, long seed)
{
	for (long i = 0; i < n; i++)
		a[i] = seed + i;
}

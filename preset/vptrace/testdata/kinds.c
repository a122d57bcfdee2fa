/* Random accesses of one kind per loop (the index comes from memory: no
 * sweep), in loops whose checks find the recent-page cache's address in a
 * register of their own (spill.go, probe.go). Such a probe compares the
 * key with the access's own kinds, then with both kinds: a read or a
 * write is recorded again on a page the thread recorded for the other
 * kind only, never on one it recorded for both. */
void rd(const long *a, const unsigned *idx, long n, long *sum)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += a[idx[i]];
	*sum = s;
}

void wr(long *a, const unsigned *idx, long n)
{
	for (long i = 0; i < n; i++)
		a[idx[i]] = i;
}

void rmw(long *a, const unsigned *idx, long n)
{
	for (long i = 0; i < n; i++)
		a[idx[i]] += 3;
}

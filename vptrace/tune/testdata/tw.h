/* tw: the small workload of the tune tests. Kernels (tw_kern.c, the
 * instrumented object) of different loop depths, so that the threshold T
 * changes what is traced: a doubly nested loop (the hottest blocks), a
 * simple loop, and straight-line code called once per record. */
struct rec {
	long key, val, hits;
	char pad[4096 - 3 * sizeof(long)]; /* one record per page */
};

long tw_mix(const long *idx, long *a, long n, long rounds);
long tw_scan(const long *a, long n);
void tw_touch(struct rec *r, long key);

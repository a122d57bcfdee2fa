/* mapped.c: functions whose sites, with tls indirect, find this thread's
 * slot array tested by the code of a site that ran before in the same
 * call (TestArrayTests). */

/* diamond: the first site's block dominates the others: one test. */
long diamond(const long *a, const long *b, int c) {
	long s = a[0];
	if (c)
		s += b[1] * 3;
	else
		s -= b[2];
	return s + a[600];
}

/* cond: the first site runs on one path only: the site after the merge
 * tests the array too (a thread's first call may take the other path). */
long cond(const long *a, int c) {
	long s = 0;
	if (c)
		s = a[0] * 7;
	return s + a[900];
}

/* after: a loop over b (a sweep, whose entry code tests the array), then
 * a read after it, which every run of the loop's header precedes: one
 * test. */
long after(const long *b, long n) {
	if (!b)
		return 0;
	long s = 0, i = 0;
	do
		s += b[i++];
	while (i < n);
	return s + b[n + 600];
}

/* before: a read, then a loop over b (a sweep) whose entry code runs
 * after the read's: one test, the read's. */
long before(const long *a, const long *b, long n) {
	long s = a[1];
	for (long i = 0; i < n; i++)
		s += b[i];
	return s + a[700];
}

/* spun: a loop of look-ups by a hash of the counter (no sweep), whose
 * registers are saved once a run with the slot base (spill.go: its
 * entry tests the array), then a read after it: one test. */
long spun(const long *t, long n, const long *a) {
	if (!t)
		return 0;
	long s = 0, i = 0;
	do
		s += t[(i * 2654435761u) >> 22 & 1023];
	while (++i < n);
	return s + a[800];
}

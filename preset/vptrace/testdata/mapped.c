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

/* The code being traced. */
long work_fill(long *a, long n, long seed) {
	long s = 0;
	for (long i = 0; i < n; i++)
		a[i] = i ^ seed;
	for (long i = 0; i < n; i += 3)
		s += a[i];
	return s;
}

long work_shared(const long *t, long n, long stride) {
	long s = 0;
	for (long i = 0; i < n; i += stride * 512)
		s += t[i];
	return s;
}

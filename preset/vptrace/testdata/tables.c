/* Look-ups for TestSecondSlotRule: which sites get a second last-page
 * slot. accessor has no loop; the loops index a table by a value bounded
 * by its definition (a zero-extended byte, a right shift, an and) within
 * 8 KiB, or not bounded so (a 32-bit load, a shift that leaves 24 or 63 bits). */
long accessor(const long *p) { return *p; }

long bytes(const unsigned char *x, long n, const long *tab)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += tab[x[i]];
	return s;
}

long shifted(const unsigned long *x, long n, const int *tab)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += tab[x[i] >> 53];
	return s;
}

long masked(const unsigned long *x, long n, const long *tab)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += tab[x[i] & 1023];
	return s;
}

long words(const unsigned *x, long n, const long *tab)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += tab[x[i]];
	return s;
}

long wide(const unsigned long *x, long n, const int *tab)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += tab[x[i] >> 40];
	return s;
}

long halved(const unsigned long *x, long n, const long *tab)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += tab[x[i] >> 1]; /* (2^63 entries of 8 bytes: 2^66 bytes, past 64 bits) */
	return s;
}

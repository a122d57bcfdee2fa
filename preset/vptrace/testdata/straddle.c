/* Accesses that may cross a page boundary, outside loops and in a loop
 * whose index comes from memory (no sweep): when the bytes cross, both
 * pages are recorded through the stub, the first only where the site's
 * slot lacks it. */
#include <string.h>

long get8(const char *p)
{
	long v;
	memcpy(&v, p, 8);
	return v;
}

void put4(char *p, int v)
{
	memcpy(p, &v, 4);
}

long gather(const char *base, const unsigned *off, long n)
{
	long s = 0;
	for (long i = 0; i < n; i++) {
		long v;
		memcpy(&v, base + off[i], 8);
		s += v;
	}
	return s;
}

/* kern.c: the instrumented side of the shared-library tests, built once
 * per component with -DKERN=<name> (a library, another library, the
 * program itself, a plugin): kern_<name>_sum, kern_<name>_fill and the
 * interposed kern_helper. They call nothing and touch only their
 * arguments' memory: the driver (shlib.c) knows every page they touch. */
#include "kern.h"

/* Ten sums and four pointers live at once: the compiler keeps some of them
 * in r10 and r11, across the loads vptrace instruments. A lazy-binding
 * resolver that ran on the first call into the runtime would clobber them
 * (glibc's saves the argument registers only). */
long KERN_FN(sum)(const long *a, const long *b, const long *c, const long *d, long n)
{
	long s0 = 1, s1 = 2, s2 = 3, s3 = 4, s4 = 5, s5 = 6, s6 = 7, s7 = 8, s8 = 9, s9 = 10;
	for (long i = 0; i < n; i++) {
		s0 += a[i] * 3;
		s1 ^= b[i];
		s2 += c[i] << 1;
		s3 -= d[i];
		s4 += a[i] ^ s1;
		s5 += b[i] | s2;
		s6 ^= c[i] + s3;
		s7 += d[i] - s4;
		s8 += s5 ^ s6;
		s9 ^= s7 + s8;
	}
	return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9;
}

/* Writes p[0..n), then reads one long per page through kern_helper, which
 * every component defines: the calls from every component go to the
 * first definition the loader finds (the program's), not their own. */
long KERN_FN(fill)(long *p, long n, long v)
{
	for (long i = 0; i < n; i++)
		p[i] = v ^ (i * 7);
	return kern_helper(p, n);
}

long kern_helper(const long *p, long n)
{
	long s = 0;
	for (long i = 0; i < n; i += 512)
		s += p[i];
	return s;
}

/* The kern_helper this component's code calls (the loader's choice). */
void *KERN_FN(helper)(void)
{
	return (void *)kern_helper;
}

/* One load, no loop: one site whose last-page slot decides whether the
 * runtime hears of the page (TestShlibFork). */
long KERN_FN(peek)(const long *p)
{
	return *p;
}

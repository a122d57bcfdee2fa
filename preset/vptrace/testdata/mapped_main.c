/* Driver for mapped.c: a new thread's first instrumented call is
 * cond(a, 0), whose conditional site does not run (the site after it
 * must map the thread's slot array); then diamond both ways, and after.
 * Prints the pages the calls read ("page 0x..."). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

long diamond(const long *a, const long *b, int c);
long cond(const long *a, int c);
long after(const long *b, long n);
long before(const long *a, const long *b, long n);
long spun(const long *t, long n, const long *a);

static long *a, *b;

static void page(const void *p) { printf("page 0x%lx\n", (unsigned long)((uintptr_t)p >> 12 << 12)); }

static void *run(void *arg) {
	(void)arg;
	long s = cond(a, 0);
	s += diamond(a, b, 1) + diamond(a, b, 0) + cond(a, 1);
	s += after(b + 1024, 300); /* b[1024..1323], b[1924]: pages 2 and 3 */
	s += before(a, b + 1024, 300); /* a[1], a[700]; b as after's */
	s += spun(b, 500, a); /* b[0..1023] by a hash of i, a[800] */
	return (void *)s;
}

int main(void) {
	a = aligned_alloc(4096, 4 * 4096);
	b = aligned_alloc(4096, 4 * 4096);
	for (int i = 0; i < 2048; i++)
		a[i] = b[i] = i;
	pthread_t t;
	void *r;
	if (pthread_create(&t, NULL, run, NULL) != 0 || pthread_join(t, &r) != 0)
		return 1;
	printf("sum %ld\n", (long)r);
	page(&a[0]);
	page(&a[600]);
	page(&a[900]);
	page(&b[1]);
	page(&b[2]);
	page(&b[1024]);
	page(&b[1323]);
	page(&b[1924]);
	for (long i = 0; i < 500; i++)
		page(&b[(i * 2654435761u) >> 22 & 1023]);
	page(&a[800]);
	return 0;
}

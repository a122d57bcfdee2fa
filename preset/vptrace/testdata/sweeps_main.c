/* Driver for sweeps.c: runs every kernel on known memory and prints, after
 * the results, the pages each kernel must have touched ("page 0x..."). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

long fill(long *a, long n);
long strided(const char *p, long n, long stride);
long backwards(const int *a, long n);
long chase(long **p, long steps);
long early_exit(const long *a, long n, long key);

static void pages(const void *lo, size_t len) {
	uintptr_t a = (uintptr_t)lo >> 12, b = ((uintptr_t)lo + len - 1) >> 12;
	for (uintptr_t p = a; p <= b; p++)
		printf("page 0x%lx\n", (unsigned long)(p << 12));
}

int main(void) {
	long n = 300000;
	long *a = malloc(n * sizeof *a);
	printf("fill %ld\n", fill(a, n));
	pages(a, n * sizeof *a);

	char *c = calloc(1, 1 << 22);
	printf("strided %ld\n", strided(c + 100, (1 << 22) - 100, 4096 * 3));
	for (long i = 100; i < (1 << 22); i += 4096 * 3)
		pages(c + i, 1);
	printf("strided %ld\n", strided(c + (1 << 21), 40000, 24)); /* within pages: all of them */
	pages(c + (1 << 21), 40000 - 23);

	int *b = calloc(200001, sizeof *b);
	printf("backwards %ld\n", backwards(b, 200001));
	for (long i = 200000; i >= 0; i -= 2)
		pages(b + i, sizeof *b);

	long **nodes = malloc(64 * sizeof *nodes);
	char *arena = malloc(64 << 12);
	for (int i = 0; i < 64; i++)
		nodes[i] = (long *)(arena + ((i * 37) % 64 << 12));
	for (int i = 0; i < 63; i++)
		*nodes[i] = (long)nodes[i + 1];
	*nodes[63] = 0;
	printf("chase %ld\n", chase((long **)nodes[0], 1000));
	for (int i = 0; i < 64; i++)
		pages(nodes[i], sizeof(long));

	printf("early_exit %ld\n", early_exit(a, n, 123456));
	pages(a, 123457 * sizeof *a);
	return 0;
}

/* kitchen.c: one translation unit with most of what compilers put into an
 * object: loops, a switch (jump table), static and global functions,
 * function pointers, string literals (SHF_MERGE), constants, .bss/.data,
 * thread-local variables, init/fini arrays, a computed goto-free
 * interpreter loop and a noreturn call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int counter = 7;
static long table[64];
__thread int tls_hits;
const char *names[] = {"zero", "one", "two", "three", "four", "five", "six", "seven"};

static int classify(int x) {
	switch (x % 9) {
	case 0: return x * 3;
	case 1: return x - 11;
	case 2: return x ^ 0x55;
	case 3: return (int)strlen(names[x & 7]);
	case 4: return x / 7;
	case 5: return -x;
	case 6: return x << 2;
	case 7: return x | 1;
	default: return 42;
	}
}

int apply(int (*fn)(int), int n) {
	int s = 0;
	for (int i = 0; i < n; i++) {
		s += fn(i);
		tls_hits++;
	}
	return s;
}

static int twice(int x) { return 2 * x + counter; }

__attribute__((noinline)) double average(const double *v, int n) {
	double s = 0;
	for (int i = 0; i < n; i++)
		s += v[i];
	return n ? s / n : 0.0;
}

__attribute__((noreturn, noinline)) static void die(const char *msg) {
	fprintf(stderr, "fatal: %s\n", msg);
	exit(3);
}

__attribute__((constructor)) static void setup(void) { table[1] = 100; }

int main(int argc, char **argv) {
	double v[16];
	for (int i = 0; i < 16; i++)
		v[i] = i * 1.25;
	for (int i = 0; i < 64; i++)
		table[i] += classify(i * argc + 3);
	long sum = 0;
	for (int i = 0; i < 64; i++)
		for (int j = 0; j <= i; j++)
			sum += table[j] & 0xff;
	printf("%d %d %.3f %ld %d %s\n", apply(classify, 50), apply(twice, 10), average(v, 16), sum, tls_hits, names[argc % 8]);
	if (argc > 3)
		die(argv[1]);
	return 0;
}

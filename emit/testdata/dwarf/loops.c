/* Test input for emit's debug information rewriting: loops, a switch, a
   static function that gets inlined at -O2, a recursive function, and a
   main that the gdb test stops in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct acc {
	long sum;
	int count;
	int hist[8];
};

static inline int classify(int v)
{
	switch (v & 7) {
	case 0:
		return v * 3;
	case 1:
		return v + 11;
	case 2:
		return v ^ 0x55;
	case 3:
		return -v;
	case 4:
		return v << 2;
	case 5:
		return v / 7;
	default:
		return v - 1;
	}
}

static void add(struct acc *a, int v)
{
	a->sum += v;
	a->count++;
	a->hist[v & 7]++;
}

__attribute__((noinline)) long sweep(const int *xs, int n, struct acc *a)
{
	long total = 0;
	for (int i = 0; i < n; i++) {
		int c = classify(xs[i]);
		add(a, c);
		total += c; /* BREAK-LOOP */
	}
	return total;
}

__attribute__((noinline)) int fib(int n)
{
	if (n < 2)
		return n;
	return fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) void fill(int *xs, int n, unsigned seed)
{
	for (int i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		xs[i] = (int)(seed >> 8) % 1000;
	}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64;
	int *xs = malloc(sizeof(int) * (size_t)n);
	struct acc a;
	memset(&a, 0, sizeof a);
	fill(xs, n, 42);
	long t = sweep(xs, n, &a);
	for (int k = 0; k < 8; k++)
		printf("%d ", a.hist[k]);
	printf("\n%ld %d %ld fib=%d\n", t, a.count, a.sum, fib(15));
	free(xs);
	return 0;
}

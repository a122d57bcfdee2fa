// blockcount.c: a program whose basic blocks run a known number of times
// per thread, for the blockcount preset's tests. Thread t (t = 0..3) calls
// work() exactly t+1 times with the same argument, so every block of
// work()'s call tree runs t+1 times as often in thread t as in one call:
// a thread's counts are a multiple of one call's. The loops' trip counts
// come from the command line (the compiler cannot fold them), and the
// volatile sink keeps them from being vectorised away; the switch and the
// recursion give jump tables and calls. Prints a checksum, the same
// instrumented or not.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define THREADS 4

static volatile long sink;
static long n_outer, n_inner;

__attribute__((noinline)) static long inner(long i, long m)
{
	long s = 0;
	for (long j = 0; j < m; j++) {
		sink = j;
		s += (i ^ j) & 7;
	}
	return s;
}

// a loop counting down (a negative step)
__attribute__((noinline)) static long down(long n)
{
	long s = 0;
	for (long i = n; i > 0; i--) {
		sink = i;
		s += i & 3;
	}
	return s;
}

static double vec[256];

// a pointer stepping by 8 (a step that is a power of two above 1)
__attribute__((noinline)) static double sumv(long n)
{
	double s = 0;
	for (const volatile double *p = vec; p < vec + n; p++)
		s += *p;
	return s;
}

__attribute__((noinline)) static long classify(long x)
{
	switch (x % 7) {
	case 0: return x * 3;
	case 1: return x + 11;
	case 2: return x ^ 0x55;
	case 3: return x - 2;
	case 4: return x << 2;
	case 5: return x >> 1;
	default: return -x;
	}
}

__attribute__((noinline)) static long fib(long n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) long work(long n, long m)
{
	long s = 0;
	for (long i = 0; i < n; i++) {
		s += inner(i, m) + down(i % 17) + (long)sumv(i % 200);
		if (i % 3 == 0)
			s += classify(i);
		sink = s;
	}
	return s + fib(12);
}

// spin: a loop a thread is still in when the process exits (main with
// argument "spin"): its count must be what it completed (0), never a
// count made of half a loop run.
__attribute__((noinline)) static long spin(const volatile long *p, long n)
{
	long s = 0;
	for (const volatile long *q = p; q < p + n; q += 1)
		s += *q & 1;
	return s;
}

static volatile long zeros[1 << 16];

static void *spinner(void *arg)
{
	(void)arg;
	for (;;)
		sink = spin(zeros, 1 << 16);
	return NULL;
}

static long results[THREADS];

static void *worker(void *arg)
{
	long t = (long)arg, s = 0;
	for (long k = 0; k <= t; k++)
		s += work(n_outer, n_inner);
	results[t] = s;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1 && argv[1][0] == 's') {
		pthread_t t;
		if (pthread_create(&t, NULL, spinner, NULL) != 0)
			return 1;
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
		printf("spun\n");
		exit(0);
	}
	n_outer = argc > 1 ? atol(argv[1]) : 100;
	n_inner = argc > 2 ? atol(argv[2]) : 50;
	for (int i = 0; i < 256; i++)
		vec[i] = i * 0.5;
	pthread_t th[THREADS];
	for (long t = 0; t < THREADS; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)t) != 0)
			return 1;
	long total = 0;
	for (long t = 0; t < THREADS; t++) {
		pthread_join(th[t], NULL);
		total += results[t];
	}
	printf("checksum %ld\n", total);
	return 0;
}

/*
 * prog.c: an ordinary C program for TestInstrumented: compiled, rewritten
 * by hijack's vptrace preset, linked with the runtime. It prints, per
 * thread, the ranges its instrumented loops touch:
 *     R <tid> <first byte hex> <bytes up to the last byte touched>
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static char gtab[64 * 4096];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) long sweep(const char *p, long n)
{
	long s = 0;
	for (long i = 0; i < n; i += 64)
		s += p[i];
	return s;
}

__attribute__((noinline)) void fill(char *p, long n)
{
	for (long i = 0; i < n; i += 512)
		p[i] = (char)i;
}

static void report(const void *p, long n)
{
	pthread_mutex_lock(&mu);
	printf("R %ld %lx %ld\n", (long)syscall(SYS_gettid), (unsigned long)p, n);
	pthread_mutex_unlock(&mu);
}

static void *worker(void *arg)
{
	long n = 200 * 4096 + (long)arg * 4096;
	char *b = malloc(n);
	fill(b, n);
	report(b, n - 63); /* sweep's last byte: n-64 */
	return (void *)sweep(b, n);
}

int main(void)
{
	long n = 1000 * 4096;
	char *b = malloc(n);
	pthread_t t[3];
	fill(b, n);
	sweep(b, n);
	report(b, n - 63);
	fill(gtab, sizeof gtab);
	report(gtab, sizeof gtab - 511); /* fill's last byte */
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	fflush(stdout);
	return 0;
}

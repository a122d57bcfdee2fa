/* A small multi-threaded program: each thread fills and sums its own
 * array, then all threads read a shared table. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

long work_fill(long *a, long n, long seed);
long work_shared(const long *t, long n, long stride);

#define N (1 << 18)
static long table[N];

static void *thread(void *arg) {
	long id = (long)arg;
	long *a = malloc(N * sizeof *a);
	long s = work_fill(a, N, id);
	s += work_shared(table, N, 1 + id);
	free(a);
	return (void *)s;
}

int main(int argc, char **argv) {
	int nt = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t t[64];
	if (nt < 1 || nt > 64)
		nt = 4;
	for (long i = 0; i < N; i++)
		table[i] = i * 7;
	for (long i = 0; i < nt; i++)
		pthread_create(&t[i], NULL, thread, (void *)i);
	long total = 0;
	for (int i = 0; i < nt; i++) {
		void *r;
		pthread_join(t[i], &r);
		total += (long)r;
	}
	printf("%d threads, total %ld\n", nt, total);
	return 0;
}

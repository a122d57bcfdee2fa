/* Dynamic TLS access sequences (general- and local-dynamic): compiled with
 * -fPIC, every access to a __thread variable calls __tls_get_addr right
 * after loading the variable's GOT pair ("lea x@tlsgd(%rip),%rdi" or
 * "lea x@tlsld(%rip),%rdi"). When such an object is linked into an
 * executable, ld rewrites each load+call pair as one fixed sequence (GD to
 * IE or LE, LD to LE) and fails ("TLS transition ... failed") if anything
 * was inserted between the two: jq's jv_alloc.c broke that way under pad
 * and clobber. Prints a checksum of per-thread counters. */
#include <pthread.h>
#include <stdio.h>

__thread int shared_counter;     /* preemptible under -fPIC: general dynamic */
static __thread long local_arr[64]; /* local dynamic */
static __thread int local_hits;

__attribute__((noinline)) int bump(int n) {
	shared_counter += n;
	return shared_counter;
}

__attribute__((noinline)) long fill(int seed) {
	long s = 0;
	for (int i = 0; i < 64; i++) {
		local_arr[i] = (long)seed * i + local_hits++;
		s += local_arr[i];
	}
	return s;
}

__attribute__((noinline)) int *counter_addr(void) { return &shared_counter; }

static void *worker(void *arg) {
	long id = (long)arg, s = 0;
	for (int r = 0; r < 100; r++) {
		s += bump((int)id + r);
		s += fill((int)id * 7 + r);
	}
	*counter_addr() += 1;
	return (void *)(s + shared_counter + local_hits);
}

int main(void) {
	pthread_t th[4];
	long total = 0;
	for (long i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(th[i], &r);
		total += (long)r;
	}
	total += (long)worker((void *)9);
	printf("tls %ld %d %d\n", total, shared_counter, local_hits);
	return 0;
}

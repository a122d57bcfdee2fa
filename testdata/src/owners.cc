// owners.cc: a program whose every page has an owner it knows (the
// attribution oracle of e2e TestOwners). It touches globals and statics
// through pointers, heap blocks from three allocation sites (malloc,
// calloc, new[]), a block realloc moves, a block freed and its pages reused
// by a later allocation, an anonymous and a file mapping, and in each of 4
// threads (and main) its stack and TLS arrays. It writes what it allocated
// where to the manifest file argv[1], one line per object:
//
//	OWNER SEGMENT LO HI
//
// (hex addresses, [LO, HI)); an OWNER ending in '+' is a prefix (heap
// blocks and anonymous mappings are named ALLOCATOR@FUNC+0xOFF, the
// return address of the call). argv[2] is a scratch file to map. stdout
// gets only checksums, the same with and without instrumentation.
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PG 4096
#define NTHREADS 4

long table[32 * PG / sizeof(long)] __attribute__((aligned(PG)));           // 128 KiB global
static int counts[16 * PG / sizeof(int)] __attribute__((aligned(PG)));     // 64 KiB static
static __thread char tls_buf[8 * PG] __attribute__((aligned(PG)));         // 32 KiB per thread

static int manifest = -1;

static void note(const char *owner, const char *seg, const void *lo, size_t bytes) {
	char line[256];
	int n = snprintf(line, sizeof line, "%s %s %lx %lx\n", owner, seg, (unsigned long)(uintptr_t)lo,
			 (unsigned long)((uintptr_t)lo + bytes));
	if (write(manifest, line, n) != n)
		abort();
}

// say prints to stdout with write, as note does: a buffer stdio would
// malloc at the first printf shares a heap page with the last block
// malloc'ed before it, which the manifest does not know (the page may be
// named after either), and whether it does depends on the heap's layout.
static void say(const char *fmt, ...) {
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (write(1, line, n) != n)
		abort();
}

static long tid(void) { return syscall(SYS_gettid); }

// the thread's whole stack (its frames too are the thread's)
static void note_stack(void) {
	pthread_attr_t a;
	void *lo;
	size_t size;
	char owner[32];
	if (pthread_getattr_np(pthread_self(), &a) != 0 || pthread_attr_getstack(&a, &lo, &size) != 0)
		abort();
	pthread_attr_destroy(&a);
	snprintf(owner, sizeof owner, "stack:%ld", tid());
	note(owner, "stack", lo, size);
	snprintf(owner, sizeof owner, "tls:%ld", tid());
	note(owner, "tls", tls_buf, sizeof tls_buf);
}

// The allocating calls are not tail calls (the check after each), so the
// return address is in the function that names the site. The empty asm
// hides that operator new never returns null: without it clang drops the
// check and the call to new[] becomes a tail call, whose site is the
// caller's caller (the report names the return address).
static void *check(void *p) {
	__asm__ volatile("" : "+r"(p));
	if (!p)
		abort();
	return p;
}

extern "C" {
__attribute__((noinline)) long *alloc_grid(size_t n) { return (long *)check(malloc(n * sizeof(long))); }
__attribute__((noinline)) int *alloc_hist(size_t n) { return (int *)check(calloc(n, sizeof(int))); }
__attribute__((noinline)) double *alloc_nodes(size_t n) { return (double *)check(new double[n]); }
__attribute__((noinline)) char *grow(char *p, size_t n) { return (char *)check(realloc(p, n)); }
__attribute__((noinline)) char *alloc_again(size_t n) { return (char *)check(malloc(n)); }
__attribute__((noinline)) char *alloc_first(size_t n) { return (char *)check(malloc(n)); }
__attribute__((noinline)) char *map_anon(size_t n) {
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return (char *)check(p == MAP_FAILED ? NULL : p);
}

// touch one word per 512 bytes of [p, p+n), so that every page is touched
__attribute__((noinline)) long fill(char *p, size_t n, long v) {
	long s = 0;
	for (size_t i = 0; i < n; i += 512) {
		p[i] = (char)(v + i);
		s += p[i];
	}
	return s;
}
__attribute__((noinline)) long sum(const char *p, size_t n) {
	long s = 0;
	for (size_t i = 0; i < n; i += 512)
		s += p[i];
	return s;
}
__attribute__((noinline)) void add_longs(long *t, size_t n, long v) {
	for (size_t i = 0; i < n; i += 64)
		t[i] += v;
}
__attribute__((noinline)) void add_ints(int *t, size_t n, int v) {
	for (size_t i = 0; i < n; i += 128)
		t[i] += v;
}
}

struct work {
	int k;
	long *grid;
	size_t ngrid;
	long result;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
	struct work *w = (struct work *)arg;
	volatile char stack_buf[16 * PG];
	note_stack();
	long s = fill((char *)stack_buf, sizeof stack_buf, w->k);
	s += fill(tls_buf, sizeof tls_buf, w->k);
	// globals through pointers: the instructions cannot name them
	pthread_mutex_lock(&mu);
	add_longs(table, sizeof table / sizeof(long), w->k);
	add_ints(counts, sizeof counts / sizeof(int), w->k);
	pthread_mutex_unlock(&mu);
	// this thread's quarter of the grid
	size_t q = w->ngrid / NTHREADS;
	s += fill((char *)(w->grid + w->k * q), q * sizeof(long), w->k);
	w->result = s;
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: owners MANIFEST SCRATCH\n");
		return 2;
	}
	manifest = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (manifest < 0) {
		perror(argv[1]);
		return 1;
	}
	note("manifest", "global", &manifest, sizeof manifest);
	// read-only data no symbol names: string literals and the compiler's
	// constants (.LC, .LCPI) beside them
	const char *fmt = "reused %s\n";
	note("const", "global", fmt, strlen(fmt) + 1);
	note("table", "global", table, sizeof table);
	note("counts", "global", counts, sizeof counts);
	note_stack();

	// three allocation sites
	size_t ngrid = 64 * PG / sizeof(long);
	long *grid = alloc_grid(ngrid);
	note("malloc@alloc_grid+", "heap", grid, ngrid * sizeof(long));
	size_t nhist = 24 * PG / sizeof(int);
	int *hist = alloc_hist(nhist);
	note("calloc@alloc_hist+", "heap", hist, nhist * sizeof(int));
	size_t nnodes = 40 * PG / sizeof(double);
	double *nodes = alloc_nodes(nnodes);
	note("new[]@alloc_nodes+", "heap", nodes, nnodes * sizeof(double));

	long s = fill((char *)hist, nhist * sizeof(int), 1);
	s += fill((char *)nodes, nnodes * sizeof(double), 2);
	add_longs(table, sizeof table / sizeof(long), 1);
	add_ints(counts, sizeof counts / sizeof(int), 1);

	// realloc moves a block: a small one grown past what follows it
	char *v = alloc_first(2 * PG);
	note("malloc@alloc_first+", "heap", v, 2 * PG);
	s += fill(v, 2 * PG, 3);
	char *spacer = alloc_first(PG); // keeps v from growing in place
	char *v2 = grow(v, 48 * PG);
	note("realloc@grow+", "heap", v2, 48 * PG);
	s += fill(v2, 48 * PG, 4);
	free(spacer);

	// free, then a new allocation reusing the pages
	char *a = alloc_first(20 * PG);
	note("malloc@alloc_first+", "heap", a, 20 * PG);
	s += fill(a, 20 * PG, 5);
	free(a);
	usleep(250 * 1000); // the trace's intervals apart
	char *b = alloc_again(20 * PG);
	note("malloc@alloc_again+", "heap", b, 20 * PG);
	s += fill(b, 20 * PG, 6);
	say(fmt, a == b ? "yes" : "no");

	// an anonymous and a file mapping
	char *m = map_anon(32 * PG);
	note("mmap@map_anon+", "mmap", m, 32 * PG);
	s += fill(m, 32 * PG, 7);
	int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
	char block[PG];
	memset(block, 9, sizeof block);
	for (int i = 0; i < 16; i++)
		if (fd < 0 || write(fd, block, sizeof block) != sizeof block)
			return 1;
	char *f = (char *)mmap(NULL, 16 * PG, PROT_READ, MAP_PRIVATE, fd, 0);
	if (f == MAP_FAILED)
		return 1;
	char path[4096];
	if (!realpath(argv[2], path))
		return 1;
	note(path, "mmap", f, 16 * PG);
	s += sum(f, 16 * PG);

	pthread_t th[NTHREADS];
	struct work w[NTHREADS];
	for (int k = 0; k < NTHREADS; k++) {
		w[k] = (struct work){k, grid, ngrid, 0};
		if (pthread_create(&th[k], NULL, worker, &w[k]) != 0)
			return 1;
	}
	for (int k = 0; k < NTHREADS; k++) {
		pthread_join(th[k], NULL);
		s += w[k].result;
	}
	s += fill(tls_buf, sizeof tls_buf, 8);
	say("checksum %ld\n", s);
	munmap(f, 16 * PG);
	munmap(m, 32 * PG);
	close(fd);
	delete[] nodes;
	free(hist);
	free(grid);
	free(v2);
	free(b);
	return 0;
}

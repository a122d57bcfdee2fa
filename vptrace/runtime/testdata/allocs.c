/*
 * allocs.c: test program for the runtime's allocation tracking
 * (allocs_test.go). Each scenario calls the allocators from functions of
 * its own (never inlined, so that a call's return address lies in the
 * function named) and prints, at the end, what the trace must hold:
 *     B <main>                                  main's address (the executable's load base)
 *     A <tid> <kind> <function> <addr> <size> <old>
 *                                               an allocation event, in this order per thread;
 *                                               its site lies in <function>
 *     P <addr> <path>                           the mmap at addr has this path
 *     T <tid> <stack addr> <tls addr>           the thread's THREAD chunk ranges hold them
 *     C <pid>                                   a fork child (its trace: F lines)
 *     S <count>                                 handler calls (scenario signals)
 *     W <tid> <count>                           a thread's events in f_stress (scenario stress)
 * (F: an A line of a fork child; X one of the image an exec started, whose
 * main is on the BX line.) Linked with sites.S, whose functions
 * record events (a thread's first event writes its THREAD chunk).
 *
 *     allocs SCENARIO
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vptrace.h"

int vt_read(const void *p);
int vt_cread(const void *p);

#define NOINLINE __attribute__((noinline, noipa))

void *__libc_malloc(size_t);

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

/* ---- expectations, printed at the end ---- */

#define MAXLINES 100000
static char *lines[MAXLINES];
static int nlines;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char tag = 'A';

static void line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void line(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	/* (__libc_malloc: not interposed, not recorded) */
	char *s = __libc_malloc(strlen(buf) + 1);
	strcpy(s, buf);
	pthread_mutex_lock(&mu);
	if (nlines < MAXLINES)
		lines[nlines++] = s;
	pthread_mutex_unlock(&mu);
}

static void expect(const char *kind, const char *fn, const void *addr, unsigned long size, const void *old)
{
	line("%c %d %s %s %lx %lu %lx", tag, gettid_(), kind, fn, (unsigned long)(uintptr_t)addr, size,
	     (unsigned long)(uintptr_t)old);
}

static void print_lines(void)
{
	for (int i = 0; i < nlines; i++)
		printf("%s\n", lines[i]);
	fflush(stdout);
}

/* ---- the calls ---- */

NOINLINE void *f_malloc(size_t n) { return malloc(n); }
NOINLINE void *f_calloc(size_t n, size_t m) { return calloc(n, m); }
NOINLINE void *f_realloc(void *p, size_t n) { return realloc(p, n); }
NOINLINE void *f_reallocarray(void *p, size_t m, size_t n) { return reallocarray(p, m, n); }
NOINLINE void f_free(void *p) { free(p); }
NOINLINE void *f_aligned_alloc(size_t a, size_t n) { return aligned_alloc(a, n); }
NOINLINE int f_posix_memalign(void **p, size_t a, size_t n) { return posix_memalign(p, a, n); }
NOINLINE void *f_memalign(size_t a, size_t n) { return memalign(a, n); }
NOINLINE void *f_valloc(size_t n) { return valloc(n); }
NOINLINE void *f_pvalloc(size_t n) { return pvalloc(n); }
NOINLINE char *f_strdup(const char *s) { return strdup(s); }
NOINLINE char *f_strndup(const char *s, size_t n) { return strndup(s, n); }
NOINLINE void *f_mmap_anon(size_t n) { return mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); }
NOINLINE void *f_mmap_file(int fd, size_t n) { return mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0); }
NOINLINE int f_munmap(void *p, size_t n) { return munmap(p, n); }
NOINLINE void *f_mremap(void *p, size_t o, size_t n) { return mremap(p, o, n, MREMAP_MAYMOVE); }

#define E(kind, fn, addr, size, old) expect(kind, #fn, addr, size, old)

static void *volatile sink;

/* every kind, in the main thread */
static int kinds(void)
{
	char *a = f_malloc(100);
	E("malloc", f_malloc, a, 100, 0);
	char *b = f_calloc(10, 30);
	E("calloc", f_calloc, b, 300, 0);
	char *a2 = f_realloc(a, 200000); /* past the mmap threshold: moves */
	E("realloc", f_realloc, a2, 200000, a);
	if (a2 == a)
		fprintf(stderr, "realloc did not move\n");
	char *d = f_reallocarray(NULL, 10, 10);
	E("reallocarray", f_reallocarray, d, 100, 0);
	f_free(b);
	E("free", f_free, b, 0, 0);
	void *e = f_aligned_alloc(64, 128);
	E("aligned_alloc", f_aligned_alloc, e, 128, 0);
	void *g = NULL;
	f_posix_memalign(&g, 256, 512);
	E("posix_memalign", f_posix_memalign, g, 512, 0);
	void *h = f_memalign(128, 64);
	E("memalign", f_memalign, h, 64, 0);
	void *i = f_valloc(100);
	E("valloc", f_valloc, i, 100, 0);
	void *j = NULL;
	if (!getenv("ALLOCS_NO_PVALLOC")) { /* (valgrind aborts a program that calls it) */
		j = f_pvalloc(100);
		E("pvalloc", f_pvalloc, j, 100, 0);
	}
	char *k = f_strdup("hello");
	E("strdup", f_strdup, k, 6, 0);
	char *l = f_strndup("hello world", 5);
	E("strndup", f_strndup, l, 6, 0);
	void *m = f_mmap_anon(8192);
	E("mmap", f_mmap_anon, m, 8192, 0);
	int fd = open("/proc/self/exe", O_RDONLY);
	void *mf = f_mmap_file(fd, 4096);
	E("mmap", f_mmap_file, mf, 4096, 0);
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = 0;
	line("P %lx %s", (unsigned long)(uintptr_t)mf, exe);
	void *m2 = f_mremap(m, 8192, 1 << 20);
	E("mremap", f_mremap, m2, 1 << 20, m);
	f_munmap(m2, 1 << 20);
	E("munmap", f_munmap, m2, 1 << 20, 0);
	f_munmap(mf, 4096);
	E("munmap", f_munmap, mf, 4096, 0);
	close(fd);
	/* realloc(p, 0) frees (glibc) */
	char *z = f_malloc(50);
	E("malloc", f_malloc, z, 50, 0);
	char *z2 = f_realloc(z, 0);
	E("realloc", f_realloc, z2, 0, z);
	/* free, then the same block again: the free comes first */
	char *r1 = f_malloc(1000);
	E("malloc", f_malloc, r1, 1000, 0);
	f_free(r1);
	E("free", f_free, r1, 0, 0);
	char *r2 = f_malloc(1000);
	E("malloc", f_malloc, r2, 1000, 0);
	if (r2 != r1)
		fprintf(stderr, "no reuse\n");
	void *frees[] = {a2, d, e, g, h, i, j, k, l, r2};
	for (size_t x = 0; x < sizeof frees / sizeof frees[0]; x++) {
		if (!frees[x])
			continue;
		f_free(frees[x]);
		E("free", f_free, frees[x], 0, 0);
	}
	f_free(NULL); /* not recorded */
	return 0;
}

/* four threads: each allocates, frees, and records an event (its THREAD
 * chunk: its stack and TLS) */
static __thread long tvar[64];

static void *worker(void *arg)
{
	long id = (long)arg;
	char local[64];
	vt_read(local);
	tvar[0] = id;
	line("T %d %lx %lx", gettid_(), (unsigned long)(uintptr_t)local, (unsigned long)(uintptr_t)&tvar[1]);
	for (int r = 0; r < 3; r++) {
		char *p = f_malloc(100 + (size_t)id);
		E("malloc", f_malloc, p, 100 + (size_t)id, 0);
		f_free(p);
		E("free", f_free, p, 0, 0);
	}
	return NULL;
}

static int threads(void)
{
	pthread_t t[4];
	char local[64];
	vt_read(local);
	line("T %d %lx %lx", gettid_(), (unsigned long)(uintptr_t)local, (unsigned long)(uintptr_t)&tvar[1]);
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}

/* an allocation before main */
static void *ctor_block;
__attribute__((constructor)) static void ctor(void)
{
	if (getenv("ALLOCS_CTOR"))
		ctor_block = f_malloc(4321);
}

static int before_main(void)
{
	E("malloc", f_malloc, ctor_block, 4321, 0);
	f_free(ctor_block);
	E("free", f_free, ctor_block, 0, 0);
	return 0;
}

/* fork: the child's trace has its own allocations, not the parent's */
static int forktest(void)
{
	char *a = f_malloc(111);
	E("malloc", f_malloc, a, 111, 0);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		nlines = 0;
		tag = 'F';
		char *c = f_malloc(222);
		E("malloc", f_malloc, c, 222, 0);
		f_free(c);
		E("free", f_free, c, 0, 0);
		print_lines();
		exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	line("C %d", pid);
	f_free(a);
	E("free", f_free, a, 0, 0);
	return 0;
}

/* many records: buffers fill and are written more than once (compact
 * records: 80000 of them, a few bytes each, fill several) */
static int many(void)
{
	for (int r = 0; r < 40000; r++) {
		char *p = f_malloc(16 + (size_t)(r % 100));
		E("malloc", f_malloc, p, 16 + (size_t)(r % 100), 0);
		f_free(p);
		E("free", f_free, p, 0, 0);
	}
	return 0;
}

/* a release moves the recent-page cache epoch on and cuts the
 * aggregates: a page read before and after it is recorded (and
 * aggregated) on both sides */
static void sleep_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

static int reuse(void)
{
	static char pages[3 * 4096] __attribute__((aligned(4096)));
	vt_cread(pages);        /* page P */
	vt_cread(pages + 4096); /* Q: the site's slot moves off P */
	sleep_ms(5);
	char *big = f_malloc(64 << 10);
	E("malloc", f_malloc, big, 64 << 10, 0);
	f_free(big);            /* covers whole pages: a new epoch, a cut */
	E("free", f_free, big, 0, 0);
	sleep_ms(5);
	vt_cread(pages);        /* P again: recorded (the epoch moved on), after the cut */
	line("R %lx", (unsigned long)(uintptr_t)pages >> 12);
	return 0;
}

/* dlopen: a MAPS chunk names the library (vptrace_flush checks) */
static int dlopentest(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", lib, dlerror());
		return 1;
	}
	vptrace_flush();
	dlclose(h);
	vptrace_flush();
	return 0;
}

/* a signal handler maps and unmaps while the thread allocates: each of
 * its calls is recorded or counted lost, nothing deadlocks */
static volatile long handled;
static volatile int loop_done;
static pthread_t main_thread;

static void handler(int sig)
{
	(void)sig;
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(p, 4096);
	handled++;
}

static void *kicker(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 20000};
	while (!loop_done) {
		pthread_kill(main_thread, SIGPROF);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

NOINLINE void f_loop(long n)
{
	for (long i = 0; i < n; i++) {
		sink = malloc(32 + (size_t)(i & 7));
		free(sink);
	}
}

static int signals(void)
{
	struct sigaction sa;
	pthread_t k;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	main_thread = pthread_self();
	pthread_create(&k, NULL, kicker, NULL);
	/* until enough signals came (the loop takes a few ms: the kicker may
	 * not run that soon on a busy machine) */
	long n = 0;
	do {
		f_loop(100000);
		n += 100000;
	} while (handled < 60 && n < 5000000);
	loop_done = 1;
	pthread_join(k, NULL);
	line("S %ld %ld", handled, n);
	return 0;
}

/* exec: what the image allocated before is in its file, the new image's
 * in a file of its own (X lines, its load base on the BX line) */
static int exectest(const char *self)
{
	char *a = f_malloc(333);
	E("malloc", f_malloc, a, 333, 0);
	print_lines();
	nlines = 0;
	execl(self, self, "execd", (char *)NULL);
	perror("execl");
	return 1;
}

static int execd(void)
{
	char *b = f_malloc(444);
	E("malloc", f_malloc, b, 444, 0);
	f_free(b);
	E("free", f_free, b, 0, 0);
	return 0;
}

/* stress: waves of threads allocate while others flush and the clock
 * thread takes their records every interval; every record once */
#define STRESS_N 20000
NOINLINE void f_stress(long n)
{
	for (long i = 0; i < n; i++) {
		void *volatile p = malloc(16 + (size_t)(i & 255)); /* (not sink: the threads' own) */
		free(p);
	}
}

static void *stress_worker(void *arg)
{
	(void)arg;
	f_stress(STRESS_N);
	line("W %d %d", gettid_(), 2 * STRESS_N);
	return NULL;
}

static volatile int stress_done;
static void *flusher(void *arg)
{
	(void)arg;
	while (!stress_done) {
		vptrace_flush();
		sleep_ms(1);
	}
	return NULL;
}

static int stress(void)
{
	pthread_t f, t[6];
	pthread_create(&f, NULL, flusher, NULL);
	for (int wave = 0; wave < 4; wave++) {
		for (int i = 0; i < 6; i++)
			pthread_create(&t[i], NULL, stress_worker, NULL);
		for (int i = 0; i < 6; i++)
			pthread_join(t[i], NULL);
	}
	stress_done = 1;
	pthread_join(f, NULL);
	return 0;
}

/* the seq counter becomes shared while its owner, the main thread,
 * takes seqs as fast as it can (rt_alloc.c, next_seq): threads start
 * while it loops, each one's first allocation switches it (or finds it
 * switched) */
NOINLINE void f_solo(long n)
{
	for (long i = 0; i < n; i++) {
		void *volatile p = malloc(16);
		free(p);
	}
}

static void *switch_worker(void *arg)
{
	(void)arg;
	f_solo(1000);
	line("W %d %d", gettid_(), 2000);
	return NULL;
}

static int seqswitch(void)
{
	pthread_t t[4];
	f_solo(1000);
	for (int i = 0; i < 4; i++) {
		pthread_create(&t[i], NULL, switch_worker, NULL);
		f_solo(20000);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	line("W %d %d", gettid_(), 2 * (1000 + 4 * 20000));
	return 0;
}

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "kinds";
	int r = 0;
	if (!strcmp(s, "execd"))
		tag = 'X';
	line("%s %lx", tag == 'X' ? "BX" : "B", (unsigned long)(uintptr_t)main);
	if (!strcmp(s, "kinds"))
		r = kinds();
	else if (!strcmp(s, "threads"))
		r = threads();
	else if (!strcmp(s, "ctor"))
		r = before_main();
	else if (!strcmp(s, "fork"))
		r = forktest();
	else if (!strcmp(s, "many"))
		r = many();
	else if (!strcmp(s, "reuse"))
		r = reuse();
	else if (!strcmp(s, "dlopen"))
		r = dlopentest(argc > 2 ? argv[2] : "libz.so.1");
	else if (!strcmp(s, "signals"))
		r = signals();
	else if (!strcmp(s, "stress"))
		r = stress();
	else if (!strcmp(s, "seqswitch"))
		r = seqswitch();
	else if (!strcmp(s, "exec"))
		r = exectest("/proc/self/exe");
	else if (!strcmp(s, "execd"))
		r = execd();
	else {
		fprintf(stderr, "unknown scenario %s\n", s);
		return 2;
	}
	print_lines();
	return r;
}

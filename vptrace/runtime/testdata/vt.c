/*
 * vt.c: test driver for the vptrace runtime. Calls the hand-instrumented
 * functions of sites.S (and regs.S) and, next to every call, simulates the
 * per-site last-page slot to know exactly which events the runtime must
 * record. At the end every thread prints its expectations:
 *     E <tid> <page hex> <events> <reads> <writes>
 * and runtime_test.go compares them with the trace.
 *
 *     vt SCENARIO [args]     (see main)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vptrace.h"

/* sites.S */
int vt_read(const void *p);
void vt_write(void *p);
void vt_rmw(void *p);
void *vt_global(long page);
void *vt_tls(void);
void vt_exact(const void *p);
void vt_exact_w(void *p);
int vt_read2(const void *p, long a, long b);
void vt_movsb(void *dst, const void *src, size_t n);
void vt_stosq(void *dst, uint64_t v, size_t n);
void vt_movsq_back(void *dst_last, const void *src_last, size_t n);
long vt_sweep(const char *p, long n, long step);
int vt_cread(const void *p);
int vt_cread2(const void *p);
void vt_cwrite(void *p);
long vt_csweep(const char *p, long n, long step);
long vt_dsweep(const char *p, long n, long step);
long vt_dsweep_back(const char *p, long n, long step);
long vt_cdsweep(const char *p, long n, long step);
extern char vt_gbuf[];

#define NSITES 25
static const int kinds[NSITES] = {1, 2, 3, 2, 1, 1, 2, 1, 1, 1, 2, 2, 1, 2, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 2};
/* exact: no last-page slot (the EXACT sequence, or not a FAST site) */
static const int exact[NSITES] = {0, 0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1};
/* cached: the site lacks the exact bit, the runtime's recent-page cache applies */
static const int cached[NSITES] = {[15] = 1, [16] = 1, [17] = 1, [18] = 1, [21] = 1, [22] = 1, [23] = 1, [24] = 1};

/* ---- expectations ---- */

struct ent {
	uint64_t page1; /* page+1, 0 = empty */
	uint64_t ev, r, w;
};
#define TABN 32768
struct sim {
	uint64_t slot[NSITES];
	struct ent tab[TABN];
};
static __thread struct sim *tsim;  /* normal code */
static __thread struct sim *hsim;  /* signal handlers */
static __thread int in_handler;
static volatile int g_active = 1;
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

static struct sim *cursim(void)
{
	struct sim **s = in_handler ? &hsim : &tsim;
	if (!*s)
		*s = calloc(1, sizeof(struct sim));
	return *s;
}

/* The runtime's per-thread recent-page cache (rt.h, stubs.S), mirrored:
 * 32768 entries ((page+1) << 2) + epoch | kinds recorded, two-way
 * set-associative (the set: bits 2-15 of the key, page+1 mod 16384; a new
 * page goes first, the first entry moves second); the epoch moves on by
 * 1 << 40 at each vptrace_start that
 * restarts tracing, and in a fork child. */
static __thread uint64_t *tcache;
static uint64_t g_epoch;
static long g_cache_hits; /* events the model expects the cache to drop */

static int cache_hit(uint64_t p1, int kind)
{
	if (!tcache)
		tcache = calloc(32768, sizeof(uint64_t));
	uint64_t key = (p1 << 2) + g_epoch, k = (uint64_t)(kind & 3);
	uint64_t *set = tcache + 2 * ((key >> 2) & 16383);
	for (int w = 0; w < 2; w++)
		if ((set[w] ^ key) <= 3) {
			if ((set[w] & k) == k) {
				__sync_fetch_and_add(&g_cache_hits, 1);
				return 1;
			}
			set[w] |= k;
			return 0;
		}
	set[1] = set[0];
	set[0] = key | k;
	return 0;
}

static void rec(int site, const void *addr)
{
	struct sim *s = cursim();
	uint64_t p1 = ((uint64_t)(uintptr_t)addr >> 12) + 1;
	if (!exact[site]) {
		if (s->slot[site] == p1)
			return;
		s->slot[site] = p1;
	}
	if (!g_active)
		return;
	if (cached[site] && cache_hit(p1, kinds[site]))
		return;
	for (uint64_t h = (p1 * 0x9E3779B97F4A7C15ull) >> 50;; h = (h + 1) % TABN) {
		struct ent *e = &s->tab[h % TABN];
		if (e->page1 == 0 || e->page1 == p1) {
			e->page1 = p1;
			e->ev++;
			if (kinds[site] & 1)
				e->r++;
			if (kinds[site] & 2)
				e->w++;
			return;
		}
	}
}

/* expectations are tagged E; F in a fork child, X in an exec'd image */
static char g_tag = 'E';

static void dump_sim(struct sim *s, pid_t tid)
{
	if (!s)
		return;
	for (int i = 0; i < TABN; i++) {
		struct ent *e = &s->tab[i];
		if (e->page1)
			printf("%c %d %llx %llu %llu %llu\n", g_tag, tid, (unsigned long long)(e->page1 - 1),
			       (unsigned long long)e->ev, (unsigned long long)e->r, (unsigned long long)e->w);
	}
}

/* print this thread's expectations (normal and handler) */
static void dump(void)
{
	pthread_mutex_lock(&out_mu);
	dump_sim(tsim, gettid_());
	dump_sim(hsim, gettid_());
	fflush(stdout);
	pthread_mutex_unlock(&out_mu);
}

static void reset_expect(void)
{
	if (tsim)
		memset(tsim, 0, sizeof *tsim); /* the runtime zeroes the slots in a fork child */
	if (hsim)
		memset(hsim->tab, 0, sizeof hsim->tab);
}

/* instrumented accesses + simulation */
static void R(const void *p) { vt_read(p); rec(0, p); }
static void W(void *p) { vt_write(p); rec(1, p); }
static void M(void *p) { vt_rmw(p); rec(2, p); }
static void G(long page) { void *a = vt_global(page); rec(3, a); }
static void T(void) { void *a = vt_tls(); rec(4, a); }
static void X(const void *p) { vt_exact(p); rec(5, p); }
static void XW(void *p) { vt_exact_w(p); rec(6, p); }
static void R2(const void *p) { vt_read2(p, 1, 2); rec(8, p); }
static void CR(const void *p) { vt_cread(p); rec(15, p); }
static void CR2(const void *p) { vt_cread2(p); rec(16, p); }
static void CW(void *p) { vt_cwrite(p); rec(17, p); }

/* vptrace_start, and the cache epoch it moves on when tracing restarts */
static void start(void)
{
	if (!g_active)
		g_epoch += 1ull << 40;
	vptrace_start();
	g_active = 1;
}

static char *pages(size_t n);

/* a rep site records every page of [lo, lo+bytes) */
static void rec_range(int site, uintptr_t lo, size_t bytes)
{
	if (bytes == 0)
		return;
	for (uintptr_t p = lo >> 12; p <= (lo + bytes - 1) >> 12; p++)
		rec(site, (void *)(p << 12));
}
static void MOVSB(void *d, const void *s, size_t n)
{
	vt_movsb(d, s, n);
	rec_range(9, (uintptr_t)s, n);
	rec_range(10, (uintptr_t)d, n);
}
static void STOSQ(void *d, size_t n)
{
	vt_stosq(d, 0x0101010101010101ull, n);
	rec_range(11, (uintptr_t)d, n * 8);
}
/* copies n quadwords ending at d_end/s_end (exclusive), backwards */
static void MOVSQ_BACK(char *d_end, const char *s_end, size_t n)
{
	vt_movsq_back(d_end - 8, s_end - 8, n);
	rec_range(12, (uintptr_t)(s_end - 8 * n), n * 8);
	rec_range(13, (uintptr_t)(d_end - 8 * n), n * 8);
}

/* a sweep's n 8-byte reads from first, step apart: every page from the
 * lowest to the highest access (vpt_range, or a step of at most a page) */
static void rec_span(int site, const char *first, long n, long step)
{
	const char *last = first + (n - 1) * step, *lo = step < 0 ? last : first, *hi = step < 0 ? first : last;
	rec_range(site, (uintptr_t)lo, (size_t)(hi - lo) + 8);
}
static void SWEEP(const char *p, long n, long step)
{
	vt_sweep(p, n, step);
	rec_span(14, p, n, step);
}
/* The runtime's per-thread range memo (rt_threads.c, range_record), mirrored for
 * the default-mode sweep sites: 1024 entries, direct-mapped by site
 * address, step (0 up to a page) and 2 MiB region of the lowest address.
 * A run within the pages its entry's site recorded in this thread and
 * epoch records nothing, an overlapping or adjacent one the pages it adds;
 * with a step over a page, a run of the same accesses (or of the same
 * pages, for whole-page steps), or fewer, records nothing. A one-page
 * vpt_range run (site 18) bypasses it. */
static __thread struct memo {
	int site1;              /* site + 1, 0: empty */
	uint64_t epoch, lo, hi; /* pages, or the first address and the count */
	long step;              /* 0: steps up to a page */
} *tmemo; /* calloc'ed (static TLS this large fails small-stack threads) */
extern char vt_sites[];
static void rec_memo_run(int site, uintptr_t lo, uintptr_t hi, long n, long ustep)
{
	uint64_t key = (uint64_t)(uintptr_t)(vt_sites + 32 * site) + (uint64_t)(ustep > 4096 ? ustep : 0) * 0x100000001b3ull +
		       (lo >> 21) * 0xc2b2ae3d27d4eb4full;
	if (!tmemo)
		tmemo = calloc(1024, sizeof *tmemo);
	struct memo *m = &tmemo[(key * 0x9e3779b97f4a7c15ull) >> 54];
	int mine = m->site1 == site + 1 && m->epoch == g_epoch;
	if (!g_active)
		return;
	if (ustep > 4096) {
		if (mine && m->step == ustep && (uint64_t)n <= m->hi &&
		    (lo == m->lo || (ustep % 4096 == 0 && lo >> 12 == m->lo >> 12 && (lo + 7) >> 12 == (m->lo + 7) >> 12)))
			return;
		for (long i = 0; i < n; i++)
			rec_range(site, lo + i * ustep, 8);
		*m = (struct memo){site + 1, g_epoch, lo, (uint64_t)n, ustep};
		return;
	}
	uint64_t p0 = lo >> 12, p1 = (hi + 7) >> 12;
	if (site == 18 && p0 == p1) {
		rec(site, (void *)lo);
		return;
	}
	if (mine && m->step == 0 && p0 <= m->hi + 1 && p1 + 1 >= m->lo) {
		if (p0 < m->lo)
			rec_range(site, p0 << 12, (m->lo - p0) << 12);
		if (p1 > m->hi)
			rec_range(site, (m->hi + 1) << 12, (p1 - m->hi) << 12);
		if (p0 < m->lo)
			m->lo = p0;
		if (p1 > m->hi)
			m->hi = p1;
		return;
	}
	rec_range(site, p0 << 12, (p1 - p0 + 1) << 12);
	*m = (struct memo){site + 1, g_epoch, p0, p1, 0};
}
/* n 8-byte accesses from first, step apart */
static void rec_memo(int site, const char *first, long n, long step)
{
	uintptr_t f = (uintptr_t)first, l = f + (n - 1) * step;
	rec_memo_run(site, step < 0 ? l : f, step < 0 ? f : l, n, step < 0 ? -step : step);
}

/* the same through a site the runtime's cache and memo apply to */
static void CSWEEP(const char *p, long n, long step)
{
	vt_csweep(p, n, step);
	rec_memo(18, p, n, step);
}
/* sweeps with a register step (vpt_range_dyn): n 8-byte reads at p,
 * p+step, ... (DSWEEP) or p-step, p-2*step, ... (DSWEEP_BACK); steps over
 * a page record each access's pages, others every page in between */
static void rec_steps(int site, const char *first, long n, long step)
{
	if (step > 4096 || step < -4096) {
		for (long i = 0; i < n; i++)
			rec_range(site, (uintptr_t)(first + i * step), 8);
		return;
	}
	rec_span(site, first, n, step);
}
static void DSWEEP(const char *p, long n, long step)
{
	vt_dsweep(p, n, step);
	rec_steps(19, p, n, step);
}
static void DSWEEP_BACK(const char *p, long n, long step)
{
	vt_dsweep_back(p, n, step);
	rec_steps(20, p - step, n, -step);
}
/* DSWEEP through a default-mode site: the cache and the memo apply */
static void CDSWEEP(const char *p, long n, long step)
{
	vt_cdsweep(p, n, step);
	rec_memo(21, p, n, step);
}

/* rep string operations (vpt_rep) and sweeps (vpt_range): short and long
 * ranges, both directions */
static int reptest(void)
{
	char *a = pages(600), *b = pages(600);
	SWEEP(a, 1, 8);                           /* one access */
	SWEEP(a + 4090, 2, 8);                    /* straddles */
	SWEEP(a, 300, 4096);                      /* 300 pages */
	SWEEP(a + 4096 * 400, 3 * 64, -64);       /* backwards, 3 pages */
	SWEEP(a + 100, 50, 0);                    /* step 0 */
	for (int i = 0; i < 2000; i++)
		SWEEP(a + (i % 500) * 4096, 10, 8);
	DSWEEP(a, 1, 8);                          /* one access */
	DSWEEP(a + 100, 200, 64);                 /* 4 pages */
	DSWEEP(a + 4093, 100, 4097);              /* over a page: each access, some straddle */
	DSWEEP(a + 4096 * 500, 50, -8200);        /* backwards, every other page */
	DSWEEP(a + 4096 * 10, 30, 0);             /* step 0 */
	DSWEEP_BACK(a + 4096 * 300, 80, 4096 * 3);  /* sub: every third page, downwards */
	DSWEEP_BACK(a + 4096 * 300, 100, -40);    /* sub of a negative step: upwards */
	MOVSB(b, a, 100);                      /* one page each */
	MOVSB(b + 4000, a + 4090, 200);        /* straddles */
	MOVSB(b, a, 0);                        /* nothing */
	MOVSB(b + 4096, a + 8192, 300 * 4096); /* 300 pages */
	STOSQ(b + 17, 1);
	STOSQ(b, 512 * 100);                   /* 100 pages */
	MOVSQ_BACK(b + 4096 * 10, a + 4096 * 20, 1);
	MOVSQ_BACK(b + 4096 * 500 + 64, a + 4096 * 550, 4096 / 8 * 40 + 3);
	for (int i = 0; i < 3000; i++)         /* many short ones: buffer hand-offs */
		MOVSB(b + (i % 500) * 4096 + 8, a + (i % 300) * 4096, 16);
	dump();
	return 0;
}

static char *pages(size_t n)
{
	char *p = aligned_alloc(4096, n * 4096);
	memset(p, 0, n * 4096);
	return p;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* ---- early: instrumented code before the object registers ---- */

static char early_buf[3 * 4096] __attribute__((aligned(4096)));
__attribute__((constructor(101))) static void early(void)
{
	if (getenv("VT_EARLY"))
		for (int i = 0; i < 3; i++)
			R(early_buf + i * 4096);
}

/* ---- basic ---- */

static void *basic_thread(void *arg)
{
	long k = (long)arg;
	size_t n = 200 + 50 * (size_t)k;
	char *b = pages(n);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++)
			R(b + i * 4096 + (size_t)pass * 8);
	for (size_t i = 0; i < n; i += 3)
		W(b + i * 4096);
	for (size_t i = 0; i < n; i += 7)
		M(b + i * 4096 + 100);
	for (long g = 0; g < 16; g += 1 + k)
		G(g);
	T();
	T();
	for (int i = 0; i < 5; i++)
		X(b + (size_t)i * 4096);
	dump();
	return NULL;
}

static int basic(int nthreads)
{
	pthread_t th[64];
	char *b = pages(64);
	for (int i = 0; i < 64; i++)
		R(b + i * 4096);
	for (int i = 0; i < 32; i++)
		W(b + i * 4096 + 17);
	for (int i = 0; i < 64; i += 5)
		M(b + i * 4096);
	for (long g = 0; g < 16; g++)
		G(g);
	T();
	for (int r = 0; r < 3; r++)
		for (int i = 0; i < 10; i++)
			X(b + i * 4096);
	for (int i = 0; i < 8; i++)
		R2(b + i * 4096);
	for (long k = 0; k < nthreads; k++)
		pthread_create(&th[k], NULL, basic_thread, (void *)k);
	for (int k = 0; k < nthreads; k++)
		pthread_join(th[k], NULL);
	/* many pages in one thread: several buffer hand-offs */
	char *big = pages(12000);
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < 12000; i++)
			R(big + (size_t)i * 4096);
	dump();
	return 0;
}

/* ---- churn ---- */

static char *churn_buf;
static void *churn_thread(void *arg)
{
	long k = (long)arg;
	R(churn_buf + (k % 50) * 4096);
	W(churn_buf + ((k + 1) % 50) * 4096);
	X(churn_buf + ((k + 2) % 50) * 4096);
	dump();
	free(tsim);
	tsim = NULL;
	return NULL;
}

static int churn(int total, int wave)
{
	pthread_t *th = calloc((size_t)wave, sizeof *th);
	churn_buf = pages(50);
	for (int done = 0; done < total; done += wave) {
		int n = total - done < wave ? total - done : wave;
		for (int i = 0; i < n; i++)
			if (pthread_create(&th[i], NULL, churn_thread, (void *)(long)(done + i)) != 0) {
				perror("pthread_create");
				return 1;
			}
		for (int i = 0; i < n; i++)
			pthread_join(th[i], NULL);
	}
	return 0;
}

/* ---- signals: instrumented code in handlers, interrupting stubs ---- */

static char *sig_buf, *hbuf;
static volatile int sig_stop;
static __thread unsigned hcount;

static void handler(int sig)
{
	(void)sig;
	in_handler = 1;
	R(hbuf + (hcount % 8) * 4096);
	XW(hbuf + 8 * 4096 + (hcount % 4) * 4096);
	hcount++;
	in_handler = 0;
}

static void *sig_thread(void *arg)
{
	long k = (long)arg;
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	(void)k;
	in_handler = 1;
	cursim(); /* no calloc in the handler */
	in_handler = 0;
	cursim();
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	for (unsigned i = 0; !sig_stop; i++) {
		/* simulate first (signals blocked), then the real call */
		X(sig_buf + (i % 16) * 4096);
	}
	/* block before dumping: the handler must not race the dump */
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	dump();
	return NULL;
}

static int signals(int nthreads, int ms)
{
	pthread_t th[16];
	struct sigaction sa;
	sigset_t s;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &s, NULL); /* main: no handler */
	sig_buf = pages(16);
	hbuf = pages(12);
	for (long k = 0; k < nthreads; k++)
		pthread_create(&th[k], NULL, sig_thread, (void *)k);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long sent = 0;
	do {
		for (int k = 0; k < nthreads; k++)
			pthread_kill(th[k], SIGUSR1), sent++;
		struct timespec d = {0, 20000};
		nanosleep(&d, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	sig_stop = 1;
	for (int k = 0; k < nthreads; k++)
		pthread_join(th[k], NULL);
	fprintf(stderr, "signals sent: %ld\n", sent);
	return 0;
}

/* ---- fork ---- */

static void *fork_child_thread(void *arg)
{
	char *b = arg;
	for (int i = 30; i < 35; i++)
		R(b + i * 4096);
	dump();
	return NULL;
}

static int forktest(void)
{
	char *b = pages(40);
	for (int i = 0; i < 10; i++)
		R(b + i * 4096);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		pthread_t th;
		g_tag = 'F';
		reset_expect();
		for (int i = 9; i < 20; i++) /* page 9: in the inherited slot, which the runtime zeroed */
			R(b + i * 4096);
		W(b + 10 * 4096);
		pthread_create(&th, NULL, fork_child_thread, b);
		pthread_join(th, NULL);
		printf("C %d %s\n", (int)getpid(), vptrace_path() ? vptrace_path() : "-");
		dump();
		exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	for (int i = 20; i < 30; i++)
		R(b + i * 4096);
	dump();
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

/* ---- threads with small stacks: the runtime's TLS must fit ---- */

static void *small_thread(void *arg)
{
	char *b = arg;
	for (int i = 0; i < 40; i++) {
		R(b + i * 4096);
		CR(b + (i % 10) * 4096);
	}
	dump();
	return NULL;
}

static int smallstack(void)
{
	char *b = pages(40);
	pthread_attr_t at;
	pthread_t th;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 32768);
	int e = pthread_create(&th, &at, small_thread, b);
	if (e) {
		fprintf(stderr, "vt: pthread_create with a 32 KiB stack: %s\n", strerror(e));
		return 1;
	}
	pthread_join(th, NULL);
	return 0;
}

/* ---- the recent-page cache (sites 15-17) ---- */

/* writes to the 9000 pages at big: other keys than reads, evicting part
 * of the reads' from the cache */
static void evict_reads(char *big)
{
	for (int i = 0; i < 9000; i++)
		CW(big + (size_t)i * 4096);
}

static void *cache_thread(void *arg)
{
	char *b = arg;
	for (int i = 0; i < 20; i++) /* another thread: its own cache, every page recorded */
		CR(b + i * 4096);
	dump();
	return NULL;
}

static int cachetest(void)
{
	char *b = pages(300);
	for (int i = 0; i < 300; i++)
		CR(b + i * 4096);
	for (int i = 0; i < 300; i++) /* another site, same pages, same kind: cached */
		CR2(b + i * 4096);
	for (int i = 0; i < 300; i += 3) /* a write: another kind, recorded */
		CW(b + i * 4096);
	for (int i = 0; i < 300; i++) /* the slot moves, the cache holds */
		CR(b + i * 4096);
	pthread_t th;
	pthread_create(&th, NULL, cache_thread, b);
	pthread_join(th, NULL);
	vptrace_stop();
	g_active = 0;
	for (int i = 0; i < 10; i++)
		CR2(b + i * 4096);
	start(); /* pages recorded before the stop count again */
	for (int i = 0; i < 20; i++)
		CR(b + i * 4096);
	char *big = pages(9000);
	fflush(stdout);
	pid_t pid = fork(); /* the child inherits a cache holding pages 0-19 */
	if (pid == 0) {
		g_tag = 'F';
		reset_expect();
		g_epoch += 1ull << 40; /* the child's trace records its own pages */
		for (int i = 0; i < 30; i++)
			CR2(b + i * 4096);
		printf("C %d %s\n", (int)getpid(), vptrace_path() ? vptrace_path() : "-");
		dump();
		exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	/* more pages than the cache holds: collisions evict, twice round */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < 9000; i++)
			CR(big + (size_t)i * 4096);
	/* one set: pages 16384 apart share a set (page+1 mod 16384), which
	 * holds two; each of three evicts one read before, twice round (with
	 * another set mapping the second round would find all three) */
	char *far = mmap(NULL, (size_t)3 * 16384 * 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (far == MAP_FAILED)
		return 1;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < 3; i++)
			CR(far + (size_t)i * 16384 * 4096);
	for (int i = 0; i < 30; i++)
		CR2(b + i * 4096);
	/* ranges (sweeps, rep, vector accesses) go through the cache too */
	CSWEEP(b, 300, 4096);  /* pages 0-299: read lately, or evicted by the round above */
	CSWEEP(b, 300, 4096);  /* all cached now */
	for (int i = 0; i < 50; i++)
		CSWEEP(big + (size_t)(i * 97 % 9000) * 4096, 40, 512);
	/* the memo: a site's runs recorded lately, even after the cache lost
	 * their pages (evict_reads) */
	for (int j = 0; j < 20; j++) /* a column walk, column after column */
		CSWEEP(big + 8 * j, 600, 4088);
	evict_reads(big);
	for (int j = 20; j < 40; j++)
		CSWEEP(big + 8 * j, 600, 4088);
	CSWEEP(big + 4096 * 590, 30, 4096); /* overlaps the end: 20 more pages */
	CSWEEP(big + 4096 * 580, 5, 4096);  /* within */
	CSWEEP(big + 4096 * 700, 5, 4096);  /* elsewhere: recorded, the memo moves */
	CSWEEP(big + 4096 * 100, 5, 4096);  /* the column's pages again: not in the memo */
	/* steps over a page: the same accesses, or fewer, or the same pages */
	for (int j = 0; j < 4; j++) {
		CDSWEEP(big + 4096 * 1000, 200 - j, 3 * 4096 + 8);
		CDSWEEP(big + 4096 * 1000 + 8, 200, 3 * 4096 + 8); /* not the same accesses */
		evict_reads(big);
	}
	for (int j = 0; j < 4; j++) {
		CDSWEEP(big + 4096 * 2000 + 8 * j, 150 - j, 4096 * 5);
		evict_reads(big);
	}
	char *fresh = pages(60); /* pages no site read yet */
	CDSWEEP(fresh, 10, 4096 * 5);
	CDSWEEP(fresh + 4090, 10, 4096 * 5); /* straddles: the same first pages, and others */
	char *f2 = aligned_alloc(1 << 21, 130 * 4096); /* one memo region */
	memset(f2, 0, 130 * 4096);
	CSWEEP(f2, 20, 4096);             /* pages 0-19 */
	CSWEEP(f2 + 4096 * 21, 30, 4096); /* 21-50: a gap, not adjacent */
	CSWEEP(f2 + 4096 * 45, 40, 4096); /* 45-84: overlaps, 51-84 recorded */
	evict_reads(big);
	CSWEEP(f2 + 4096 * 60, 25, 4096); /* 60-84: within the union */
	CSWEEP(f2 + 4096 * 60, 26, 4096); /* 60-85: one page past it */
	CDSWEEP(f2 + 4096 * 100, 5, 4096 * 3);
	CDSWEEP(f2 + 4096 * 100, 10, 4096 * 3); /* more accesses than the last run */
	char *f3 = pages(10); /* a page's entry holds the kinds recorded */
	for (int i = 0; i < 10; i++)
		CW(f3 + i * 4096);
	CSWEEP(f3, 10, 4096); /* reads: recorded, and added to the entries */
	for (int i = 0; i < 10; i++)
		CR(f3 + i * 4096); /* cached */
	for (int r = 0; r < 3; r++) { /* one site, two arrays in turn: an entry each */
		CDSWEEP(big + 4096 * 3000, 300, 4096 * 3);
		CDSWEEP(big + 4096 * 6000, 300, 4096 * 3);
		evict_reads(big);
	}
	CDSWEEP(big + 4096 * 1000, 200, -(3 * 4096 + 8));     /* backwards: other accesses */
	vptrace_stop();
	g_active = 0;
	CSWEEP(big, 10, 4096);
	start(); /* a new epoch: the memo is stale */
	for (int j = 0; j < 3; j++)
		CSWEEP(big + 8 * j, 600, 4088);
	printf("H %ld\n", g_cache_hits);
	dump();
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

/* fork children without events: one execs, one exits */
static int forkquiet(void)
{
	char *b = pages(4);
	for (int i = 0; i < 4; i++)
		R(b + i * 4096);
	fflush(stdout);
	pid_t a = fork();
	if (a == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	pid_t c = fork();
	if (c == 0)
		exit(0);
	int st1, st2;
	waitpid(a, &st1, 0);
	waitpid(c, &st2, 0);
	printf("K %d %d\n", (int)a, (int)c);
	dump();
	return 0;
}

/* ---- exit from a non-main thread ---- */

static pthread_mutex_t ex_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ex_cv = PTHREAD_COND_INITIALIZER;
static int ex_ready;

static void *ex_idle(void *arg)
{
	char *b = arg;
	for (int i = 0; i < 10; i++)
		R(b + (100 + i) * 4096);
	dump();
	pthread_mutex_lock(&ex_mu);
	ex_ready++;
	pthread_cond_broadcast(&ex_cv);
	for (;;)
		pthread_cond_wait(&ex_cv, &ex_mu); /* alive at exit */
	return NULL;
}

static void *ex_exiter(void *arg)
{
	char *b = arg;
	for (int i = 0; i < 10; i++)
		W(b + (200 + i) * 4096);
	pthread_mutex_lock(&ex_mu);
	while (ex_ready < 2)
		pthread_cond_wait(&ex_cv, &ex_mu);
	pthread_mutex_unlock(&ex_mu);
	dump();
	exit(0);
}

static int exitthread(void)
{
	pthread_t a, b2;
	char *b = pages(300);
	pthread_create(&a, NULL, ex_idle, b);
	for (int i = 0; i < 10; i++)
		R(b + i * 4096);
	dump();
	pthread_mutex_lock(&ex_mu);
	ex_ready++;
	pthread_cond_broadcast(&ex_cv);
	pthread_mutex_unlock(&ex_mu);
	pthread_create(&b2, NULL, ex_exiter, b);
	for (;;)
		pause();
	return 0;
}

/* ---- stop / start ---- */

extern const struct vpt_object vt_object;

static int stopstart(void)
{
	char *b = pages(20);
	vpt_register(&vt_object);   /* a repeat: ignored */
	vpt_unregister(&vt_object); /* forgotten ... */
	vpt_register(&vt_object);   /* ... and registered again: the same object at
	                             * the same address has its OBJECT chunk already */
	for (int i = 0; i < 5; i++)
		R(b + i * 4096);
	vptrace_stop();
	g_active = 0;
	for (int i = 5; i < 10; i++)
		R(b + i * 4096);
	start();
	R(b + 9 * 4096); /* slot unchanged: no event */
	for (int i = 10; i < 15; i++)
		R(b + i * 4096);
	vptrace_note("phase two");
	dump();
	return 0;
}

static int startstopped(void)
{
	char *b = pages(20);
	g_active = vptrace_active();
	for (int i = 0; i < 5; i++)
		X(b + i * 4096);
	start();
	for (int i = 5; i < 10; i++)
		X(b + i * 4096);
	dump();
	return 0;
}

/* ---- flushwait: vptrace_flush's result between two bursts of hand-offs ---- */

static int flushwait(void)
{
	char *b = pages(6000);
	for (int i = 0; i < 6000; i++)
		R(b + (size_t)i * 4096);
	printf("F %d\n", vptrace_flush());
	for (int i = 0; i < 6000; i++)
		W(b + (size_t)i * 4096 + 8);
	dump();
	return 0;
}

/* ---- crash: SIGKILL after a flush and a streaming interval ---- */

static int crash(void)
{
	char *b = pages(300);
	pthread_t th;
	for (int i = 0; i < 100; i++)
		R(b + i * 4096);
	if (vptrace_flush() != 0)
		return 2;
	for (int i = 100; i < 200; i++)
		R(b + i * 4096);
	dump(); /* the expectation: pages 0-199 */
	sleep_ms(400); /* several streaming intervals */
	for (int i = 200; i < 300; i++)
		R(b + i * 4096); /* may be lost */
	(void)th;
	kill(getpid(), SIGKILL);
	return 3;
}

/* _exit right after the events (no streaming interval passed): the
 * runtime's _exit flushes like exit */
static int quickexit(void)
{
	char *b = pages(100);
	for (int i = 0; i < 100; i++)
		R(b + i * 4096);
	dump();
	_exit(0);
}

/* ---- exec: the image's events reach its file before it is replaced ---- */

/* the image vt execs into: its own pages, tagged X */
static int execd(void)
{
	char *b = pages(40);
	g_tag = 'X';
	for (int i = 20; i < 30; i++)
		W(b + i * 4096);
	dump();
	return 0;
}

/* exec this program again ("vt execd") with one of the exec functions */
static int exec_self(const char *how)
{
	static char exe[4096];
	char *argv[] = {"vt", "execd", NULL};
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return 2;
	exe[n] = 0;
	fflush(stdout);
	if (!strcmp(how, "execve"))
		execve(exe, argv, environ);
	else if (!strcmp(how, "execv"))
		execv(exe, argv);
	else if (!strcmp(how, "execl"))
		execl(exe, "vt", "execd", (char *)NULL);
	else if (!strcmp(how, "execle"))
		execle(exe, "vt", "execd", (char *)NULL, environ);
	else if (!strcmp(how, "execveat"))
		execveat(AT_FDCWD, exe, argv, environ, 0);
	else if (!strcmp(how, "fexecve")) {
		int fd = open(exe, O_RDONLY | O_CLOEXEC);
		fexecve(fd, argv, environ);
	} else {
		/* the PATH search: vt's directory first */
		static char path[8192];
		char *slash = strrchr(exe, '/');
		*slash = 0;
		snprintf(path, sizeof path, "/nonexistent:%s:%s", exe, getenv("PATH") ? getenv("PATH") : "");
		setenv("PATH", path, 1);
		if (!strcmp(how, "execvp"))
			execvp("vt", argv);
		else if (!strcmp(how, "execvpe"))
			execvpe("vt", argv, environ);
		else if (!strcmp(how, "execlp"))
			execlp("vt", "vt", "execd", (char *)NULL);
	}
	fprintf(stderr, "vt: %s failed: %s\n", how, strerror(errno));
	return 3;
}

static int exectest(const char *how)
{
	char *b = pages(40);
	for (int i = 0; i < 10; i++)
		R(b + i * 4096);
	dump();
	return exec_self(how);
}

/* a failed exec: tracing goes on in the same file */
static int execfail(void)
{
	char *b = pages(20);
	char *argv[] = {"nothing", NULL};
	for (int i = 0; i < 5; i++)
		R(b + i * 4096);
	if (execv("/nonexistent/program", argv) != -1 || errno != ENOENT)
		return 2;
	if (execvp("vt-no-such-program", argv) != -1 || errno != ENOENT)
		return 3;
	for (int i = 5; i < 10; i++)
		R(b + i * 4096);
	dump();
	return 0;
}

/* fork; the child records, then execs vt (how: "exec") or calls _exit
 * ("exit"); the parent records before and after */
static int forkthen(const char *how)
{
	char *b = pages(40);
	for (int i = 0; i < 10; i++)
		R(b + i * 4096);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		g_tag = 'F';
		reset_expect();
		for (int i = 10; i < 15; i++)
			W(b + i * 4096);
		printf("C %d %s\n", (int)getpid(), vptrace_path() ? vptrace_path() : "-");
		dump();
		if (!strcmp(how, "exit"))
			_exit(0);
		_exit(exec_self("execve"));
	}
	int st;
	waitpid(pid, &st, 0);
	for (int i = 30; i < 40; i++)
		R(b + i * 4096);
	dump();
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

/* ---- registers ---- */

struct regstate {
	uint64_t gpr[16];
	uint64_t flags;
	uint8_t ymm[16][32];
	uint32_t mxcsr;
	uint16_t fcw;
	uint8_t pad0[2];
	uint8_t st0[10]; /* at 656 */
	uint8_t pad[6];
};
_Static_assert(__builtin_offsetof(struct regstate, st0) == 656, "st0");
_Static_assert(sizeof(struct regstate) == 672, "regstate");

#define RT(r) void vt_regtest_##r(struct regstate *, struct regstate *);
RT(rax) RT(rcx) RT(rdx) RT(rbx) RT(rbp) RT(rsi) RT(rdi) RT(r8) RT(r9) RT(r10) RT(r11) RT(r12) RT(r13) RT(r14) RT(r15) RT(rep) RT(range) RT(vec22) RT(vec23) RT(vec24) RT(crange)
static void (*const regfn[16])(struct regstate *, struct regstate *) = {
	vt_regtest_rax, vt_regtest_rcx, vt_regtest_rdx, vt_regtest_rbx, NULL, vt_regtest_rbp,
	vt_regtest_rsi, vt_regtest_rdi, vt_regtest_r8, vt_regtest_r9, vt_regtest_r10, vt_regtest_r11,
	vt_regtest_r12, vt_regtest_r13, vt_regtest_r14, vt_regtest_r15};
static const char *const regname[22] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
					"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rep", "range",
					"vec (site 22)", "vec (site 23)", "vec (site 24)", "range (site 18)"};

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static int regfail;
static char *regbuf;
#define REG_REP 16   /* vt_regtest_rep: vpt_rep with a range from rsi */
#define REG_RANGE 17 /* vt_regtest_range: vpt_range(vt_rfirst, vt_rlast) */
#define REG_VEC 18   /* 18-20: vt_regtest_vec22-24: vpt_vec(vt_vbase) at sites 22-24 */
#define REG_CRANGE 21 /* vt_regtest_crange: vpt_range at site 18 (default mode: memo, cache) */
__thread uint64_t vt_rfirst, vt_rlast, vt_vbase;
static void (*const vecfn[3])(struct regstate *, struct regstate *) = {vt_regtest_vec22, vt_regtest_vec23, vt_regtest_vec24};

/* A vector site's accesses (sites.S 22-24), from the registers in *in:
 * every element whose mask lane's sign is set, at base + index x scale
 * (22, 23) or base + 4e (24). Half the time the indices stay within
 * regbuf, whose pages the cache then has (vpt_vec's fast path); else
 * they spread over 8 MiB below it (addresses only: nothing is accessed).
 * The page past regbuf only site 24's straddling last element reaches. */
static void vec_setup(int k, struct regstate *in, int near, int late)
{
	uint64_t base = (uint64_t)(uintptr_t)regbuf;
	for (int e = 0; e < 8; e++) {
		int32_t i32 = near ? (int32_t)(rnd() % (16 * 1024)) : -1 - (int32_t)(rnd() % (1 << 21));
		int64_t i64 = near ? (int64_t)(rnd() % (16 * 512)) : -1 - (int64_t)(rnd() % (1 << 20));
		if (k == 22)
			memcpy(&in->ymm[1][4 * e], &i32, 4);
		else if (k == 23 && e < 4)
			memcpy(&in->ymm[3][8 * e], &i64, 8);
	}
	/* site 24: late (the cache has regbuf's pages for writes by then), now
	 * and then, the last element straddles into the page past regbuf */
	if (k == 24)
		base += !near ? -(uint64_t)(1 + rnd() % (1 << 23)) : !late || rnd() % 4 ? rnd() % (16 * 4096 - 32) : 16 * 4096 - 30;
	vt_vbase = base;
}
static void vec_expect(int k, const struct regstate *in)
{
	int n = k == 23 ? 4 : 8, w = k == 23 ? 8 : 4, mreg = k == 22 ? 2 : k == 23 ? 4 : 6;
	for (int e = 0; e < n; e++) {
		int64_t m, idx = e;
		if (w == 4) {
			int32_t x;
			memcpy(&x, &in->ymm[mreg][4 * e], 4);
			m = x;
		} else
			memcpy(&m, &in->ymm[mreg][8 * e], 8);
		if (m >= 0)
			continue; /* lane off */
		if (k == 22) {
			int32_t x;
			memcpy(&x, &in->ymm[1][4 * e], 4);
			idx = x;
		} else if (k == 23)
			memcpy(&idx, &in->ymm[3][8 * e], 8);
		rec_range(k, (uintptr_t)(vt_vbase + (uint64_t)idx * (uint64_t)w), (size_t)w);
	}
}

static void *reg_thread(void *arg)
{
	int reg = (int)(long)arg;
	/* 0x8d5: CF PF AF ZF SF OF; 0x400: DF */
	static const uint64_t flagsets[4] = {0x2, 0x8d5 | 0x2, 0x400 | 0x2, 0x400 | 0x8d5 | 0x2};
	for (int it = 0; it < 6000 && !regfail; it++) {
		struct regstate in, out;
		for (int i = 0; i < 16; i++)
			in.gpr[i] = rnd();
		for (int i = 0; i < 16; i++)
			for (int j = 0; j < 32; j++)
				in.ymm[i][j] = (uint8_t)rnd();
		in.flags = flagsets[it % 4];
		in.mxcsr = (it & 1) ? 0x7f80 : 0x1f80; /* round toward zero / nearest */
		in.fcw = (it & 2) ? 0x0f7f : 0x037f;
		for (int j = 0; j < 10; j++)
			in.st0[j] = (uint8_t)rnd();
		in.st0[9] = 0x3f; /* a normal long double */
		in.st0[7] |= 0x80;
		const char *page = regbuf + (rnd() % 16) * 4096;
		if (reg == REG_CRANGE) {
			/* runs over up to 8 pages of regbuf: recorded, then in the
			 * memo or the cache (vpt_range_quick, no xsave) */
			uint64_t x = (uint64_t)(uintptr_t)(regbuf + 4 * 4096 + rnd() % (8 * 4096));
			uint64_t y = (uint64_t)(uintptr_t)(regbuf + 4 * 4096 + rnd() % (8 * 4096));
			vt_rfirst = x;
			vt_rlast = y;
			memset(&out, 0xee, sizeof out);
			vt_regtest_crange(&in, &out);
			rec_memo_run(18, x < y ? x : y, x < y ? y : x, 0, 0);
		} else if (reg >= REG_VEC) {
			int k = 22 + reg - REG_VEC;
			vec_setup(k, &in, it % 2, it >= 2000);
			memset(&out, 0xee, sizeof out);
			vecfn[reg - REG_VEC](&in, &out);
			vec_expect(k, &in);
		} else if (reg == REG_RANGE) {
			uint64_t x = (uint64_t)(uintptr_t)(regbuf + 4 * 4096 + rnd() % (8 * 4096));
			uint64_t y = it % 3 ? x + rnd() % 64 : (uint64_t)(uintptr_t)(regbuf + 4 * 4096 + rnd() % (8 * 4096));
			vt_rfirst = x;
			vt_rlast = y;
			memset(&out, 0xee, sizeof out);
			vt_regtest_range(&in, &out);
			uint64_t lo = x < y ? x : y, hi = x < y ? y : x;
			rec_range(14, (uintptr_t)lo, (size_t)(hi - lo) + 8);
		} else if (reg == REG_REP) {
			/* a range of up to 7 pages around the middle of regbuf */
			uint64_t n = rnd() % (it % 3 ? 64 : 7 * 4096);
			in.gpr[6] = (uint64_t)(uintptr_t)(regbuf + 8 * 4096 + rnd() % 4096);
			in.gpr[1] = n;
			memset(&out, 0xee, sizeof out);
			vt_regtest_rep(&in, &out);
			if (in.flags & 0x400)
				rec_range(9, (uintptr_t)in.gpr[6] + 1 - n, n);
			else
				rec_range(9, (uintptr_t)in.gpr[6], n);
		} else {
			in.gpr[reg] = (uint64_t)(uintptr_t)page >> 12; /* the stub gets the page number */
			memset(&out, 0xee, sizeof out);
			regfn[reg](&in, &out);
			rec(7, page);
		}
		for (int i = 0; i < 16; i++)
			if (i != 4 && in.gpr[i] != out.gpr[i]) {
				fprintf(stderr, "regs: vpt_slow_%s clobbered %s: %#llx -> %#llx (iteration %d)\n",
					regname[reg], regname[i], (unsigned long long)in.gpr[i],
					(unsigned long long)out.gpr[i], it);
				regfail = 1;
			}
		if ((in.flags & 0xcd5) != (out.flags & 0xcd5)) {
			fprintf(stderr, "regs: vpt_slow_%s changed flags %#llx -> %#llx\n", regname[reg],
				(unsigned long long)in.flags, (unsigned long long)out.flags);
			regfail = 1;
		}
		if (memcmp(in.ymm, out.ymm, sizeof in.ymm)) {
			for (int i = 0; i < 16; i++)
				if (memcmp(in.ymm[i], out.ymm[i], 32))
					fprintf(stderr, "regs: vpt_slow_%s clobbered ymm%d\n", regname[reg], i);
			regfail = 1;
		}
		if (in.mxcsr != (out.mxcsr & ~0x3fu) || in.fcw != out.fcw || memcmp(in.st0, out.st0, 10)) {
			fprintf(stderr, "regs: vpt_slow_%s changed mxcsr/x87 state: mxcsr %#x -> %#x, fcw %#x -> %#x, st0 %s\n",
				regname[reg], in.mxcsr, out.mxcsr, in.fcw, out.fcw,
				memcmp(in.st0, out.st0, 10) ? "changed" : "same");
			regfail = 1;
		}
	}
	dump();
	return NULL;
}

static int regs(void)
{
	if (!__builtin_cpu_supports("avx")) {
		printf("SKIP no AVX\n");
		return 0;
	}
	regbuf = pages(16);
	for (int r = 0; r <= REG_CRANGE; r++) {
		pthread_t th;
		if (r == 4)
			continue;
		pthread_create(&th, NULL, reg_thread, (void *)(long)r);
		pthread_join(th, NULL);
	}
	return regfail;
}

/* ---- the epoch moves on every streaming interval ---- */

/* Run with a short VPTRACE_INTERVAL_MS: a page recorded before a pause of
 * many intervals is recorded again, by another site (the slot does not
 * filter) or by the same sweep (the memo does not). */
static int epochs(void)
{
	char *p = pages(4), *q = pages(10);
	CR(p);
	CSWEEP(q, 10, 4096);
	sleep_ms(300);
	g_epoch += 1ull << 40; /* (at least one interval went by) */
	CR2(p);
	CSWEEP(q, 10, 4096);
	dump();
	return 0;
}

/* ---- stress: many events, frequent steals, raw fallback ---- */

static long stress_n;
static void *stress_thread(void *arg)
{
	char *b = arg;
	for (long i = 0; i < stress_n; i++) {
		X(b + (i % 64) * 4096);
		if (i % 7 == 0)
			XW(b + ((i * 5) % 64) * 4096);
	}
	dump();
	return NULL;
}

static int stress(int nthreads, long n)
{
	pthread_t th[16];
	stress_n = n;
	for (int k = 0; k < nthreads; k++)
		pthread_create(&th[k], NULL, stress_thread, pages(64));
	for (int k = 0; k < nthreads; k++)
		pthread_join(th[k], NULL);
	return 0;
}

/* ---- benchmark: cost of the stub ---- */

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void plain(const void *p) { __asm__ volatile("" ::"r"(p) : "memory"); }

static int bench(long n)
{
	char *b = pages(64);
	double t0, t1, t2, t3;
	/* exact-mode site: one stub call per access */
	for (long i = 0; i < 100000; i++)
		vt_exact(b + (i & 63) * 4096);
	t0 = now_s();
	for (long i = 0; i < n; i++)
		plain(b + (i & 63) * 4096);
	t1 = now_s();
	for (long i = 0; i < n; i++)
		vt_exact(b + (i & 63) * 4096);
	t2 = now_s();
	/* fast path only: same page, slot hit */
	for (long i = 0; i < n; i++)
		vt_read(b);
	t3 = now_s();
	/* a default-mode site moving over 64 pages: the slot misses, the
	 * stub finds the page in the cache */
	for (long i = 0; i < n; i++)
		vt_cread(b + (i & 63) * 4096);
	double t3c = now_s();
	vptrace_flush();
	double t4 = now_s();
	printf("B call_ns %.3f\n", (t1 - t0) * 1e9 / (double)n);
	printf("B exact_ns %.3f\n", (t2 - t1) * 1e9 / (double)n);
	printf("B event_ns %.3f\n", ((t2 - t1) - (t1 - t0)) * 1e9 / (double)n);
	printf("B fastpath_ns %.3f\n", (t3 - t2) * 1e9 / (double)n);
	printf("B cached_ns %.3f\n", ((t3c - t3) - (t1 - t0)) * 1e9 / (double)n);
	printf("B flush_ms %.3f\n", (t4 - t3c) * 1e3);
	return 0;
}

/* the stub alone: runs of 2000 events into a buffer that has room (best
 * of many runs; with VPTRACE_BUFKB=4096 most runs see no hand-off) */
static int hot(int reps)
{
	char *b = pages(64);
	double best = 1e9, bestp = 1e9;
	for (int r = 0; r < reps; r++) {
		double t0 = now_s();
		for (int i = 0; i < 2000; i++)
			plain(b + (i & 63) * 4096);
		double t1 = now_s();
		for (int i = 0; i < 2000; i++)
			vt_exact(b + (i & 63) * 4096);
		double t2 = now_s();
		if (t2 - t1 < best)
			best = t2 - t1;
		if (t1 - t0 < bestp)
			bestp = t1 - t0;
	}
	printf("B hot_event_ns %.2f\n", (best - bestp) * 1e9 / 2000);
	return 0;
}

/* per-call cost of the stub, and of the calls that hand a full buffer over */
static inline uint64_t rdtsc_(void)
{
	unsigned lo, hi;
	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}
static int cmpu64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}
static int handoffs(long nbuf)
{
	const char *kb = getenv("VPTRACE_BUFKB");
	long bytes = ((kb ? atol(kb) : 64) * 1024 + 4095) / 4096 * 4096;
	long cap = (bytes - 128) / 24, n = nbuf * cap, k = 0, m = 0;
	char *b = pages(64);
	uint64_t *ev = malloc((size_t)n * 8), *ho = malloc((size_t)nbuf * 8), c0, c1;
	double t0, t1;
	vt_exact(b); /* the thread's first event: setup, a buffer */
	t0 = now_s();
	c0 = rdtsc_();
	sleep_ms(100);
	t1 = now_s();
	c1 = rdtsc_();
	double nspc = (t1 - t0) * 1e9 / (double)(c1 - c0);
	for (long i = 1; i <= n; i++) {
		uint64_t a = rdtsc_();
		vt_exact(b + (i & 63) * 4096);
		uint64_t d = rdtsc_() - a;
		if (i % cap == 0) {
			ho[m++] = d; /* this call found the buffer full */
			sleep_ms(2); /* let the aggregator take it */
		} else
			ev[k++] = d;
	}
	/* the rdtsc pair itself */
	uint64_t base[1000];
	for (int i = 0; i < 1000; i++) {
		uint64_t a = rdtsc_();
		base[i] = rdtsc_() - a;
	}
	qsort(ev, (size_t)k, 8, cmpu64);
	qsort(ho, (size_t)m, 8, cmpu64);
	qsort(base, 1000, 8, cmpu64);
	printf("B handoff_ns %.1f\n", (double)(ho[m / 2] - base[500]) * nspc);
	printf("B handoff_p90_ns %.1f\n", (double)(ho[m * 9 / 10] - base[500]) * nspc);
	printf("B call_event_ns %.1f\n", (double)(ev[k / 2] - base[500]) * nspc);
	return 0;
}

/* threads generating events concurrently: consumer throughput */
static long tp_n;
static void *tp_thread(void *arg)
{
	char *b = arg;
	for (long i = 0; i < tp_n; i++)
		vt_exact(b + (i % 4096) * 4096);
	return NULL;
}

static int throughput(int nthreads, long n)
{
	pthread_t th[64];
	double t0, t1, t2;
	tp_n = n;
	char *bufs[64];
	for (int k = 0; k < nthreads; k++)
		bufs[k] = pages(4096);
	t0 = now_s();
	for (int k = 0; k < nthreads; k++)
		pthread_create(&th[k], NULL, tp_thread, bufs[k]);
	for (int k = 0; k < nthreads; k++)
		pthread_join(th[k], NULL);
	t1 = now_s();
	vptrace_flush();
	t2 = now_s();
	printf("B tp_events %ld\n", n * nthreads);
	printf("B tp_record_s %.4f\n", t1 - t0);
	printf("B tp_total_s %.4f\n", t2 - t0);
	return 0;
}

/* probetable: what inline probes read in a thread's TLS (ABI.md "The
 * inline cache probe"): vpt_probe_tls at 112, the table probes read, never
 * 0 (zeros until the thread has a cache, then the cache), and the same
 * state under vpt_probe_thread with the cache's address at 88, 0 until
 * there is one, which objects of earlier versions test. */
struct probe_view {
	uint8_t pad[88];
	const uint64_t *cache; /* 88 */
	uint8_t pad2[16];
	const uint64_t *probe; /* 112 */
};
extern __thread struct probe_view vpt_probe_tls __attribute__((tls_model("initial-exec")));
extern __thread struct probe_view vpt_probe_thread __attribute__((tls_model("initial-exec")));

static void *probe_thread(void *arg)
{
	char *buf = arg;
	int bad = 0;
	const uint64_t *before = vpt_probe_tls.probe;
	uint64_t sum = 0;
	if (&vpt_probe_tls != &vpt_probe_thread)
		bad |= 1;
	if (!before || vpt_probe_thread.cache)
		bad |= 2;
	for (long i = 0; before && i < 32768; i++)
		sum |= before[i];
	if (sum)
		bad |= 4;
	CR(buf); /* a default-mode site's event: the thread's cache */
	if (!vpt_probe_thread.cache || vpt_probe_tls.probe != vpt_probe_thread.cache)
		bad |= 8;
	printf("P %d %d\n", bad, before == vpt_probe_tls.probe);
	return NULL;
}

static int probetable(void)
{
	char *buf = malloc(4096);
	pthread_t th;
	if (!buf || pthread_create(&th, NULL, probe_thread, buf) || pthread_join(th, NULL))
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "basic";
	long a = argc > 2 ? atol(argv[2]) : 0, b = argc > 3 ? atol(argv[3]) : 0;
	setvbuf(stdout, NULL, _IOFBF, 1 << 20);
	if (!strcmp(s, "basic"))
		return basic(a ? (int)a : 4);
	if (!strcmp(s, "churn"))
		return churn(a ? (int)a : 2000, b ? (int)b : 50);
	if (!strcmp(s, "signals"))
		return signals(a ? (int)a : 2, b ? (int)b : 300);
	if (!strcmp(s, "fork"))
		return forktest();
	if (!strcmp(s, "epochs"))
		return epochs();
	if (!strcmp(s, "cache"))
		return cachetest();
	if (!strcmp(s, "probetable"))
		return probetable();
	if (!strcmp(s, "smallstack"))
		return smallstack();
	if (!strcmp(s, "rep"))
		return reptest();
	if (!strcmp(s, "forkquiet"))
		return forkquiet();
	if (!strcmp(s, "exitthread"))
		return exitthread();
	if (!strcmp(s, "stopstart"))
		return stopstart();
	if (!strcmp(s, "startstopped"))
		return startstopped();
	if (!strcmp(s, "crash"))
		return crash();
	if (!strcmp(s, "flushwait"))
		return flushwait();
	if (!strcmp(s, "quickexit"))
		return quickexit();
	if (!strcmp(s, "exec"))
		return exectest(argc > 2 ? argv[2] : "execve");
	if (!strcmp(s, "execd"))
		return execd();
	if (!strcmp(s, "execfail"))
		return execfail();
	if (!strcmp(s, "forkthen"))
		return forkthen(argc > 2 ? argv[2] : "exec");
	if (!strcmp(s, "regs"))
		return regs();
	if (!strcmp(s, "stress"))
		return stress(a ? (int)a : 3, b ? b : 1000000);
	if (!strcmp(s, "bench"))
		return bench(a ? a : 20000000);
	if (!strcmp(s, "hot"))
		return hot(a ? (int)a : 300);
	if (!strcmp(s, "handoffs"))
		return handoffs(a ? a : 200);
	if (!strcmp(s, "throughput"))
		return throughput(a ? (int)a : 2, b ? b : 5000000);
	fprintf(stderr, "vt: unknown scenario %s\n", s);
	return 2;
}

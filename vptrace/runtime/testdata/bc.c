/*
 * bc.c: drives the hand-made blockcount objects of bc.S (and bclib.S's
 * libbc.so) and prints what the trace must hold, for blocks_test.go:
 *
 *   E pid tid function offset count    a block's executions in a thread
 *   R name ok|what differs             a register check
 *   U 1|0                              libbc.so was unloaded by dlclose
 *
 * Modes:
 *   threads        main and 4 threads count in A and B: three threads exit
 *                  (one runs A again in a TLS destructor after the runtime's
 *                  has run), one still runs when main returns; B runs before
 *                  its constructor stored its tpoff, and after
 *   fork [_exit]   main counts, forks a child that counts and exits; with
 *                  _exit, a second child that leaves with _exit
 *   regs           vpt_blocks_thread preserves registers, flags, xmm
 *   dlopen LIB     libbc.so loaded, counted in by main and two threads,
 *                  unloaded while one of them lives, loaded and counted
 *                  again
 *   exec           main counts, then execs itself (mode idle: nothing)
 *   churn          12 waves of 16 threads count and exit while another
 *                  thread calls vptrace_flush in a loop
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

void work(long n);
void bwork(long n);
void bcb_ctor(void);
uint64_t bca_word0(void);

/* ---- the model: what each thread ran ---- */

struct tally {
	const char *func;
	unsigned off;
	unsigned long long n;
};
static __thread struct tally tal[8];
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

static void count(const char *func, unsigned off, unsigned long long n)
{
	int i;
	if (n == 0)
		return;
	for (i = 0; i < 8 && tal[i].func; i++)
		if (tal[i].func == func && tal[i].off == off)
			break;
	if (i == 8)
		abort();
	tal[i].func = func;
	tal[i].off = off;
	tal[i].n += n;
}

static const char W[] = "work", B[] = "bwork", L[] = "libwork";

static void do_work(long n)
{
	work(n);
	count(W, 0x0, 1);
	count(W, 0x12, (unsigned long long)n);
	count(W, 0x1c, 1);
}

static void do_bwork(long n)
{
	bwork(n);
	count(B, 0x0, 1);
	count(B, 0x9, (unsigned long long)n);
}

static void (*libwork)(long);

static void do_libwork(long n)
{
	libwork(n);
	count(L, 0x0, 1);
	count(L, 0x20, (unsigned long long)n);
}

/* print this thread's tally (and forget it) */
static void report(void)
{
	pthread_mutex_lock(&out_mu);
	for (int i = 0; i < 8 && tal[i].func; i++)
		printf("E %d %ld %s %#x %llu\n", getpid(), (long)syscall(SYS_gettid), tal[i].func, tal[i].off, tal[i].n);
	fflush(stdout);
	pthread_mutex_unlock(&out_mu);
	memset(tal, 0, sizeof tal);
}

/* ---- threads ---- */

static pthread_key_t late_key;
static sem_t ready, never;

/* a TLS destructor that runs after the runtime's (its key is newer):
 * the thread registers again, and the runtime's destructor runs again */
static void late_dtor(void *arg)
{
	(void)arg;
	do_work(5);
	report();
}

static void *worker(void *arg)
{
	long i = (long)arg;
	for (long j = 0; j <= i; j++)
		do_work(100 * (i + 1));
	do_bwork(i);
	if (i == 0)
		pthread_setspecific(late_key, (void *)1);
	if (i == 3) {
		/* still running when main returns: the exit writes its counts */
		report();
		sem_post(&ready);
		sem_wait(&never);
	}
	report();
	return NULL;
}

static int mode_threads(void)
{
	pthread_t th[4];
	do_work(10); /* the runtime's key first: late_key is newer */
	if (pthread_key_create(&late_key, late_dtor) != 0)
		return 1;
	do_bwork(3); /* before B's constructor: counted all the same */
	bcb_ctor();
	do_bwork(4);
	sem_init(&ready, 0, 0);
	sem_init(&never, 0, 0);
	for (long i = 0; i < 4; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)i) != 0)
			return 1;
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	sem_wait(&ready);
	do_work(0);
	report();
	return 0;
}

/* ---- fork ---- */

static int mode_fork(int with_exit)
{
	int st;
	do_work(3);
	do_work(3);
	fflush(stdout);
	pid_t c = fork();
	if (c < 0)
		return 1;
	if (c == 0) {
		memset(tal, 0, sizeof tal); /* the parent's */
		do_work(7);
		report();
		exit(0);
	}
	waitpid(c, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	if (with_exit) {
		fflush(stdout);
		c = fork();
		if (c == 0) {
			memset(tal, 0, sizeof tal);
			do_work(9);
			do_work(1);
			report();
			_exit(0);
		}
		waitpid(c, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 1;
	}
	do_work(1);
	report();
	return 0;
}

/* ---- registers ---- */

struct regs {
	uint64_t gpr[16];
	uint64_t flags;
	uint8_t xmm[16][16];
};
_Static_assert(sizeof(struct regs) == 392, "regs");
void bc_regcheck(const struct regs *in, struct regs *out);
void bc_regcheck_odd(const struct regs *in, struct regs *out);

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static void *regthread(void *arg)
{
	int odd = (int)(long)arg;
	struct regs in, out;
	char what[256] = "";
	/* CF PF AF ZF SF OF, DF: random; bit 1 always set */
	const uint64_t fmask = 0x8d5 | 0x400;
	for (int i = 0; i < 16; i++)
		in.gpr[i] = rnd();
	in.flags = (rnd() & fmask) | 0x2;
	for (int i = 0; i < 16; i++)
		for (int k = 0; k < 16; k++)
			in.xmm[i][k] = (uint8_t)rnd();
	memset(&out, 0, sizeof out);
	if (bca_word0() != 0)
		snprintf(what, sizeof what, "word 0 set before the call");
	(odd ? bc_regcheck_odd : bc_regcheck)(&in, &out);
	for (int i = 0; i < 16 && !what[0]; i++)
		if (i != 4 && in.gpr[i] != out.gpr[i])
			snprintf(what, sizeof what, "gpr %d: %#lx -> %#lx", i, (unsigned long)in.gpr[i], (unsigned long)out.gpr[i]);
	if (!what[0] && (in.flags & fmask) != (out.flags & fmask))
		snprintf(what, sizeof what, "flags %#lx -> %#lx", (unsigned long)in.flags, (unsigned long)out.flags);
	for (int i = 0; i < 16 && !what[0]; i++)
		if (memcmp(in.xmm[i], out.xmm[i], 16) != 0)
			snprintf(what, sizeof what, "xmm%d", i);
	if (!what[0] && bca_word0() != 1)
		snprintf(what, sizeof what, "word 0 is %lu after the call", (unsigned long)bca_word0());
	pthread_mutex_lock(&out_mu);
	printf("R %s %s\n", odd ? "odd" : "even", what[0] ? what : "ok");
	pthread_mutex_unlock(&out_mu);
	return NULL;
}

static int mode_regs(void)
{
	for (int k = 0; k < 8; k++) {
		pthread_t th;
		if (pthread_create(&th, NULL, regthread, (void *)(long)(k & 1)) != 0)
			return 1;
		pthread_join(th, NULL);
	}
	return 0;
}

/* ---- dlopen ---- */

static const char *libpath;
static sem_t go_on, stayed;

static void *libthread(void *arg)
{
	long stay = (long)arg;
	do_libwork(6 + stay);
	if (stay) {
		sem_post(&stayed);
		sem_wait(&go_on); /* libbc.so unloaded and loaded again meanwhile */
		do_libwork(9);
	}
	report();
	return NULL;
}

static void *load(void)
{
	void *h = dlopen(libpath, RTLD_NOW);
	if (!h || !(libwork = (void (*)(long))dlsym(h, "libwork"))) {
		fprintf(stderr, "dlopen %s: %s\n", libpath, dlerror());
		exit(2);
	}
	return h;
}

static int mode_dlopen(void)
{
	pthread_t t1, t2;
	void *h = load();
	sem_init(&go_on, 0, 0);
	sem_init(&stayed, 0, 0);
	do_libwork(5);
	pthread_create(&t1, NULL, libthread, (void *)0);
	pthread_join(t1, NULL);
	pthread_create(&t2, NULL, libthread, (void *)1);
	sem_wait(&stayed);
	dlclose(h);
	printf("U %d\n", dlopen(libpath, RTLD_NOW | RTLD_NOLOAD) == NULL);
	h = load();
	do_libwork(8);
	sem_post(&go_on);
	pthread_join(t2, NULL);
	report();
	return 0;
}

/* ---- churn ---- */

int vptrace_flush(void);
static volatile int churning = 1;

static void *churner(void *arg)
{
	long i = (long)arg;
	do_work(i % 13);
	do_bwork(i % 5);
	do_work(1);
	report();
	return NULL;
}

/* vptrace_flush writes every registered thread's counts, while threads
 * register and exit */
static void *flusher(void *arg)
{
	(void)arg;
	while (churning)
		vptrace_flush();
	return NULL;
}

static int mode_churn(void)
{
	pthread_t fl, th[16];
	bcb_ctor();
	if (pthread_create(&fl, NULL, flusher, NULL) != 0)
		return 1;
	for (long wave = 0; wave < 12; wave++) {
		for (long k = 0; k < 16; k++)
			if (pthread_create(&th[k], NULL, churner, (void *)(wave * 16 + k)) != 0)
				return 1;
		for (int k = 0; k < 16; k++)
			pthread_join(th[k], NULL);
	}
	churning = 0;
	pthread_join(fl, NULL);
	return 0;
}

/* ---- exec ---- */

static int mode_exec(const char *self)
{
	do_work(6);
	do_work(2);
	report();
	execl(self, self, "idle", (char *)NULL);
	return 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "exec"))
		return mode_exec(argv[0]);
	if (argc >= 2 && !strcmp(argv[1], "idle"))
		return 0;
	if (argc >= 2 && !strcmp(argv[1], "churn"))
		return mode_churn();
	if (argc >= 2 && !strcmp(argv[1], "threads"))
		return mode_threads();
	if (argc >= 2 && !strcmp(argv[1], "fork"))
		return mode_fork(argc >= 3 && !strcmp(argv[2], "_exit"));
	if (argc >= 2 && !strcmp(argv[1], "regs"))
		return mode_regs();
	if (argc >= 3 && !strcmp(argv[1], "dlopen")) {
		libpath = argv[2];
		return mode_dlopen();
	}
	fprintf(stderr, "usage: bc threads|fork [_exit]|regs|dlopen LIB|exec|churn\n");
	return 2;
}

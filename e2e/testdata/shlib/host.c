/* host.c: dlopen/dlclose loops of an instrumented plugin (libkern_p.so,
 * kern.c built with KERN=p) for e2e/shlib_test.go; never instrumented.
 * Each of ITERS rounds dlopens the plugin, runs its kernels on the main
 * thread (every 10th round on a new thread too), and dlcloses it; the
 * oracle (oracle.h) holds the pages every thread's plugin code touched.
 * Each dlclose must unload the plugin (checked with RTLD_NOLOAD); the
 * runtime must forget each unloaded copy (its destructor unregisters it)
 * and never read its descriptor again.
 *
 * usage: host PLUGIN ITERS */
#include "oracle.h" /* (first: _GNU_SOURCE) */

#include <dlfcn.h>

#include "kern.h"

#define N 2048 /* longs per array: 4 pages */
#define MAXTHR 128

struct job {
	kern_sum_fn *sum;
	kern_fill_fn *fill;
	long *in, *out, res;
	orc_self self;
};

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	j->res = j->sum(j->in, j->in, j->in, j->in, N) + j->fill(j->out, N, 5);
	return 0;
}

int main(int argc, char **argv)
{
	static struct job jobs[MAXTHR];
	long iters = argc > 2 ? atol(argv[2]) : 0, total = 0;
	int nthr = 0;
	uint64_t seed = 11;
	char nm[64];
	if (iters <= 0 || (iters + 9) / 10 >= MAXTHR)
		orc_die("usage: host PLUGIN ITERS (1 to %d)", (MAXTHR - 1) * 10);
	orc_workload("dlopen");
	long *in = orc_map("main.in", N * sizeof(long), 8), *out = orc_map("main.out", N * sizeof(long), 0);
	for (long i = 0; i < N; i++)
		in[i] = (long)orc_rand(&seed);
	struct job mj = {0, 0, in, out, 0, {0}};
	for (long r = 0; r < iters; r++) {
		void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
		if (!h)
			orc_die("round %ld: dlopen: %s", r, dlerror());
		mj.sum = (kern_sum_fn *)dlsym(h, "kern_p_sum");
		mj.fill = (kern_fill_fn *)dlsym(h, "kern_p_fill");
		if (!mj.sum || !mj.fill)
			orc_die("round %ld: dlsym: %s", r, dlerror());
		work(&mj);
		total += mj.res;
		if (r % 10 == 0) {
			struct job *j = &jobs[nthr];
			pthread_t th;
			*j = mj;
			snprintf(nm, sizeof nm, "t%d.in", nthr);
			j->in = orc_map(nm, N * sizeof(long), 0);
			snprintf(nm, sizeof nm, "t%d.out", nthr);
			j->out = orc_map(nm, N * sizeof(long), 24);
			memcpy(j->in, in, N * sizeof(long));
			if (pthread_create(&th, 0, work, j) != 0)
				orc_die("pthread_create");
			pthread_join(th, 0);
			orc_check(j->res == mj.res, "thread result");
			nthr++;
		}
		if (dlclose(h) != 0)
			orc_die("round %ld: dlclose: %s", r, dlerror());
		/* unloaded: its destructors ran, its code and data are gone */
		if ((h = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD)) != 0)
			orc_die("round %ld: the plugin is still loaded after dlclose", r);
	}
	printf("%ld rounds, %d threads, total %ld\n", iters, nthr, total);
	/* every thread read its input and wrote its output; kern_helper
	 * (the plugin's own: nothing else defines it) read one long a page */
	for (int k = -1; k < nthr; k++) {
		struct job *j = k < 0 ? &mj : &jobs[k];
		snprintf(nm, sizeof nm, "t%d", k);
		orc_thr *t = orc_thread_self(k < 0 ? "main" : nm, &j->self);
		orc_touch(t, j->in, N * sizeof(long), ORC_R);
		orc_touch(t, j->out, N * sizeof(long), ORC_W);
		for (long i = 0; i < N; i += 512)
			orc_touch(t, &j->out[i], sizeof(long), ORC_R);
	}
	orc_write();
	return 0;
}

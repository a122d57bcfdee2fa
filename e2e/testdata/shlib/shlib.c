/* shlib.c: the driver of the shared-library tests (e2e/shlib_test.go),
 * never instrumented. It runs the kernels of kern.c of three components -
 * "exe" (linked into this program), "a" (libkern_a.so, linked) and "b"
 * (libkern_b.so, linked, or dlopen'ed as a plugin) - on three threads,
 * each with buffers of its own, prints their results, and writes the
 * oracle (oracle.h): the pages each thread's instrumented kernels touched.
 *
 * usage: shlib INST [PLUGIN]
 *   INST    the instrumented components, comma-separated ("exe,a,b"), or "-"
 *   PLUGIN  the path of libkern_b.so to dlopen (built with -DPLUGIN; else
 *           kern_b_* are linked)
 */
#include "oracle.h" /* (first: _GNU_SOURCE) */

#include <dlfcn.h>
#include <errno.h>

#define KERN exe
#include "kern.h"

#define NTHR 3
#define NCOMP 3
#define N (16 * 1024) /* longs per array: 32 pages */

kern_sum_fn kern_a_sum, kern_b_sum;
kern_fill_fn kern_a_fill, kern_b_fill;
kern_helper_fn kern_a_helper, kern_b_helper;

struct comp {
	const char *name;
	int inst;
	kern_sum_fn *sum;
	kern_fill_fn *fill;
	kern_helper_fn *helper;
};

static struct comp comps[NCOMP] = {
	{"exe", 0, kern_exe_sum, kern_exe_fill, kern_exe_helper},
	{"a", 0, kern_a_sum, kern_a_fill, kern_a_helper},
	{"b", 0, 0, 0, 0},
};

struct job {
	int k;
	orc_self self;
	long *in[NCOMP][4], *out[NCOMP];
	long res[NCOMP][2];
};

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	for (int c = 0; c < NCOMP; c++) {
		j->res[c][0] = comps[c].sum(j->in[c][0], j->in[c][1], j->in[c][2], j->in[c][3], N);
		j->res[c][1] = comps[c].fill(j->out[c], N, j->k * 10 + c);
	}
	return 0;
}

/* One runtime in the process: the shared runtime, mapped from one file,
 * when anything is instrumented (an instrumented library that carried a
 * runtime of its own would map none); none otherwise. Its Go half
 * (libvptrace-go.so, loaded when the process needs the aggregator) comes
 * from the same directory, if it is mapped. */
static void one_runtime(int inst)
{
	char line[4096], first[4096] = "", gohalf[4096] = "";
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		orc_die("/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof line, f)) {
		char *p = strchr(line, '/'), *base;
		if (!p || !strstr(p, "/libvptrace"))
			continue;
		p[strcspn(p, "\n")] = 0;
		base = strrchr(p, '/') + 1;
		if (!strcmp(base, "libvptrace-go.so")) {
			if (!gohalf[0])
				snprintf(gohalf, sizeof gohalf, "%s", p);
			else if (strcmp(gohalf, p) != 0)
				orc_die("two Go halves mapped: %s and %s", gohalf, p);
			continue;
		}
		if (!first[0])
			snprintf(first, sizeof first, "%s", p);
		else if (strcmp(first, p) != 0)
			orc_die("two runtimes mapped: %s and %s", first, p);
	}
	fclose(f);
	if (inst && !first[0])
		orc_die("instrumented components, but no libvptrace.so mapped");
	if (!inst && (first[0] || gohalf[0]))
		orc_die("nothing instrumented, but %s mapped", first[0] ? first : gohalf);
	if (gohalf[0] && (strlen(gohalf) - strlen("libvptrace-go.so") != strlen(first) - strlen("libvptrace.so") ||
			  strncmp(gohalf, first, strlen(first) - strlen("libvptrace.so")) != 0))
		orc_die("the Go half %s is not the runtime's (%s)", gohalf, first);
}

/* The component whose code a helper address is in. */
static int owner(void *fn)
{
	Dl_info di;
	if (!dladdr(fn, &di) || !di.dli_fname)
		orc_die("dladdr %p failed", fn);
	for (int c = 1; c < NCOMP; c++) {
		char lib[32];
		snprintf(lib, sizeof lib, "libkern_%s.so", comps[c].name);
		if (strstr(di.dli_fname, lib))
			return c;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 7;
	if (argc < 2)
		orc_die("usage: shlib INST [PLUGIN]");
	orc_workload("shlib");
#ifdef PLUGIN
	void *h = argc > 2 ? dlopen(argv[2], RTLD_NOW | RTLD_LOCAL) : 0;
	if (!h)
		orc_die("dlopen: %s", argc > 2 ? dlerror() : "no PLUGIN");
	comps[2].sum = (kern_sum_fn *)dlsym(h, "kern_b_sum");
	comps[2].fill = (kern_fill_fn *)dlsym(h, "kern_b_fill");
	comps[2].helper = (kern_helper_fn *)dlsym(h, "kern_b_helper");
#else
	comps[2].sum = kern_b_sum;
	comps[2].fill = kern_b_fill;
	comps[2].helper = kern_b_helper;
#endif
	for (int c = 0; c < NCOMP; c++) {
		if (!comps[c].sum || !comps[c].fill || !comps[c].helper)
			orc_die("component %s: kernels not found", comps[c].name);
		char *p = strstr(argv[1], comps[c].name);
		comps[c].inst = p && (p == argv[1] || p[-1] == ',') && (p[strlen(comps[c].name)] == 0 || p[strlen(comps[c].name)] == ',');
	}
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->k = k;
		for (int c = 0; c < NCOMP; c++) {
			for (int a = 0; a < 4; a++) {
				snprintf(nm, sizeof nm, "t%d.%s.in%d", k, comps[c].name, a);
				j->in[c][a] = orc_map(nm, N * sizeof(long), 8 * (k + a));
				for (long i = 0; i < N; i++)
					j->in[c][a][i] = (long)orc_rand(&seed);
			}
			snprintf(nm, sizeof nm, "t%d.%s.out", k, comps[c].name);
			j->out[c] = orc_map(nm, N * sizeof(long), 16 * k);
		}
	}
	/* thread 0 is the main thread, the others run one after the other */
	work(&jobs[0]);
	for (int k = 1; k < NTHR; k++) {
		if (pthread_create(&th[k], 0, work, &jobs[k]) != 0)
			orc_die("pthread_create");
		pthread_join(th[k], 0);
	}

	one_runtime(comps[0].inst || comps[1].inst || comps[2].inst);
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		snprintf(nm, sizeof nm, "t%d", k);
		orc_thr *t = orc_thread_self(nm, &j->self);
		for (int c = 0; c < NCOMP; c++) {
			long want = 0;
			for (long i = 0; i < N; i++)
				orc_check(j->out[c][i] == ((k * 10 + c) ^ (i * 7)), "fill");
			for (long i = 0; i < N; i += 512)
				want += j->out[c][i];
			orc_check(j->res[c][1] == want, "helper");
			printf("t%d %s sum %ld fill %ld\n", k, comps[c].name, j->res[c][0], j->res[c][1]);
			if (comps[c].inst) {
				for (int a = 0; a < 4; a++)
					orc_touch(t, j->in[c][a], N * sizeof(long), ORC_R);
				orc_touch(t, j->out[c], N * sizeof(long), ORC_W);
			}
			/* the helper that ran: the first definition the loader
			 * found, whichever component called it */
			if (comps[owner(comps[c].helper())].inst)
				for (long i = 0; i < N; i += 512)
					orc_touch(t, &j->out[c][i], sizeof(long), ORC_R);
		}
	}
	orc_write();
	return 0;
}

/* Driver of the stack workload: 2 threads run the kernels on their own
 * data; the stack arrays' addresses come back from the kernels.
 * usage: stack_drv [SCALE [REPS]] */
#include "oracle.h"
#include "stack.h"

#define NTHR 2
#define DEPTH 40

struct job {
	int k;
	long reps, n, nv;
	orc_self self;
	unsigned char *data;
	unsigned *out;
	long *a;
	int *v;
	uintptr_t hist_at, frames[DEPTH + 1], vla_at;
	long rec, vla;
};

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	for (long r = 0; r < j->reps; r++) {
		stack_hist(j->data, j->n, j->out, &j->hist_at);
		j->rec = stack_rec(j->a, DEPTH, j->frames);
		j->vla = stack_vla(j->v, (int)j->nv, &j->vla_at);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 23;
	orc_workload("stack");
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->k = k;
		j->reps = reps;
		j->n = 100000 * scale + k;
		j->nv = 5000 + 1000 * k; /* 20-24 KiB */
#define MAP(f, w, len, skew) (snprintf(nm, sizeof nm, "t%d.%s", k, w), j->f = orc_map(nm, len, skew))
		MAP(data, "data", j->n, 3);
		MAP(out, "out", 4096 * sizeof(unsigned), 64);
		MAP(a, "a", 300 * (DEPTH + 1) * sizeof(long), 8);
		MAP(v, "v", j->nv * sizeof(int), 20);
		for (long i = 0; i < j->n; i++)
			j->data[i] = (unsigned char)orc_rand(&seed);
		for (long i = 0; i < 300 * (DEPTH + 1); i++)
			j->a[i] = (long)(orc_rand(&seed) % 100);
		for (long i = 0; i < j->nv; i++)
			j->v[i] = (int)(orc_rand(&seed) % 100);
	}
	for (int k = 0; k < NTHR; k++)
		if (pthread_create(&th[k], 0, work, &jobs[k]) != 0)
			orc_die("pthread_create");
	for (int k = 0; k < NTHR; k++)
		pthread_join(th[k], 0);

	uint64_t check = 0;
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		snprintf(nm, sizeof nm, "t%d", k);
		orc_thr *t = orc_thread_self(nm, &j->self);
		unsigned h[4096] = {0};
		for (long i = 0; i < j->n; i++)
			h[j->data[i] * 16 + (i & 15)]++;
		orc_check(memcmp(h, j->out, sizeof h) == 0, "stack_hist");
		orc_touch(t, j->data, j->n, ORC_R);
		orc_touch(t, j->out, sizeof h, ORC_W);
		orc_touch(t, &j->hist_at, sizeof j->hist_at, ORC_W);
		orc_touch(t, (void *)j->hist_at, sizeof h, ORC_RW | ORC_STACK);
		orc_touch(t, j->a, 300 * (DEPTH + 1) * sizeof(long), ORC_R);
		orc_touch(t, j->frames, sizeof j->frames, ORC_W);
		for (int d = 0; d <= DEPTH; d++)
			orc_touch(t, (void *)j->frames[d], 300 * sizeof(long), ORC_RW | ORC_STACK);
		orc_touch(t, j->v, j->nv * sizeof(int), ORC_R);
		orc_touch(t, &j->vla_at, sizeof j->vla_at, ORC_W);
		orc_touch(t, (void *)j->vla_at, j->nv * sizeof(int), ORC_RW | ORC_STACK);
		long s = 0;
		for (int i = 0; i < j->nv; i++)
			s = s * 3 + j->v[j->nv - 1 - i];
		orc_check(s == j->vla, "stack_vla");
		/* the recursion's value is checked by comparing the output
		 * with the plain build's */
		check = check * 31 + (uint64_t)s + (uint64_t)j->rec + h[100];
	}
	orc_write();
	printf("stack threads=%d scale=%ld reps=%ld check=%016llx\n", NTHR, scale, reps, (unsigned long long)check);
	return 0;
}

/* Driver of the leaf workload: 2 threads, each with two vectors, run
 * REPS rounds of axpy and dot through the accessors; the driver repeats
 * the arithmetic and checks the vectors and the sums.
 * usage: leaf_drv [SCALE [REPS]] */
#include "oracle.h"
#include "leaf.h"

#define NTHR 2

struct job {
	long reps;
	orc_self self;
	struct vec *x, *y;
	int64_t sum;
};

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	int64_t s = 0;
	for (long r = 0; r < j->reps; r++) {
		s += leaf_axpy(j->y, j->x, r % 7 - 3);
		s ^= leaf_dot(j->x, j->y);
	}
	j->sum = s;
	return 0;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 5150;
	orc_workload("leaf");
	long n = 4096 * scale - 40;
	int64_t *ref[NTHR][2];
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->reps = reps;
		snprintf(nm, sizeof nm, "t%d.hdr", k);
		j->x = orc_map(nm, 2 * sizeof(struct vec), 4000); /* the two headers straddle nothing */
		j->y = j->x + 1;
		for (int v = 0; v < 2; v++) {
			struct vec *h = v ? j->y : j->x;
			snprintf(nm, sizeof nm, "t%d.%c", k, v ? 'y' : 'x');
			h->n = n;
			h->data = orc_map(nm, n * sizeof(int64_t), 8 * k + 16 * v);
			ref[k][v] = orc_xmalloc(n * sizeof(int64_t));
			for (long i = 0; i < n; i++)
				h->data[i] = ref[k][v][i] = (int64_t)(orc_rand(&seed) % 2001) - 1000;
		}
	}
	for (int k = 0; k < NTHR; k++)
		if (pthread_create(&th[k], 0, work, &jobs[k]) != 0)
			orc_die("pthread_create");
	for (int k = 0; k < NTHR; k++)
		pthread_join(th[k], 0);

	uint64_t check = 0;
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		int64_t *x = ref[k][0], *y = ref[k][1], s = 0;
		for (long r = 0; r < reps; r++) {
			int64_t a = r % 7 - 3, t = 0;
			for (long i = 0; i < n; i++) {
				y[i] += a * x[i];
				t += y[i];
			}
			s += t;
			t = 0;
			for (long i = 0; i < n; i++)
				t += x[i] * y[i];
			s ^= t;
		}
		orc_check(s == j->sum, "sums");
		orc_check(memcmp(y, j->y->data, n * sizeof *y) == 0 && memcmp(x, j->x->data, n * sizeof *x) == 0, "vectors");
		snprintf(nm, sizeof nm, "t%d", k);
		orc_thr *t = orc_thread_self(nm, &j->self);
		if (reps > 0) {
			orc_touch(t, j->x, 2 * sizeof(struct vec), ORC_R);
			orc_touch(t, j->x->data, n * sizeof(int64_t), ORC_R);
			orc_touch(t, j->y->data, n * sizeof(int64_t), ORC_RW);
		}
		check = check * 31 + (uint64_t)s;
		free(x);
		free(y);
	}
	orc_write();
	printf("leaf threads=%d scale=%ld reps=%ld check=%016llx\n", NTHR, scale, reps, (unsigned long long)check);
	return 0;
}

/* Driver of the matmul workload: 2 threads multiply shared A and B into
 * C, each computing half of C's rows (so each reads its half of A and all
 * of B). usage: matmul_drv [SCALE [REPS]] */
#include "oracle.h"
#include "matmul.h"

#define NTHR 2

static long n;
static double *A, *B, *C;
static float *Af, *Bf, *Cf;

struct job {
	int k;
	long r0, r1, reps;
	orc_self self;
};

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	for (long r = 0; r < j->reps; r++) {
		matmul_rows(C, A, B, n, j->r0, j->r1);
		matmul_tiled(Cf, Af, Bf, n, j->r0, j->r1);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	orc_workload("matmul");
	n = 160 * scale + 3;
	size_t nn = (size_t)n * n;
	A = orc_map("A", nn * sizeof *A, 40);
	B = orc_map("B", nn * sizeof *B, 1000);
	C = orc_map("C", nn * sizeof *C, 8);
	Af = orc_map("Af", nn * sizeof *Af, 4);
	Bf = orc_map("Bf", nn * sizeof *Bf, 2000);
	Cf = orc_map("Cf", nn * sizeof *Cf, 12);
	for (size_t i = 0; i < nn; i++) {
		A[i] = (double)(i % 7) - 3;
		B[i] = (double)(i % 5) * 0.5;
		Af[i] = (float)(i % 3);
		Bf[i] = (float)(i % 4) - 1;
	}
	for (int k = 0; k < NTHR; k++) {
		jobs[k].k = k;
		jobs[k].reps = reps;
		jobs[k].r0 = n * k / NTHR;
		jobs[k].r1 = n * (k + 1) / NTHR;
		if (pthread_create(&th[k], 0, work, &jobs[k]) != 0)
			orc_die("pthread_create");
	}
	for (int k = 0; k < NTHR; k++)
		pthread_join(th[k], 0);

	double sum = 0, sumf = 0;
	for (long i = 0; i < n; i += 7)
		for (long j = 0; j < n; j += 3) {
			double s = 0;
			float sf = 0;
			for (long k = 0; k < n; k++) {
				s += A[i * n + k] * B[k * n + j];
				sf += Af[i * n + k] * Bf[k * n + j];
			}
			orc_check(s == C[i * n + j], "matmul_rows");
			orc_check(sf == Cf[i * n + j], "matmul_tiled");
		}
	for (size_t i = 0; i < nn; i++) {
		sum += C[i];
		sumf += Cf[i];
	}
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		snprintf(nm, sizeof nm, "t%d", k);
		orc_thr *t = orc_thread_self(nm, &j->self);
		size_t r0 = j->r0 * n, len = (j->r1 - j->r0) * n;
		orc_touch(t, A + r0, len * sizeof *A, ORC_R);
		orc_touch(t, B, nn * sizeof *B, ORC_R);
		orc_touch(t, C + r0, len * sizeof *C, ORC_W);
		orc_touch(t, Af + r0, len * sizeof *Af, ORC_R);
		orc_touch(t, Bf, nn * sizeof *Bf, ORC_R);
		orc_touch(t, Cf + r0, len * sizeof *Cf, ORC_RW);
	}
	orc_write();
	printf("matmul n=%ld reps=%ld sum=%.6e sumf=%.6e\n", n, reps, sum, sumf);
	return 0;
}

/* Driver of the unaligned workload: 2 threads; each kernel gets a buffer
 * of its own of PAIRS page pairs (page-aligned) and straddles from the
 * first page of each pair into the second.
 * usage: unaligned_drv [SCALE [REPS]] */
#include "oracle.h"
#include "unaligned.h"

#define NTHR 2
#define PAIR 8192

enum { L8, L4, L2, L16, L32, S8, S16, S32, PK, ONE, NK };
static const char *kname[NK] = {"load8", "load4", "load2", "load16", "load32", "store8", "store16", "store32", "packed", "one"};
static const long kat[NK] = {4092, 4093, 4095, 4090, 4080, 4089, 4088, 4070, 4093, 4094};
static const int ksize[NK] = {8, 4, 2, 16, 32, 8, 16, 32, 8, 8};

struct job {
	int k;
	long reps, pairs;
	orc_self self;
	unsigned char *buf[NK];
	uint64_t res[NK];
};

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	long p = j->pairs;
	for (long r = 0; r < j->reps; r++) {
		j->res[L8] = un_load8(j->buf[L8], p, kat[L8]);
		j->res[L4] = un_load4(j->buf[L4], p, kat[L4]);
		j->res[L2] = un_load2(j->buf[L2], p, kat[L2]);
		j->res[L16] = un_load16(j->buf[L16], p, kat[L16]);
		j->res[L32] = un_load32(j->buf[L32], p, kat[L32]);
		un_store8(j->buf[S8], p, kat[S8], 0x0102030405060708ULL);
		un_store16(j->buf[S16], p, kat[S16]);
		un_store32(j->buf[S32], p, kat[S32]);
		j->res[PK] = un_packed((const struct pk *)j->buf[PK], p);
		j->res[ONE] = un_load8_one(j->buf[ONE] + kat[ONE]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 11;
	orc_workload("unaligned");
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->k = k;
		j->reps = reps;
		j->pairs = 256 * scale + k;
		for (int i = 0; i < NK; i++) {
			long pairs = i == ONE ? 1 : j->pairs;
			snprintf(nm, sizeof nm, "t%d.%s", k, kname[i]);
			j->buf[i] = orc_map(nm, pairs * PAIR, 0);
			for (long q = 0; q < pairs; q++)
				for (int b = -8; b < 40; b++)
					if (kat[i] + b >= 0 && kat[i] + b < PAIR)
						j->buf[i][q * PAIR + kat[i] + b] = (unsigned char)orc_rand(&seed);
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
		snprintf(nm, sizeof nm, "t%d", k);
		orc_thr *t = orc_thread_self(nm, &j->self);
		for (int i = 0; i < NK; i++) {
			long pairs = i == ONE ? 1 : j->pairs;
			int st = i == S8 || i == S16 || i == S32;
			for (long q = 0; q < pairs; q++)
				orc_touch(t, j->buf[i] + q * PAIR + kat[i], ksize[i], st ? ORC_W : ORC_R);
			check = check * 31 + j->res[i];
		}
		/* spot-check results against plain C */
		uint64_t s8 = 0;
		for (long q = 0; q < j->pairs; q++) {
			uint64_t v;
			memcpy(&v, j->buf[L8] + q * PAIR + kat[L8], 8);
			s8 = s8 * 3 + v;
			memcpy(&v, j->buf[S8] + q * PAIR + kat[S8], 8);
			orc_check(v == 0x0102030405060708ULL + (uint64_t)q, "store8");
			orc_check(j->buf[S16][q * PAIR + kat[S16] + 15] == (unsigned char)(16 + q), "store16");
			orc_check(j->buf[S32][q * PAIR + kat[S32] + 31] == (unsigned char)(93 + q), "store32");
		}
		orc_check(s8 == j->res[L8], "load8");
		uint64_t one;
		memcpy(&one, j->buf[ONE] + kat[ONE], 8);
		orc_check(one == j->res[ONE], "load8_one");
	}
	orc_write();
	printf("unaligned threads=%d scale=%ld reps=%ld check=%016llx\n", NTHR, scale, reps, (unsigned long long)check);
	return 0;
}

/* Driver of the memops workload: 2 threads, each copying and setting its
 * own buffers with every kernel (sources only read, destinations only
 * written), plus zero-length operations on buffers nothing else touches.
 * usage: memops_drv [SCALE [REPS]] */
#include "oracle.h"
#include "memops.h"

#define NTHR 2

enum { CLOOP, SLOOP, CWORDS, CBUILTIN, SBUILTIN, MOVSB, MOVSQ, STOSB, STOSQ, MOVSBBACK, NOPS };
static const char *opname[NOPS] = {"copyloop", "setloop", "copywords", "copybuiltin", "setbuiltin",
				   "movsb", "movsq", "stosb", "stosq", "movsbback"};

struct job {
	int k;
	long reps;
	orc_self self;
	size_t n;
	unsigned char *src[NOPS], *dst[NOPS];
	unsigned char *zsrc, *zdst;
	struct blob *bs, *bd;
	unsigned char *scan, *cmpa, *cmpb;
	size_t scan_n, scan_at, cmp_n, cmp_at;
	long scan_idx, scan_none;
	int cmp_res;
};

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	size_t n = j->n;
	for (long r = 0; r < j->reps; r++) {
		mem_copy_loop(j->dst[CLOOP], j->src[CLOOP], n);
		mem_set_loop(j->dst[SLOOP], 0x11, n);
		mem_copy_words((long *)j->dst[CWORDS], (const long *)j->src[CWORDS], n / 8);
		mem_copy_builtin(j->dst[CBUILTIN], j->src[CBUILTIN], n);
		mem_set_builtin(j->dst[SBUILTIN], 0x22, n);
		mem_rep_movsb(j->dst[MOVSB], j->src[MOVSB], n);
		mem_rep_movsq(j->dst[MOVSQ], j->src[MOVSQ], n / 8);
		mem_rep_stosb(j->dst[STOSB], 0x33, n);
		mem_rep_stosq(j->dst[STOSQ], 0x4444444444444444L, n / 8);
		mem_rep_movsb_back(j->dst[MOVSBBACK], j->src[MOVSBBACK], n);
		mem_copy_struct(j->bd, j->bs);
		/* zero lengths: no page touched */
		mem_rep_movsb(j->zdst, j->zsrc, 0);
		mem_rep_movsq(j->zdst + 4096, j->zsrc + 4096, 0);
		mem_rep_stosb(j->zdst + 8192, 1, 0);
		mem_rep_stosq(j->zdst + 12288, 1, 0);
		mem_copy_builtin(j->zdst + 16384, j->zsrc + 16384, 0);
		mem_set_builtin(j->zdst + 20480, 0, 0);
		/* conditional repeats: stop at the match / difference */
		j->scan_idx = mem_rep_scasb(j->scan, 0x7e, j->scan_n);
		j->scan_none = mem_rep_scasb(j->zsrc + 24576, 0x7e, 0);
		j->cmp_res = mem_rep_cmpsb(j->cmpa, j->cmpb, j->cmp_n);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 3;
	orc_workload("memops");
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->k = k;
		j->reps = reps;
		j->n = (size_t)(256 * 1024 * scale + 8 * 123 + 24 * k);
		for (int o = 0; o < NOPS; o++) {
			snprintf(nm, sizeof nm, "t%d.%s.src", k, opname[o]);
			j->src[o] = orc_map(nm, j->n, 8 * o + 40 * k + 8);
			snprintf(nm, sizeof nm, "t%d.%s.dst", k, opname[o]);
			j->dst[o] = orc_map(nm, j->n, 8 * (NOPS - o) + 8);
			for (size_t i = 0; i < j->n; i++)
				j->src[o][i] = (unsigned char)orc_rand(&seed);
		}
		snprintf(nm, sizeof nm, "t%d.zsrc", k);
		j->zsrc = orc_map(nm, 8 * 4096, 0);
		snprintf(nm, sizeof nm, "t%d.zdst", k);
		j->zdst = orc_map(nm, 8 * 4096, 0);
		snprintf(nm, sizeof nm, "t%d.blobsrc", k);
		j->bs = orc_map(nm, sizeof *j->bs, 4096 - 1000);
		snprintf(nm, sizeof nm, "t%d.blobdst", k);
		j->bd = orc_map(nm, sizeof *j->bd, 4096 - 2000);
		for (int i = 0; i < 300; i++)
			j->bs->w[i] = i * 3 + k;
		j->scan_n = 6 * 4096;
		j->scan_at = 4096 + 100 + k; /* the match is on the second page */
		snprintf(nm, sizeof nm, "t%d.scan", k);
		j->scan = orc_map(nm, j->scan_n, 0);
		j->scan[j->scan_at] = 0x7e;
		j->cmp_n = 6 * 4096;
		j->cmp_at = 2 * 4096 + 7; /* the first difference is on the third page */
		snprintf(nm, sizeof nm, "t%d.cmpa", k);
		j->cmpa = orc_map(nm, j->cmp_n, 0);
		snprintf(nm, sizeof nm, "t%d.cmpb", k);
		j->cmpb = orc_map(nm, j->cmp_n, 0);
		j->cmpb[j->cmp_at] = 1;
	}
	for (int k = 0; k < NTHR; k++)
		if (pthread_create(&th[k], 0, work, &jobs[k]) != 0)
			orc_die("pthread_create");
	for (int k = 0; k < NTHR; k++)
		pthread_join(th[k], 0);

	uint64_t check = 0;
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		size_t n = j->n;
		snprintf(nm, sizeof nm, "t%d", k);
		orc_thr *t = orc_thread_self(nm, &j->self);
		for (int o = 0; o < NOPS; o++) {
			size_t len = (o == CWORDS || o == MOVSQ || o == STOSQ) ? n / 8 * 8 : n;
			int isset = o == SLOOP || o == SBUILTIN || o == STOSB || o == STOSQ;
			int c = o == SLOOP ? 0x11 : o == SBUILTIN ? 0x22 : o == STOSB ? 0x33 : 0x44;
			for (size_t i = 0; i < len; i++) {
				if (isset)
					orc_check(j->dst[o][i] == c, opname[o]);
				else
					orc_check(j->dst[o][i] == j->src[o][i], opname[o]);
			}
			if (!isset)
				orc_touch(t, j->src[o], len, ORC_R);
			orc_touch(t, j->dst[o], len, ORC_W);
		}
		orc_check(memcmp(j->bd, j->bs, sizeof *j->bs) == 0, "copy_struct");
		orc_touch(t, j->bs, sizeof *j->bs, ORC_R);
		orc_touch(t, j->bd, sizeof *j->bd, ORC_W);
		orc_check(j->scan_idx == (long)j->scan_at, "rep scasb");
		orc_check(j->scan_none == 0, "rep scasb, zero count");
		orc_touch(t, j->scan, j->scan_at + 1, ORC_R);
		orc_check(j->cmp_res == 1, "rep cmpsb");
		orc_touch(t, j->cmpa, j->cmp_at + 1, ORC_R);
		orc_touch(t, j->cmpb, j->cmp_at + 1, ORC_R);
		check = check * 31 + j->dst[CLOOP][n / 2] + j->dst[MOVSBBACK][n - 1];
	}
	orc_note("zsrc/zdst regions: only zero-length operations, nothing may be traced there");
	orc_note("scan: repne scasb stops at its match (+0x%zx), cmpa/cmpb: repe cmpsb at the first difference (+0x%zx)",
		 jobs[0].scan_at, jobs[0].cmp_at);
	orc_write();
	printf("memops threads=%d scale=%ld reps=%ld check=%016llx\n", NTHR, scale, reps, (unsigned long long)check);
	return 0;
}

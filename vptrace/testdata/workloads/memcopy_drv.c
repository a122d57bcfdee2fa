/* Driver of the memcopy workload: 2 threads share a pool of records; each
 * clears its output records, gathers random records into them and packs
 * other random records into a message buffer, REPS times. The driver
 * checks the records and the packed bytes.
 * usage: memcopy_drv [SCALE [REPS]] */
#include "oracle.h"
#include "memcopy.h"

#define NTHR 2

struct job {
	long reps, n, bytes, packed;
	orc_self self;
	uint32_t *idx, *idx2;
	struct rec *out;
	uint8_t *buf;
};

static const struct rec *pool;

static void *work(void *arg)
{
	struct job *j = arg;
	orc_self_init(&j->self);
	for (long r = 0; r < j->reps; r++) {
		mc_clear(j->out, j->n);
		j->bytes = mc_gather(j->out, pool, j->idx, j->n);
		j->packed = mc_pack(j->buf, pool, j->idx2, j->n);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long scale = orc_scale(argc, argv), reps = argc > 2 ? atol(argv[2]) : 1;
	struct job jobs[NTHR];
	pthread_t th[NTHR];
	char nm[64];
	uint64_t seed = 2024;
	orc_workload("memcopy");
	long npool = 32768 * scale;
	struct rec *p = orc_map("pool", npool * sizeof *p, 0);
	for (long i = 0; i < npool; i++) {
		p[i].id = orc_rand(&seed);
		p[i].len = (uint32_t)(orc_rand(&seed) % 113);
		p[i].flags = (uint32_t)i;
		for (int b = 0; b < 112; b++)
			p[i].body[b] = (uint8_t)(orc_rand(&seed) >> 13);
	}
	pool = p;
	for (int k = 0; k < NTHR; k++) {
		struct job *j = &jobs[k];
		memset(j, 0, sizeof *j);
		j->reps = reps;
		j->n = 8000 * scale + 5 * k;
		snprintf(nm, sizeof nm, "t%d.idx", k);
		j->idx = orc_map(nm, j->n * sizeof *j->idx, 12);
		snprintf(nm, sizeof nm, "t%d.idx2", k);
		j->idx2 = orc_map(nm, j->n * sizeof *j->idx2, 100);
		snprintf(nm, sizeof nm, "t%d.out", k);
		j->out = orc_map(nm, j->n * sizeof *j->out, 64);
		snprintf(nm, sizeof nm, "t%d.buf", k);
		j->buf = orc_map(nm, j->n * (sizeof(struct msg) + 112), 8);
		for (long i = 0; i < j->n; i++) {
			j->idx[i] = (uint32_t)(orc_rand(&seed) % (uint64_t)npool);
			j->idx2[i] = (uint32_t)(orc_rand(&seed) % (uint64_t)npool);
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
		long bytes = 0, off = 0;
		for (long i = 0; i < j->n; i++) {
			const struct rec *r = &p[j->idx[i]];
			orc_check(memcmp(&j->out[i], r, sizeof *r) == 0, "gathered record");
			bytes += r->len;
			orc_touch(t, &j->idx[i], 4, ORC_R);
			orc_touch(t, r, sizeof *r, ORC_R);
			orc_touch(t, &j->out[i], sizeof *r, ORC_RW); /* cleared, copied; len read back */
		}
		for (long i = 0; i < j->n; i++) {
			const struct rec *r = &p[j->idx2[i]];
			struct msg h;
			memcpy(&h, j->buf + off, sizeof h);
			orc_check(h.id == r->id && h.len == r->len && h.pad == 0, "packed header");
			orc_check(memcmp(j->buf + off + sizeof h, r->body, r->len) == 0, "packed body");
			size_t pad = (r->len + 7) & ~7u;
			for (size_t b = r->len; b < pad; b++)
				orc_check(j->buf[off + sizeof h + b] == 0, "packed padding");
			orc_touch(t, &j->idx2[i], 4, ORC_R);
			orc_touch(t, r, sizeof *r, ORC_R);
			orc_touch(t, j->buf + off, sizeof h + pad, ORC_W);
			check = check * 31 + j->buf[off + sizeof h] + r->len;
			off += sizeof h + pad;
		}
		orc_check(bytes == j->bytes && off == j->packed, "byte counts");
		check = check * 31 + (uint64_t)bytes * 7 + (uint64_t)off;
	}
	orc_write();
	printf("memcopy threads=%d scale=%ld reps=%ld check=%016llx\n", NTHR, scale, reps, (unsigned long long)check);
	return 0;
}

/* pcs: a personal communication system (PCS) simulation run as a
 * conservative parallel discrete event simulation (PDES), after the
 * experiment of the vptracer thesis (chapter 5): every wireless cell is a
 * logical process with its own state (channel bitmap, the power-management
 * records of its calls, statistics); call arrival, call end, hand-off leave
 * and hand-off receive events live in one calendar queue per worker
 * thread; hand-offs to a cell of another thread travel through per-window
 * outboxes. Time advances in windows of the hand-off latency (the
 * lookahead), with a barrier (in the driver) between windows, so the
 * results do not depend on the number of threads.
 *
 * The kernel (pcs_kern.c) calls nothing: its memory is the driver's
 * arenas, handed over in struct pcs_thread. */
#include <stdint.h>

#define PCS_MAXCH 1024 /* channels per cell, at most */
#define PCS_CHW (PCS_MAXCH / 64)
#define PCS_NBR 6 /* hexagonal cells: 6 neighbours */

enum { EV_ARRIVAL, EV_END, EV_HLEAVE, EV_HRECV, EV_NTYPES };

struct pcs_params {
	long cells, channels, threads;
	double ta, tdur, tres; /* mean inter-arrival, call duration, residence (s) */
	double latency;        /* hand-off latency = window (s) */
	double sir, noise, pmin, pmax;
	uint64_t seed;
};

struct power_rec { /* 64 bytes */
	struct power_rec *next, *prev;
	uint64_t call;
	long channel;
	double power, gain, fading, start;
};

struct cell {
	uint64_t rng;
	int32_t id, owner;
	long busy;
	uint64_t chan[PCS_CHW];
	struct power_rec *recs;
	long nrecs;
	uint64_t next_uid;
	double last_ts, busy_area;
	double power_sum; /* sum of the power assigned at call setup */
	long count[EV_NTYPES];
	long arrivals, completed, blocked, handoff_in, handoff_out, dropped;
	uint64_t digest;
};

struct event {
	struct event *next;
	double ts;
	uint64_t uid; /* tie-break: (source cell << 40) | counter */
	int32_t cell, type;
	struct power_rec *rec; /* END, HLEAVE */
	double left;           /* HRECV: remaining call time */
	uint64_t call;
};

struct msg {
	double ts, left;
	uint64_t uid, call;
	int32_t cell, pad;
};

struct outbox {
	long n, cap;
	struct msg *m;
};

struct pool {
	char *base;
	long size, cap, used; /* used: high-water mark */
	void *free;
};

struct calq {
	struct event **bucket;
	long nb, maxnb, maxnb_used, resizes;
	double width;
	long slot; /* absolute slot (ts / width) being dequeued; cur = slot % nb */
	long n;
	double last; /* time of the last event dequeued */
};

struct pcs_thread {
	const struct pcs_params *p;
	const int32_t *nbr; /* [cells][PCS_NBR] */
	struct cell *cells; /* all cells; this thread owns [c0, c1) */
	long c0, c1, self;
	struct pool recs, events;
	struct calq q;
	struct outbox *out; /* [2][threads][threads]: out[(par*T + src)*T + dst] */
	long window;
	long events_done, min_completed;
	long error; /* nonzero: a pool or an outbox overflowed */
	long count[EV_NTYPES];
};

/* Cells are split into contiguous ranges: thread k owns
 * [pcs_first(k), pcs_first(k + 1)). */
static inline long pcs_first(long k, long cells, long threads) { return k * cells / threads; }
static inline long pcs_owner(long c, long cells, long threads) { return ((c + 1) * threads + cells - 1) / cells - 1; }

void pcs_init(struct pcs_thread *t);
void pcs_deliver(struct pcs_thread *t);
void pcs_window(struct pcs_thread *t, double end);

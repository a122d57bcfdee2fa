/* Driver of the pcs workload: the PCS simulation of the vptracer thesis
 * (chapter 5). It allocates every arena the kernel uses, runs the worker
 * threads window by window with a barrier in between, decides termination,
 * prints summary statistics (identical for any number of threads) and
 * writes the oracle.
 *
 * usage: pcs_drv [key=value]...
 *   cells=1024     logical processes (wireless cells; the thesis used 1024)
 *   channels=1000  channels per cell (at most 1024)
 *   rho=0.5        per-channel utilisation factor: ta = tdur / (rho * channels)
 *   tdur=120       mean call duration (s)
 *   tres=300       mean residence time in a cell (s)
 *   latency=0.5    hand-off latency (s), also the synchronisation window
 *   threads=4      worker threads
 *   calls=500      stop when every cell has completed this many calls
 *                  (the thesis's termination condition; 0: off)
 *   time=0         stop at this simulated time (0: off)
 *   events=0       stop when a thread has processed this many events (the
 *                  thesis's N; 0: off); results then depend on threads
 *   seed=1
 *   verbose=0      1: per-thread statistics on stderr
 */
#include "oracle.h"
#include "pcs.h"

struct wk {
	struct pcs_thread *t; /* in a mapped region of its own */
	orc_self self;
	pthread_t th;
};

static struct pcs_params P;
static long T;
static struct wk *wks;
static pthread_barrier_t bar;
static long calls_goal, events_cap;
static double time_end;
static volatile long done_window = -1;
/* per-window status, double-buffered by window parity */
static long *st_min, *st_events, *st_err;

static int finished(long w)
{
	long par = w & 1, minc = -1, maxev = 0;
	for (long k = 0; k < T; k++) {
		if (st_err[par * T + k])
			return 1;
		if (minc < 0 || st_min[par * T + k] < minc)
			minc = st_min[par * T + k];
		if (st_events[par * T + k] > maxev)
			maxev = st_events[par * T + k];
	}
	if (calls_goal > 0 && minc >= calls_goal)
		return 1;
	if (time_end > 0 && (double)(w + 1) * P.latency >= time_end)
		return 1;
	if (events_cap > 0 && maxev >= events_cap)
		return 1;
	if (calls_goal <= 0 && time_end <= 0 && events_cap <= 0)
		return 1;
	return 0;
}

static void *worker(void *arg)
{
	struct wk *w = arg;
	struct pcs_thread *t = w->t;
	orc_self_init(&w->self);
	pcs_init(t);
	for (long win = 0;; win++) {
		pcs_deliver(t);
		pcs_window(t, (double)(win + 1) * P.latency);
		long par = win & 1;
		st_min[par * T + t->self] = t->min_completed;
		st_events[par * T + t->self] = t->events_done;
		st_err[par * T + t->self] = t->error;
		pthread_barrier_wait(&bar);
		if (finished(win)) {
			if (t->self == 0)
				done_window = win;
			break;
		}
	}
	return 0;
}

static double arg_num(const char *s, const char *key, double def, int argc, char **argv)
{
	size_t n = strlen(key);
	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], key, n) == 0 && argv[i][n] == '=')
			return atof(argv[i] + n + 1);
	(void)s;
	return def;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strchr(argv[i], '='))
			orc_die("usage: %s [cells=N] [channels=N] [rho=X] [threads=N] [calls=N] [time=S] [events=N] [seed=N] ...", argv[0]);
#define ARG(k, d) arg_num(0, k, d, argc, argv)
	P.cells = (long)ARG("cells", 1024);
	P.channels = (long)ARG("channels", 1000);
	double rho = ARG("rho", 0.5);
	P.tdur = ARG("tdur", 120);
	P.tres = ARG("tres", 300);
	P.latency = ARG("latency", 0.5);
	P.threads = T = (long)ARG("threads", 4);
	P.seed = (uint64_t)ARG("seed", 1);
	P.ta = P.tdur / (rho * (double)P.channels);
	P.sir = 0.02;
	P.noise = 1e-3;
	P.pmin = 1e-4;
	P.pmax = 2.0;
	calls_goal = (long)ARG("calls", 500);
	time_end = ARG("time", 0);
	events_cap = (long)ARG("events", 0);
	int verbose = (int)ARG("verbose", 0);
	if (P.cells < 7 || P.channels < 1 || P.channels > PCS_MAXCH || T < 1 || T > P.cells || rho <= 0)
		orc_die("bad parameters");
	orc_workload("pcs");

	/* shared: parameters, cells, the hexagonal neighbour table (a torus of
	 * side x side cells, offset rows), outboxes */
	struct pcs_params *pp = orc_map("params", sizeof P, 64);
	*pp = P;
	struct cell *cells = orc_map("cells", P.cells * sizeof *cells, 0);
	int32_t *nbr = orc_map("nbr", P.cells * PCS_NBR * sizeof *nbr, 0);
	long side = 1;
	while (side * side < P.cells)
		side++;
	for (long c = 0; c < P.cells; c++) {
		long r = c / side, q = c % side, rows = (P.cells + side - 1) / side;
		long odd = r & 1;
		long dr[PCS_NBR] = {0, 0, -1, -1, 1, 1};
		long dq[PCS_NBR] = {-1, 1, odd - 1, odd, odd - 1, odd};
		for (int k = 0; k < PCS_NBR; k++) {
			long rr = (r + dr[k] + rows) % rows, qq = (q + dq[k] + side) % side;
			long d = rr * side + qq;
			if (d >= P.cells) /* the last row is short: wrap into it */
				d = d % P.cells;
			nbr[c * PCS_NBR + k] = (int32_t)d;
		}
	}
	long maxcells = 0;
	for (long k = 0; k < T; k++) {
		long n = pcs_first(k + 1, P.cells, T) - pcs_first(k, P.cells, T);
		if (n > maxcells)
			maxcells = n;
	}
	long obcap = 64 + 8 * maxcells;
	struct outbox *out = orc_map("outboxes", 2 * T * T * sizeof *out, 0);
	char nm[64];
	for (long par = 0; par < 2; par++)
		for (long s = 0; s < T; s++)
			for (long d = 0; d < T; d++) {
				struct outbox *ob = &out[(par * T + s) * T + d];
				ob->cap = obcap;
				snprintf(nm, sizeof nm, "outbox.%ld.t%ld.t%ld", par, s, d);
				ob->m = orc_map(nm, obcap * sizeof(struct msg), 0);
			}
	st_min = orc_xmalloc(2 * T * sizeof *st_min);
	st_events = orc_xmalloc(2 * T * sizeof *st_events);
	st_err = orc_xmalloc(2 * T * sizeof *st_err);

	/* per thread: its context, record and event pools, queue buckets */
	wks = orc_xmalloc(T * sizeof *wks);
	for (long k = 0; k < T; k++) {
		snprintf(nm, sizeof nm, "t%ld.ctx", k);
		struct pcs_thread *t = wks[k].t = orc_map(nm, sizeof *t, 0);
		t->p = pp;
		t->nbr = nbr;
		t->cells = cells;
		t->self = k;
		t->c0 = pcs_first(k, P.cells, T);
		t->c1 = pcs_first(k + 1, P.cells, T);
		long n = t->c1 - t->c0;
		t->out = out;
		t->recs.size = sizeof(struct power_rec);
		t->recs.cap = n * P.channels;
		snprintf(nm, sizeof nm, "t%ld.recs", k);
		t->recs.base = orc_map(nm, t->recs.cap * t->recs.size, 0);
		t->events.size = sizeof(struct event);
		t->events.cap = n * (P.channels + 2) + 2 * T * obcap + 64;
		snprintf(nm, sizeof nm, "t%ld.events", k);
		t->events.base = orc_map(nm, t->events.cap * t->events.size, 0);
		t->q.maxnb = 16;
		while (t->q.maxnb < 2 * t->events.cap && t->q.maxnb < (1L << 20))
			t->q.maxnb *= 2;
		snprintf(nm, sizeof nm, "t%ld.buckets", k);
		t->q.bucket = orc_map(nm, t->q.maxnb * sizeof *t->q.bucket, 0);
	}

	if (pthread_barrier_init(&bar, 0, (unsigned)T) != 0)
		orc_die("pthread_barrier_init");
	for (long k = 0; k < T; k++)
		if (pthread_create(&wks[k].th, 0, worker, &wks[k]) != 0)
			orc_die("pthread_create");
	for (long k = 0; k < T; k++)
		pthread_join(wks[k].th, 0);

	for (long k = 0; k < T; k++)
		if (wks[k].t->error)
			orc_die("thread %ld: %s overflowed", k, wks[k].t->error == 1 ? "a pool" : "an outbox");

	/* statistics, in cell order: the same for any number of threads */
	long w = done_window;
	double now = (double)(w + 1) * P.latency;
	long tot[EV_NTYPES] = {0}, arr = 0, comp = 0, blk = 0, hin = 0, hout = 0, drop = 0, minc = -1, maxc = 0;
	double busy = 0, power = 0;
	uint64_t digest = 0;
	for (long c = 0; c < P.cells; c++) {
		struct cell *x = &cells[c];
		for (int e = 0; e < EV_NTYPES; e++)
			tot[e] += x->count[e];
		arr += x->arrivals;
		comp += x->completed;
		blk += x->blocked;
		hin += x->handoff_in;
		hout += x->handoff_out;
		drop += x->dropped;
		if (minc < 0 || x->completed < minc)
			minc = x->completed;
		if (x->completed > maxc)
			maxc = x->completed;
		busy += x->busy_area + (double)x->busy * (now - x->last_ts);
		power += x->power_sum;
		digest = (digest ^ x->digest) * 1099511628211ULL + (uint64_t)x->nrecs;
	}
	long events = tot[0] + tot[1] + tot[2] + tot[3];
	printf("pcs cells=%ld channels=%ld rho=%.2f ta=%.6f tdur=%g tres=%g latency=%g seed=%llu calls=%ld time=%g events=%ld\n",
	       P.cells, P.channels, rho, P.ta, P.tdur, P.tres, P.latency, (unsigned long long)P.seed, calls_goal, time_end, events_cap);
	printf("simulated time %.1f s in %ld windows\n", now, w + 1);
	printf("events %ld: arrival %ld, end %ld, hand-off leave %ld, hand-off receive %ld\n", events, tot[EV_ARRIVAL], tot[EV_END],
	       tot[EV_HLEAVE], tot[EV_HRECV]);
	printf("calls: arrived %ld, blocked %ld (%.2f%%), completed %ld (per cell %ld..%ld), hand-offs out %ld in %ld, dropped %ld (%.2f%%)\n",
	       arr, blk, arr ? 100.0 * blk / arr : 0, comp, minc, maxc, hout, hin, drop, hin ? 100.0 * drop / hin : 0);
	printf("channel utilisation %.2f%%, mean power at setup %.6f\n", 100 * busy / (now * (double)P.cells * (double)P.channels),
	       (arr - blk + hin - drop) ? power / (double)(arr - blk + hin - drop) : 0);
	printf("digest %016llx\n", (unsigned long long)digest);
	if (verbose)
		for (long k = 0; k < T; k++) {
			struct pcs_thread *t = wks[k].t;
			fprintf(stderr, "thread %ld (tid %d): cells %ld..%ld, events %ld, records used %ld of %ld, events used %ld of %ld, buckets %ld (max %ld), %ld resizes\n",
				k, wks[k].self.tid, t->c0, t->c1 - 1, t->events_done, t->recs.used, t->recs.cap, t->events.used, t->events.cap,
				t->q.nb, t->q.maxnb_used, t->q.resizes);
		}

	/* the oracle: what each thread's kernel code touched */
	for (long k = 0; k < T; k++) {
		struct pcs_thread *t = wks[k].t;
		snprintf(nm, sizeof nm, "t%ld", k);
		orc_thr *o = orc_thread_self(nm, &wks[k].self);
		orc_touch(o, pp, sizeof *pp, ORC_R);
		orc_touch(o, t, sizeof *t, ORC_RW);
		orc_touch(o, &cells[t->c0], (t->c1 - t->c0) * sizeof *cells, ORC_RW);
		/* pools: every object below the high-water mark was handed out
		 * and written; nothing above it was touched */
		orc_touch(o, t->recs.base, t->recs.used * t->recs.size, ORC_RW);
		orc_touch(o, t->events.base, t->events.used * t->events.size, ORC_RW);
		orc_touch(o, t->q.bucket, t->q.maxnb_used * sizeof *t->q.bucket, ORC_RW);
		/* neighbour rows of its cells (read at hand-offs) */
		orc_allow(o, &nbr[t->c0 * PCS_NBR], (t->c1 - t->c0) * PCS_NBR * sizeof *nbr);
		/* outboxes it writes and reads: the headers are read at every
		 * delivery (from the second window on) */
		for (long par = 0; par < 2; par++)
			for (long x = 0; x < T; x++) {
				struct outbox *mine = &out[(par * T + k) * T + x], *theirs = &out[(par * T + x) * T + k];
				orc_allow(o, mine, sizeof *mine);
				orc_allow(o, mine->m, mine->cap * sizeof(struct msg));
				if (w >= 1 + par)
					orc_touch(o, theirs, sizeof *theirs, ORC_RW);
				orc_allow(o, theirs->m, theirs->cap * sizeof(struct msg));
			}
	}
	orc_note("pools (t*.recs, t*.events) are required below their high-water marks, buckets below the largest queue size");
	orc_write();
	return 0;
}

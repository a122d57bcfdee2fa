// workload: pcs
// about: the thesis's PDES experiment: a PCS (GSM cells) simulation, cells
// about: as logical processes with channel bitmaps and lists of power
// about: records, call arrival/end/hand-off events in per-thread calendar
// about: queues, hand-offs between threads through outboxes; the oracle
// about: is exact for cells, pools and queues (from the kernel's high-water
// about: marks), and allows the outboxes and neighbour rows a thread uses
// pdes: yes
// test-args: cells=96 channels=48 rho=0.75 threads=3 calls=40 seed=7
// bench-args: cells=1024 channels=200 rho=0.5 threads=4 calls=150 seed=1
#include "pcs.h"

/* ---- numbers (no libm: the kernel calls nothing) ---- */

static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* uniform in (0, 1] */
static inline double rng_unit(uint64_t *s) { return (double)((rng_next(s) >> 11) + 1) * (1.0 / 9007199254740992.0); }

static double pcs_log(double x)
{
	union {
		double d;
		uint64_t u;
	} v = {x};
	long e = (long)((v.u >> 52) & 0x7ff) - 1023;
	v.u = (v.u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL; /* [1, 2) */
	double m = v.d;
	if (m > 1.4142135623730951) {
		m *= 0.5;
		e++;
	}
	double z = (m - 1) / (m + 1), z2 = z * z, term = z, sum = 0;
	for (int k = 1; k < 30; k += 2) {
		sum += term / k;
		term *= z2;
	}
	return (double)e * 0.6931471805599453 + 2 * sum;
}

static inline double rng_exp(uint64_t *s, double mean) { return -mean * pcs_log(rng_unit(s)); }

/* ---- pools: fixed-size objects from a driver arena ---- */

static void *pool_get(struct pcs_thread *t, struct pool *p)
{
	void *o = p->free;
	if (o) {
		p->free = *(void **)o;
		return o;
	}
	if (p->used == p->cap) {
		t->error = 1;
		return 0;
	}
	return p->base + p->size * p->used++;
}

static void pool_put(struct pool *p, void *o)
{
	*(void **)o = p->free;
	p->free = o;
}

/* ---- the calendar queue (Brown, 1988) ----
 * Bucket i holds the events whose slot floor(ts / width) is i modulo nb,
 * each bucket sorted by (ts, uid); dequeuing scans from the current slot. */

static inline int ev_before(const struct event *a, const struct event *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->uid < b->uid);
}

static inline long cq_slot(const struct calq *q, double ts) { return (long)(ts / q->width); }

static void cq_put(struct calq *q, struct event *e)
{
	long s = cq_slot(q, e->ts);
	/* an event before the current position (a hand-off delivered at the
	 * start of a window, before the event the last window put back):
	 * dequeuing resumes from its slot */
	if (s < q->slot)
		q->slot = s;
	if (e->ts < q->last)
		q->last = e->ts;
	struct event **pp = &q->bucket[s & (q->nb - 1)];
	while (*pp && ev_before(*pp, e))
		pp = &(*pp)->next;
	e->next = *pp;
	*pp = e;
}

static void cq_setup(struct calq *q, long nb, double width)
{
	q->nb = nb;
	q->width = width;
	for (long i = 0; i < nb; i++)
		q->bucket[i] = 0;
	if (nb > q->maxnb_used)
		q->maxnb_used = nb;
	q->slot = cq_slot(q, q->last);
}

/* cq_resize rebuilds the queue with nb buckets, each about three mean
 * event separations wide. */
static void cq_resize(struct calq *q, long nb)
{
	struct event *all = 0;
	double lo = 0, sum = 0;
	long n = 0;
	for (long i = 0; i < q->nb; i++) {
		struct event *e = q->bucket[i];
		while (e) {
			struct event *next = e->next;
			if (n == 0 || e->ts < lo)
				lo = e->ts;
			sum += e->ts;
			n++;
			e->next = all;
			all = e;
			e = next;
		}
	}
	double width = q->width;
	if (n > 1 && sum / n > lo)
		width = 3 * 2 * (sum / n - lo) / n;
	if (width < 1e-6)
		width = 1e-6;
	cq_setup(q, nb, width);
	q->resizes++;
	while (all) {
		struct event *next = all->next;
		cq_put(q, all);
		all = next;
	}
}

static void cq_insert(struct calq *q, struct event *e)
{
	cq_put(q, e);
	if (++q->n > 2 * q->nb && 2 * q->nb <= q->maxnb)
		cq_resize(q, 2 * q->nb);
}

static struct event *cq_pop(struct calq *q)
{
	if (q->n == 0)
		return 0;
	struct event *e = 0;
	long slot = q->slot, i = 0;
	for (long k = 0; k < q->nb; k++, slot++) {
		i = slot & (q->nb - 1);
		struct event *h = q->bucket[i];
		if (h && cq_slot(q, h->ts) <= slot) {
			e = h;
			break;
		}
	}
	if (!e) { /* a year without events: direct search */
		for (long j = 0; j < q->nb; j++) {
			struct event *h = q->bucket[j];
			if (h && (!e || ev_before(h, e))) {
				e = h;
				i = j;
			}
		}
		slot = cq_slot(q, e->ts);
	}
	q->bucket[i] = e->next;
	q->slot = slot;
	q->n--;
	q->last = e->ts;
	if (q->n < q->nb / 2 && q->nb > 16)
		cq_resize(q, q->nb / 2);
	return e;
}

/* ---- the model ---- */

static void schedule(struct pcs_thread *t, struct cell *c, int type, double ts, struct power_rec *rec, double left, uint64_t call)
{
	struct event *e = pool_get(t, &t->events);
	if (!e)
		return;
	e->ts = ts;
	e->uid = (uint64_t)c->id << 40 | c->next_uid++;
	e->cell = c->id;
	e->type = type;
	e->rec = rec;
	e->left = left;
	e->call = call;
	cq_insert(&t->q, e);
}

/* send schedules a hand-off arrival at cell dst: directly when this thread
 * owns it, else through the window's outbox. Either way the event has the
 * same time and uid, so results do not depend on the partition. */
static void send(struct pcs_thread *t, struct cell *src, long dst, double ts, double left, uint64_t call)
{
	const struct pcs_params *p = t->p;
	long owner = pcs_owner(dst, p->cells, p->threads);
	uint64_t uid = (uint64_t)src->id << 40 | src->next_uid++;
	if (owner == t->self) {
		struct event *e = pool_get(t, &t->events);
		if (!e)
			return;
		e->ts = ts;
		e->uid = uid;
		e->cell = (int32_t)dst;
		e->type = EV_HRECV;
		e->rec = 0;
		e->left = left;
		e->call = call;
		cq_insert(&t->q, e);
		return;
	}
	struct outbox *ob = &t->out[((t->window & 1) * p->threads + t->self) * p->threads + owner];
	if (ob->n == ob->cap) {
		t->error = 2;
		return;
	}
	struct msg *m = &ob->m[ob->n++];
	m->ts = ts;
	m->left = left;
	m->uid = uid;
	m->call = call;
	m->cell = (int32_t)dst;
}

static inline double clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

/* start_call sets up a call of duration left at cell c: a channel, a power
 * record, power regulation over the cell's records, and its end or
 * hand-off event. It returns 0 when every channel is busy. */
static int start_call(struct pcs_thread *t, struct cell *c, double ts, double left, uint64_t call)
{
	const struct pcs_params *p = t->p;
	if (c->busy >= p->channels)
		return 0;
	long ch = -1;
	for (int w = 0; w < PCS_CHW; w++)
		if (~c->chan[w]) {
			int b = __builtin_ctzll(~c->chan[w]);
			c->chan[w] |= 1ULL << b;
			ch = w * 64 + b;
			break;
		}
	struct power_rec *rec = pool_get(t, &t->recs);
	if (ch < 0 || !rec)
		return 0;
	c->busy++;
	rec->channel = ch;
	rec->call = call;
	rec->start = ts;
	double d = 0.05 + 0.95 * rng_unit(&c->rng); /* distance from the base station */
	rec->gain = 1 / (d * d * d * d);
	rec->fading = rng_exp(&c->rng, 1.0); /* Rayleigh fading: exponential power */
	/* power regulation: the interference at the base station, the new
	 * call's power for the target SIR, then the others' powers */
	double interf = p->noise;
	for (struct power_rec *r = c->recs; r; r = r->next)
		interf += r->power * r->gain * r->fading;
	double pw = clamp(p->sir * interf / (rec->gain * rec->fading), p->pmin, p->pmax);
	rec->power = pw;
	double total = interf + pw * rec->gain * rec->fading;
	for (struct power_rec *r = c->recs; r; r = r->next) {
		double own = r->power * r->gain * r->fading;
		double want = p->sir * (total - own) / (r->gain * r->fading);
		r->power = clamp(0.5 * r->power + 0.5 * want, p->pmin, p->pmax);
	}
	rec->prev = 0;
	rec->next = c->recs;
	if (c->recs)
		c->recs->prev = rec;
	c->recs = rec;
	c->nrecs++;
	c->power_sum += pw;
	c->digest = (c->digest ^ (uint64_t)(pw * 1e9)) * 1099511628211ULL;
	double res = rng_exp(&c->rng, p->tres);
	if (left <= res)
		schedule(t, c, EV_END, ts + left, rec, 0, call);
	else
		schedule(t, c, EV_HLEAVE, ts + res, rec, left - res, call);
	return 1;
}

static void release(struct pcs_thread *t, struct cell *c, struct power_rec *rec)
{
	c->chan[rec->channel / 64] &= ~(1ULL << (rec->channel % 64));
	c->busy--;
	if (rec->prev)
		rec->prev->next = rec->next;
	else
		c->recs = rec->next;
	if (rec->next)
		rec->next->prev = rec->prev;
	c->nrecs--;
	pool_put(&t->recs, rec);
}

static void process(struct pcs_thread *t, struct event *e)
{
	const struct pcs_params *p = t->p;
	struct cell *c = &t->cells[e->cell];
	double ts = e->ts;
	c->busy_area += (double)c->busy * (ts - c->last_ts);
	c->last_ts = ts;
	c->count[e->type]++;
	t->count[e->type]++;
	t->events_done++;
	switch (e->type) {
	case EV_ARRIVAL: {
		c->arrivals++;
		uint64_t call = (uint64_t)c->id << 32 | (uint64_t)c->arrivals;
		double dur = rng_exp(&c->rng, p->tdur);
		/* the event becomes the cell's next arrival */
		e->ts = ts + rng_exp(&c->rng, p->ta);
		e->uid = (uint64_t)c->id << 40 | c->next_uid++;
		cq_insert(&t->q, e);
		if (!start_call(t, c, ts, dur, call))
			c->blocked++;
		return;
	}
	case EV_END:
		release(t, c, e->rec);
		c->completed++;
		break;
	case EV_HLEAVE: {
		uint64_t call = e->rec->call;
		release(t, c, e->rec);
		c->handoff_out++;
		long dst = t->nbr[(long)c->id * PCS_NBR + (long)(rng_next(&c->rng) % PCS_NBR)];
		send(t, c, dst, ts + p->latency, e->left, call);
		break;
	}
	case EV_HRECV:
		c->handoff_in++;
		if (!start_call(t, c, ts, e->left, e->call))
			c->dropped++;
		break;
	}
	pool_put(&t->events, e);
}

/* ---- entry points (called by the driver's threads) ---- */

/* pcs_init sets up the thread's cells and queue and schedules each cell's
 * first call. */
void pcs_init(struct pcs_thread *t)
{
	const struct pcs_params *p = t->p;
	for (long id = t->c0; id < t->c1; id++) {
		struct cell *c = &t->cells[id];
		c->rng = p->seed ^ ((uint64_t)id * 0xd1342543de82ef95ULL);
		rng_next(&c->rng);
		c->id = (int32_t)id;
		c->owner = (int32_t)t->self;
		c->busy = 0;
		for (int w = 0; w < PCS_CHW; w++) {
			uint64_t m = 0;
			for (int b = 0; b < 64; b++)
				if (w * 64 + b >= p->channels)
					m |= 1ULL << b;
			c->chan[w] = m;
		}
		c->recs = 0;
		c->nrecs = 0;
		c->next_uid = 0;
		c->last_ts = c->busy_area = c->power_sum = 0;
		for (int k = 0; k < EV_NTYPES; k++)
			c->count[k] = 0;
		c->arrivals = c->completed = c->blocked = c->handoff_in = c->handoff_out = c->dropped = 0;
		c->digest = 14695981039346656037ULL;
	}
	t->q.last = 0;
	t->q.maxnb_used = 0;
	cq_setup(&t->q, 16, p->ta / (double)(t->c1 - t->c0 + 1) * 3);
	for (long id = t->c0; id < t->c1; id++) {
		struct cell *c = &t->cells[id];
		schedule(t, c, EV_ARRIVAL, rng_exp(&c->rng, p->ta), 0, 0, 0);
	}
	t->window = 0;
	t->events_done = 0;
}

/* pcs_deliver turns the hand-offs other threads sent this thread in the
 * previous window into events. */
void pcs_deliver(struct pcs_thread *t)
{
	const struct pcs_params *p = t->p;
	if (t->window == 0)
		return;
	for (long src = 0; src < p->threads; src++) {
		struct outbox *ob = &t->out[(((t->window - 1) & 1) * p->threads + src) * p->threads + t->self];
		for (long k = 0; k < ob->n; k++) {
			struct msg *m = &ob->m[k];
			struct event *e = pool_get(t, &t->events);
			if (!e)
				return;
			e->ts = m->ts;
			e->uid = m->uid;
			e->cell = m->cell;
			e->type = EV_HRECV;
			e->rec = 0;
			e->left = m->left;
			e->call = m->call;
			cq_insert(&t->q, e);
		}
		ob->n = 0;
	}
}

/* pcs_window processes the thread's events before time end. */
void pcs_window(struct pcs_thread *t, double end)
{
	for (;;) {
		struct event *e = cq_pop(&t->q);
		if (!e)
			break;
		if (e->ts >= end) {
			cq_insert(&t->q, e);
			break;
		}
		process(t, e);
	}
	long mc = -1;
	for (long id = t->c0; id < t->c1; id++)
		if (mc < 0 || t->cells[id].completed < mc)
			mc = t->cells[id].completed;
	t->min_completed = mc;
	t->window++;
}

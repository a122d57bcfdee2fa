//go:build !vptgohalf

/*
 * rt_threads.c: threads: set-up, the batch path of the stubs, the recent-page cache, ranges, rep and vector accesses
 * (the vptrace runtime's C half: rt_state.c, rt.h).
 */
#define _GNU_SOURCE
#define VPT_RT_C
#include "rt.h"

/* ------------------------------------------------------------------ */
/* threads                                                             */

static pthread_key_t vpt_key;
static int key_state; /* 0 none, 1 creating, 2 ok, 3 failed */

HIDDEN void vrt_thread_key(struct vpt_thread *t)
{
	int st = LOAD(&key_state), exp = 0;
	if (st == 0 && CAS(&key_state, &exp, 1))
		STORE(&key_state, st = pthread_key_create(&vpt_key, vrt_key_dtor) == 0 ? 2 : 3);
	/* Another thread is creating the key: wait for it (a thread that gave
	 * up here had no destructor, so its exit was never recorded; the
	 * creator is never this thread, which VTF_INBATCH keeps out). */
	while ((st = LOAD(&key_state)) == 1)
		sc3(SYS_sched_yield, 0, 0, 0);
	if (st == 2 && pthread_setspecific(vpt_key, (void *)1) == 0)
		t->flags |= VTF_KEYED;
}

/* The THREAD chunk (in the thread, at its first event, VTF_INBATCH set):
 * with the thread's stack and TLS blocks (format 1.3, rt_maps.c). */
#define THREAD_TLS_MAX 64
HIDDEN void vrt_thread_chunk(struct vpt_thread *t)
{
	uint8_t fix[64];
	uint64_t tls[2 * THREAD_TLS_MAX], lo, hi;
	struct iovec iov[3];
	uint32_t ntls = vrt_thread_ranges(&lo, &hi, tls, THREAD_TLS_MAX);
	zero_bytes(fix, sizeof fix);
	put64(fix, t->serial);
	put32(fix + 8, t->tid);
	put64(fix + 16, t->tstart);
	copy_bytes(fix + 24, t->name, 15);
	put64(fix + 40, lo);
	put64(fix + 48, hi);
	put32(fix + 56, ntls);
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	iov[2].iov_base = tls;
	iov[2].iov_len = (size_t)ntls * 16;
	vrt_write_chunk(CH_THREAD, iov, 3);
}

/* The range memo: what the last runs of sweep sites recorded in this
 * thread, in the cache's mapping after its keys. A sweep run whose pages
 * the memo holds records nothing: the range counterpart of a site's
 * last-page slot (a column walk recorded again for the next column, the
 * same array swept again). Direct-mapped by site, step (0 up to a page)
 * and the 2 MiB region of the lowest address, so that a site sweeping
 * several arrays in turn keeps one entry for each; a collision evicts. */
struct range_memo {
	uint64_t site;   /* 0: empty */
	uint64_t epoch;  /* vpt_hot.epoch when it was noted */
	uint64_t lo;     /* steps up to a page: pages lo..hi; over a page: the first access's address */
	uint64_t hi;     /* over a page: the number of accesses */
	int64_t step;    /* 0: steps up to a page; else the step (positive) */
	uint64_t pad;
};
#define MEMO_N     1024
#define MEMO_SHIFT 54 /* the top 10 bits of the hash */
#define CACHE_BYTES (VPT_CACHE * 8 + MEMO_N * sizeof(struct range_memo))

/* Code the stubs call with the vector state live (not saved): general
 * registers only. */
#define GPR_ONLY __attribute__((target("general-regs-only")))

/* The thread's memo entry for a run of a site, step (0: up to a page)
 * and lowest address; NULL before its cache is mapped. */
static inline GPR_ONLY struct range_memo *memo_of(struct vpt_thread *t, uint64_t site, uint64_t step, uint64_t lo)
{
	uint64_t *c = t->cache;
	if (!c)
		return 0;
	uint64_t key = site + step * 0x100000001b3ull + (lo >> 21) * 0xc2b2ae3d27d4eb4full;
	return (struct range_memo *)(void *)(c + VPT_CACHE) + ((key * 0x9e3779b97f4a7c15ull) >> MEMO_SHIFT);
}

/* The recent-page cache of the per-event path (stubs.S, rt.h), for the
 * pages of ranges: whether this thread recorded page p lately for every
 * kind of access in kind (then it is not recorded again); notes it if
 * not. */
/* Whether a run of n accesses from lo, ustep (over a page) apart, each of
 * size bytes, touches only pages memo entry m's run did: the same
 * accesses or fewer, or, with a step of whole pages, accesses on the same
 * pages. */
static inline GPR_ONLY int memo_steps(const struct range_memo *m, uint64_t ustep, uint64_t lo, uint64_t n, uint64_t size)
{
	return m->step == (int64_t)ustep && n <= m->hi &&
	       (lo == m->lo || (ustep % 4096 == 0 && lo >> 12 == m->lo >> 12 && (lo + size - 1) >> 12 == (m->lo + size - 1) >> 12));
}

/* page p's key and its set in cache c */
static inline GPR_ONLY uint64_t *cache_set(uint64_t *c, uint64_t p, uint64_t *key)
{
	*key = ((p + 1) << 2) + LOAD(&vpt_hot.epoch);
	return (uint64_t *)(void *)((char *)c + ((*key << 2) & VPT_CACHE_SETMASK));
}

/* whether the thread's cache has page p for every kind of access in kind,
 * without noting anything */
static inline GPR_ONLY int cache_has(struct vpt_thread *t, unsigned kind, uint64_t p)
{
	uint64_t *c = t->cache, k = kind & (VPT_KIND_READ | VPT_KIND_WRITE), key;
	if (!c || !k)
		return 0;
	uint64_t *set = cache_set(c, p, &key);
	for (int w = 0; w < 2; w++)
		if ((set[w] ^ key) <= 3)
			return (set[w] & k) == k;
	return 0;
}

static inline GPR_ONLY int cache_seen(struct vpt_thread *t, unsigned kind, uint64_t p)
{
	uint64_t *c = t->cache, k = kind & (VPT_KIND_READ | VPT_KIND_WRITE), key;
	if (!c || !k)
		return 0;
	uint64_t *set = cache_set(c, p, &key);
	for (int w = 0; w < 2; w++) {
		if ((set[w] ^ key) <= 3) {
			if ((set[w] & k) == k)
				return 1;
			set[w] |= k;
			return 0;
		}
	}
	set[1] = set[0];
	set[0] = key | k;
	return 0;
}

/* Records the pages (up to 16) of one access at site in the thread's
 * buffer with general registers only (the vector state is live): the
 * pages the cache has for every kind of the access are left out, the
 * others are appended like the per-event path does (the slots reserved
 * with a compare-and-swap on cur, depth raised while they are written) and
 * noted. 1: done; 0: nothing changed, the caller takes the whole-state
 * path (no cache yet, the runtime busy on this thread, no room). */
static GPR_ONLY int quick_record(uint64_t site, unsigned kind, const uint64_t *pages, unsigned n)
{
	struct vpt_thread *t = &vpt_t;
	uint64_t todo[16], cur, time = LOAD(&vpt_hot.clock);
	unsigned m = 0;
	if (!t->cache || (t->flags & (VTF_INBATCH | VTF_RUNTIME)) || n > 16)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned j = 0;
		while (j < m && todo[j] != pages[i])
			j++;
		if (j == m && !cache_has(t, kind, pages[i]))
			todo[m++] = pages[i];
	}
	if (m == 0)
		return 1;
	t->depth++;
	cur = LOAD(&t->cur);
	do {
		uint64_t end = LOAD(&t->end);
		if (end == 0 || cur + m * VPT_EV_SIZE > end) {
			t->depth--;
			return 0;
		}
	} while (!CAS(&t->cur, &cur, cur + m * VPT_EV_SIZE));
	for (unsigned i = 0; i < m; i++) {
		struct vpt_event *e = (struct vpt_event *)(uintptr_t)(cur + i * VPT_EV_SIZE);
		e->page1 = todo[i] + 1;
		e->time = time;
		STORER(&e->site, site);
		(void)cache_seen(t, kind, todo[i]);
	}
	t->depth--;
	return 1;
}

/* Notes page p for this kind of access in the thread's cache. */
static inline void cache_note(struct vpt_thread *t, unsigned kind, uint64_t p)
{
	(void)cache_seen(t, kind, p);
}

/* The thread's recent-page cache (rt.h): mapped at set-up, unmapped by
 * the key destructor. The pointer is cleared before the unmap, so a signal
 * handler's stub sees either the whole cache or none. */
static void cache_map(struct vpt_thread *t)
{
	long p = sc6(SYS_mmap, 0, CACHE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p < 0 && p > -4096)
		return; /* no cache: every event is recorded */
	STORE(&t->probe, (const uint64_t *)p);
	STORE(&t->cache, (uint64_t *)p);
}

HIDDEN void vrt_cache_unmap(struct vpt_thread *t)
{
	uint64_t *c;
	STORE(&t->probe, vrt_probe_none); /* first: probes read it without testing */
	c = XCHG(&t->cache, NULL);
	if (c)
		sc3(SYS_munmap, (long)c, CACHE_BYTES, 0);
}

static void thread_setup(struct vpt_thread *t)
{
	t->tid = sys_gettid();
	t->serial = FADD(&vrt_serial_ctr, 1) + 1;
	t->tstart = LOAD(&vpt_hot.clock);
	zero_bytes(t->name, sizeof t->name);
	sc6(SYS_prctl, PR_GET_NAME, (long)t->name, 0, 0, 0, 0);
	t->name[15] = 0;
	t->flags |= VTF_SETUP;
	vrt_thread_chunk(t);
}

static void drop_n(struct vpt_thread *t, uint64_t n, int hdr)
{
	t->drops += n;
	FADD(&vrt_total_drops, n);
	if (hdr && t->buf)
		t->buf->drops = t->drops; /* readers of a running buffer see it */
}

/* (inside the batch path of an interrupted outer one, t->buf may be stale) */
HIDDEN void vrt_drop(struct vpt_thread *t)
{
	drop_n(t, 1, !(t->flags & VTF_INBATCH));
}

/* Hand a thread's buffer with n events over; returns the buffer to
 * continue in (fresh, or the same one written out and reset), or NULL. */
HIDDEN struct vpt_buf *vrt_handoff(struct vpt_thread *t, struct vpt_buf *b, uint64_t n, int exiting)
{
	if (n > b->cap)
		n = b->cap;
	t->events += n;
	b->n = n;
	b->drops = t->drops;
	b->events = t->events;
	b->serial = t->serial;
	b->tid = t->tid;
	b->tstart = t->tstart;
	if (exiting) {
		b->flags |= VBF_EXIT;
		b->texit = LOAD(&vpt_hot.clock);
		zero_bytes(b->name, sizeof b->name);
		sc6(SYS_prctl, PR_GET_NAME, (long)b->name, 0, 0, 0, 0);
		b->name[15] = 0;
	}
	if (LOAD(&vrt_mode) == MODE_GO && !LOAD(&vrt_final_done)) {
		if (LOAD(&vrt_nqueued) < vrt_cfg_backlog || (LOAD(&vrt_go_alive) == GO_RUNNING && vrt_backlog_wait())) {
			struct vpt_buf *nb = exiting ? NULL : vrt_buf_get(t, 0);
			if (exiting || nb) {
				vrt_queue_push(b);
				return nb;
			}
		} else if (LOAD(&vrt_go_alive) == GO_RUNNING) {
			vrt_warn_once(W_BACKLOG, vrt_cfg_backlog, "consumer behind (VPTRACE_BACKLOG): threads write their own buffers");
		}
	}
	vrt_raw_write_own(t, b, n, exiting ? VBF_EXIT : 0);
	if (exiting) {
		vrt_thread_exit_chunk(t->serial, t->tid, b->texit, t->events, t->drops, b->name);
		vpt_buf_release(b, 0);
		return NULL;
	}
	return b;
}

/* One event in write-through mode (after the exit flush): a RAW chunk of its own. */
static void write_through(struct vpt_thread *t, uint64_t page1, uint64_t site, uint64_t time)
{
	struct vpt_event e = {page1, site, time};
	t->events++;
	vrt_raw_chunk(t->serial, t->tid, 0, t->drops, &e, 1);
}

/* With VTF_INBATCH set: what the thread needs before it records (runtime
 * initialised, tid/serial, TLS destructor). Returns ST_*. */
static int thread_ready(struct vpt_thread *t)
{
	int st = vrt_core_init();
	if (st != ST_READY)
		return st;
	/* a fork child: the atfork handler resets the runtime; without it
	 * (fork before vrt_late_init, raw clone) getpid tells */
	if (!LOAD(&vrt_atfork_registered) && sys_getpid() != vpt_pid)
		vrt_child_fixup(0);
	if ((st = LOAD(&vrt_init_state)) != ST_READY)
		return st;
	if (LOAD(&vrt_clock_pid) != vpt_pid)
		vrt_clock_bump(); /* no clock thread (yet, or VPTRACE_CLOCK_US=0) */
	if (!(t->flags & VTF_SETUP))
		thread_setup(t);
	if (t->flags & VTF_EXITED)
		t->flags &= ~(VTF_EXITED | VTF_KEYED); /* (no cache again: nothing would unmap it) */
	else if (!t->cache)
		cache_map(t);
	if (!(t->flags & VTF_KEYED))
		vrt_thread_key(t);
	return ST_READY;
}

/* With VTF_INBATCH set: what a thread needs to have its block counts
 * written (rt_blocks.c): the runtime initialised, the thread's serial and
 * tid (its THREAD chunk) and its TLS destructor; no buffer, no cache.
 * Returns ST_*. */
HIDDEN int vrt_thread_ident(struct vpt_thread *t)
{
	int st = vrt_core_init();
	if (st != ST_READY)
		return st;
	if (!LOAD(&vrt_atfork_registered) && sys_getpid() != vpt_pid)
		vrt_child_fixup(0);
	if ((st = LOAD(&vrt_init_state)) != ST_READY)
		return st;
	if (LOAD(&vrt_clock_pid) != vpt_pid)
		vrt_clock_bump();
	if (!(t->flags & VTF_SETUP))
		thread_setup(t);
	if (!(t->flags & VTF_KEYED))
		vrt_thread_key(t);
	return ST_READY;
}

/* after the exit flush: events are written one by one */
static int write_through_mode(struct vpt_thread *t)
{
	return (t->flags & VTF_FINAL) || (LOAD(&vrt_final_done) && !t->buf);
}

/* With VTF_INBATCH set, thread_ready: hand the full buffer over, or get the
 * thread's first. Returns the buffer to continue in, or NULL. */
static struct vpt_buf *refill(struct vpt_thread *t)
{
	struct vpt_buf *b = t->buf;
	b = b ? vrt_handoff(t, b, b->cap, 0) : vrt_buf_get(t, 1);
	t->buf = b;
	return b;
}

/* The batch path (from stubs.S, all registers saved): the buffer is full or
 * the thread has none. Stores the event. */
void vpt_full(uint64_t page1, uint64_t site, uint64_t time)
{
	struct vpt_thread *t = &vpt_t;
	struct vpt_buf *b;
	int st;

	if (t->flags & (VTF_INBATCH | VTF_RUNTIME)) {
		/* inside the runtime (its own libc calls, or a signal handler
		 * that interrupted it): the outer code resets cur/end */
		if (!(t->flags & VTF_RUNTIME))
			vrt_drop(t);
		t->depth--;
		return;
	}
	if (t->depth > 1) {
		/* a signal handler interrupted a stub that may hold a reserved,
		 * unwritten slot: the buffer cannot change hands now */
		t->cur -= VPT_EV_SIZE;
		vrt_drop(t);
		t->depth--;
		return;
	}
	t->flags |= VTF_INBATCH;
	t->end = 0;
	st = thread_ready(t);
	if (st != ST_READY)
		goto out_nobuf;
	if (write_through_mode(t)) {
		write_through(t, page1, site, time);
		t->cur = t->end = 0;
		goto out;
	}
	/* The stub could not note the event in a cache the thread did not
	 * have yet (its first event): note it now. */
	if (!(((const struct vpt_site *)(uintptr_t)site)->kind & VPT_KIND_EXACT))
		cache_note(t, ((const struct vpt_site *)(uintptr_t)site)->kind, page1 - 1);
	b = refill(t);
	if (!b)
		goto out_nobuf;
	b->ev[0].page1 = page1;
	b->ev[0].time = time;
	STORER(&b->ev[0].site, site);
	t->cur = (uint64_t)(uintptr_t)&b->ev[1];
	t->end = (uint64_t)(uintptr_t)&b->ev[b->cap];
	goto out;
out_nobuf:
	if (st == ST_READY || st == ST_BUSY)
		vrt_drop(t);
	t->cur = t->end = 0;
out:
	t->flags &= ~VTF_INBATCH;
	t->depth--;
}

/* Events for pages p0..p1 at one site (rep string operations, sweeps,
 * vector accesses), but those the recent-page cache says this thread
 * recorded lately (sites of exact mode: all). */
static void append_range(uint64_t site, uint64_t p0, uint64_t p1, uint64_t time)
{
	struct vpt_thread *t = &vpt_t;
	uint64_t cur, end, p;
	int nested, st;
	unsigned kind = ((const struct vpt_site *)(uintptr_t)site)->kind;
	int cached = !(kind & VPT_KIND_EXACT);

	if (p1 < p0)
		return;
	if (t->flags & (VTF_INBATCH | VTF_RUNTIME)) {
		if (!(t->flags & VTF_RUNTIME))
			drop_n(t, p1 - p0 + 1, 0);
		return;
	}
	/* a signal handler interrupted a stub on this thread: append into
	 * what is left of the buffer, never hand it over */
	nested = t->depth > 0;
	t->flags |= VTF_INBATCH;
	cur = t->cur;
	end = t->end;
	t->end = 0; /* signal handlers' events now go to vpt_full: dropped */
	for (p = p0;; p++) {
		struct vpt_event *e;
		/* the thread's first event maps its cache below: note the
		 * pages recorded before it was there */
		int unnoted = cached && !t->cache;
		if (cached && cache_seen(t, kind, p)) {
			if (p == p1)
				break;
			continue;
		}
		if (end == 0 || cur + VPT_EV_SIZE > end) {
			struct vpt_buf *b;
			if (end != 0 && nested) {
				drop_n(t, p1 - p + 1, 1);
				break;
			}
			st = thread_ready(t);
			if (st != ST_READY) {
				if (st == ST_BUSY)
					drop_n(t, p1 - p + 1, 0);
				cur = end = 0;
				break;
			}
			if (write_through_mode(t)) {
				for (;; p++) {
					write_through(t, p + 1, site, time);
					if (p == p1)
						break;
				}
				cur = end = 0;
				break;
			}
			b = refill(t);
			if (!b) {
				drop_n(t, p1 - p + 1, 0);
				cur = end = 0;
				break;
			}
			cur = (uint64_t)(uintptr_t)&b->ev[0];
			end = (uint64_t)(uintptr_t)&b->ev[b->cap];
		}
		e = (struct vpt_event *)(uintptr_t)cur;
		e->page1 = p + 1;
		e->time = time;
		STORER(&e->site, site);
		cur += VPT_EV_SIZE;
		if (unnoted)
			cache_note(t, kind, p);
		if (p == p1)
			break;
	}
	t->cur = cur;
	t->end = end;
	t->flags &= ~VTF_INBATCH;
}

/* the most pages one rep instruction records (256 GiB): a larger range
 * means a corrupt count, and the instruction faults anyway */
#define REP_MAX_PAGES (1ull << 26)

/* A sweep run's pages, through the thread's memo if memo is set: a run
 * whose pages the memo holds records nothing. */
static void range_pages(uint64_t site, uint64_t first, uint64_t last, int64_t step, int memo)
{
	const struct vpt_site *s = (const struct vpt_site *)(uintptr_t)site;
	uint64_t size = s->size ? s->size : 1;
	uint64_t epoch = LOAD(&vpt_hot.epoch), time = LOAD(&vpt_hot.clock);
	uint64_t ustep = step < 0 ? -(uint64_t)step : (uint64_t)step;
	int big = ustep > 4096;
	uint64_t lo = first < last ? first : last, hi = first < last ? last : first;
	struct range_memo *m = memo ? memo_of(&vpt_t, site, big ? ustep : 0, lo) : 0;
	int mine = m && m->site == site && m->epoch == epoch;
	if (big) {
		uint64_t n = (hi - lo) / ustep + 1;
		if (n > REP_MAX_PAGES)
			n = REP_MAX_PAGES;
		if (mine && memo_steps(m, ustep, lo, n, size))
			return;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t a = lo + i * ustep;
			append_range(site, a >> 12, (a + size - 1) >> 12, time);
		}
		if (m)
			*m = (struct range_memo){.site = site, .epoch = epoch, .lo = lo, .hi = n, .step = (int64_t)ustep};
		return;
	}
	hi += size - 1;
	if ((hi >> 12) - (lo >> 12) >= REP_MAX_PAGES)
		hi = lo + ((REP_MAX_PAGES - 1) << 12);
	uint64_t p0 = lo >> 12, p1 = hi >> 12;
	if (mine && m->step == 0 && p0 <= m->hi + 1 && p1 + 1 >= m->lo) {
		/* overlapping or adjacent: the pages the memo lacks, then the union */
		if (p0 < m->lo) {
			append_range(site, p0, m->lo - 1, time);
			m->lo = p0;
		}
		if (p1 > m->hi) {
			append_range(site, m->hi + 1, p1, time);
			m->hi = p1;
		}
		return;
	}
	append_range(site, p0, p1, time);
	if (m)
		*m = (struct range_memo){.site = site, .epoch = epoch, .lo = p0, .hi = p1};
}

/* A sweep site's accesses from first to last (either order), each of the
 * site's size, step bytes apart: every page in between when the step is at
 * most a page, else each access's page. Sites of exact mode record every
 * run; the others go through the memo, unless a signal handler interrupted
 * the runtime on this thread (it records its runs whole and leaves the
 * memo to the code it interrupted). */
static void range_record(uint64_t site, uint64_t first, uint64_t last, int64_t step)
{
	struct vpt_thread *t = &vpt_t;
	const struct vpt_site *s = (const struct vpt_site *)(uintptr_t)site;
	int memo = !(s->kind & VPT_KIND_EXACT) && !(t->flags & (VTF_INBATCH | VTF_RUNTIME | VTF_MEMO));
	if (memo)
		t->flags |= VTF_MEMO;
	range_pages(site, first, last, step, memo);
	if (memo)
		t->flags &= ~VTF_MEMO;
}

/* Whether a sweep run would record nothing, decided without changing
 * anything and with general registers only (vpt_range_quick): the memo
 * holds its pages, or the cache has every one of them (a run of up to 8
 * pages). Sites of exact mode, and a runtime busy on this thread, say no. */
static GPR_ONLY int range_known(uint64_t site, uint64_t first, uint64_t last, int64_t step)
{
	const struct vpt_site *s = (const struct vpt_site *)(uintptr_t)site;
	struct vpt_thread *t = &vpt_t;
	if ((s->kind & VPT_KIND_EXACT) || (t->flags & (VTF_INBATCH | VTF_RUNTIME | VTF_MEMO)) || !t->cache)
		return 0;
	uint64_t size = s->size ? s->size : 1, epoch = LOAD(&vpt_hot.epoch);
	uint64_t ustep = step < 0 ? -(uint64_t)step : (uint64_t)step;
	uint64_t lo = first < last ? first : last, hi = first < last ? last : first;
	int big = ustep > 4096;
	struct range_memo *m = memo_of(t, site, big ? ustep : 0, lo);
	int mine = m->site == site && m->epoch == epoch;
	if (big) {
		uint64_t n = (hi - lo) / ustep + 1;
		return mine && memo_steps(m, ustep, lo, n, size);
	}
	uint64_t p0 = lo >> 12, p1 = (hi + size - 1) >> 12;
	if (mine && m->step == 0 && p0 >= m->lo && p1 <= m->hi)
		return 1;
	if (p1 - p0 >= 8)
		return 0;
	for (uint64_t p = p0; p <= p1; p++)
		if (!cache_has(t, s->kind, p))
			return 0;
	return 1;
}

/* vpt_range's and vpt_range_dyn's quick checks (stubs.S: before saving the
 * vector state): 1 when the run records nothing, else their C functions
 * below record it. */
GPR_ONLY int vpt_range_quick(uint64_t site, uint64_t first, uint64_t last)
{
	const struct vpt_site *s = (const struct vpt_site *)(uintptr_t)site;
	return range_known(site, first, last, (int32_t)s->block);
}

/* vpt_range's general case (stubs.S, all registers saved); the site's
 * block field is the step when it exceeds a page. */
void vpt_range_c(uint64_t site, uint64_t first, uint64_t last)
{
	const struct vpt_site *s = (const struct vpt_site *)(uintptr_t)site;
	range_record(site, first, last, (int32_t)s->block);
}

/* vpt_range_dyn (FULLSTUB): a sweep whose step is a register times a
 * constant (kind bit 3; block: the register's number in the top byte, the
 * multiplier as a signed 24-bit number below). The caller pushed first,
 * last and adj: regs[18] is adj, regs[19] last, regs[20] first. adj bit 0:
 * the first access is one step after first; bit 1: the last is one step
 * before last. dyn_run works out the run's first and last access and its
 * step; vpt_range_dyn_quick (before the xsave) and vpt_range_dyn_c record
 * it. */
static inline GPR_ONLY void dyn_run(uint64_t site, const uint64_t *regs, uint64_t adj, uint64_t *first, uint64_t *last, int64_t *step)
{
	const struct vpt_site *s = (const struct vpt_site *)(uintptr_t)site;
	int64_t mult = (int64_t)VPT_DYN_MULT(s->block);
	*step = (int64_t)(regs[VPT_DYN_REG(s->block) & 15] * (uint64_t)mult); /* wraps, never UB */
	*first = regs[20];
	*last = regs[19];
	if (adj & 1)
		*first += (uint64_t)*step;
	if (adj & 2)
		*last -= (uint64_t)*step;
}

GPR_ONLY int vpt_range_dyn_quick(uint64_t site, const uint64_t *regs, const uint8_t *state, uint64_t adj)
{
	uint64_t first, last;
	int64_t step;
	(void)state;
	dyn_run(site, regs, adj, &first, &last, &step);
	return range_known(site, first, last, step);
}

void vpt_range_dyn_c(uint64_t site, const uint64_t *regs, const uint8_t *state, uint64_t adj)
{
	uint64_t first, last;
	int64_t step;
	(void)state;
	dyn_run(site, regs, adj, &first, &last, &step);
	range_record(site, first, last, step);
}

/* vpt_rep's general case (stubs.S, all registers saved): the site's range
 * from rsi (kind bit 4) and/or rdi (bit 5): count elements of the site's
 * size, backwards when DF (rflags bit 10) is set. */
void vpt_rep_c(uint64_t site, uint64_t rsi, uint64_t rdi, uint64_t count, uint64_t rflags)
{
	const struct vpt_site *s = (const struct vpt_site *)(uintptr_t)site;
	uint64_t size = s->size ? s->size : 1, bytes, time = LOAD(&vpt_hot.clock);
	if (count == 0)
		return;
	if (count > (REP_MAX_PAGES << 12) / size)
		count = (REP_MAX_PAGES << 12) / size;
	bytes = count * size;
	for (int k = 0; k < 2; k++) {
		uint64_t base = k ? rdi : rsi, lo;
		if (!(s->kind & (k ? VPT_KIND_REP_DEST : VPT_KIND_REP_SRC)))
			continue;
		lo = (rflags & 0x400) ? base + size - bytes : base;
		append_range(site, lo >> 12, (lo + bytes - 1) >> 12, time);
	}
}

/* Vector element accesses (site kind bit 7, ABI.md "Vector accesses"):
 * the descriptor in the site's block field (VD_*, rt.h) says which vector
 * registers hold the indices and the mask. */

extern uint32_t vpt_xsave_mask; /* stubs.S: the components xsave saves */
static uint32_t ymm_off;        /* offset of the AVX upper halves in the xsave area */

/* vec_reg copies vector register r (32 bytes) out of the saved state: the
 * low 16 bytes from the legacy area, the next 16 from the AVX component
 * when xsave saved it (else zeros, as for r > 15). */
static void vec_reg(const uint8_t *state, unsigned r, uint8_t out[32])
{
	zero_bytes(out, 32);
	if (r > 15)
		return;
	copy_bytes(out, state + 160 + 16 * r, 16);
	if (ymm_off && (vpt_xsave_mask & 4))
		copy_bytes(out + 16, state + ymm_off + 16 * r, 16);
}

/* the sign-extended element of w (8, else 4) bytes at p */
static inline GPR_ONLY int64_t vec_lane(const uint8_t *p, unsigned w)
{
	if (w == 8) {
		int64_t v;
		__builtin_memcpy(&v, p, 8);
		return v;
	}
	int32_t x;
	__builtin_memcpy(&x, p, 4);
	return x;
}

/* vec_pages lists, in element order, the pages the active elements of a
 * vector access (descriptor d, elements of w bytes) touch: an element is
 * active when its mask lane's sign is set (masked accesses), at base +
 * index << scale (gathers) or base + e*w. idx and mask are the index and
 * mask registers' 32 bytes; elements past a register's end are not read. */
static inline GPR_ONLY unsigned vec_pages(uint32_t d, uint64_t w, const uint8_t *idx, const uint8_t *mask, uint64_t base, uint64_t pages[16])
{
	unsigned np = 0, iw = VD_QIDX(d) ? 8 : 4, mw = w == 8 ? 8 : 4;
	for (unsigned e = 0; e < VD_COUNT(d) && np + 2 <= 16; e++) {
		uint64_t addr;
		if (VD_MASK(d)) {
			if (e * w + mw > 32)
				break;
			if (vec_lane(mask + e * w, mw) >= 0)
				continue; /* lane off: sign bit clear */
		}
		if (VD_VSIB(d)) {
			if (e * iw + iw > 32)
				break;
			addr = base + ((uint64_t)vec_lane(idx + e * iw, iw) << VD_SCALE(d));
		} else {
			addr = base + e * w;
		}
		pages[np++] = addr >> 12;
		if ((addr + w - 1) >> 12 != addr >> 12)
			pages[np++] = (addr + w - 1) >> 12;
	}
	return np;
}

void vpt_vec_c(uint64_t site, const uint64_t *regs, const uint8_t *state, uint64_t base)
{
	const struct vpt_site *s = (const struct vpt_site *)(uintptr_t)site;
	uint32_t d = s->block;
	uint64_t time = LOAD(&vpt_hot.clock), pages[16];
	uint8_t idx[32], mask[32];
	(void)regs;
	if (!ymm_off && (vpt_xsave_mask & 4)) {
		unsigned a, b, c, dd;
		__cpuid_count(0xd, 2, a, b, c, dd);
		ymm_off = b;
	}
	vec_reg(state, VD_VIDX(d), idx);
	vec_reg(state, VD_MREG(d), mask);
	unsigned np = vec_pages(d, s->size ? s->size : 1, idx, mask, base, pages);
	for (unsigned i = 0; i < np; i++)
		append_range(site, pages[i], pages[i], time);
}

/* vpt_vec's quick path (stubs.S: the vector state not saved, DF clear):
 * area holds the index register (bytes 0-31) and the mask register
 * (32-63) the descriptor names, as vpt_vec stored them. Records the
 * elements' pages that the cache lacks (quick_record); 0: vpt_vec_c must
 * (exact mode, a descriptor it does not handle, no room). */
GPR_ONLY int vpt_vec_quick(uint64_t site, const uint8_t *area, uint64_t base)
{
	const struct vpt_site *s = (const struct vpt_site *)(uintptr_t)site;
	uint64_t pages[16];
	if ((s->kind & VPT_KIND_EXACT) || (s->size != 4 && s->size != 8) || VD_COUNT(s->block) > 8)
		return 0;
	unsigned np = vec_pages(s->block, s->size, area, area + 32, base, pages);
	return quick_record(site, s->kind, pages, np);
}

/* After a repe/repne cmps or scas: the instruction compared rcx0 - rcx
 * elements, from the pointer's value then (forwards, or backwards when DF
 * was set) to its value now. */
void vpt_rep_after_c(uint64_t site, const uint64_t *regs, const uint8_t *state, uint64_t rcx0)
{
	const struct vpt_site *s = (const struct vpt_site *)(uintptr_t)site;
	uint64_t size = s->size ? s->size : 1, count, bytes, lo;
	(void)state;
	if (rcx0 <= regs[1])
		return;
	count = rcx0 - regs[1];
	if (count > (REP_MAX_PAGES << 12) / size)
		count = (REP_MAX_PAGES << 12) / size;
	bytes = count * size;
	for (int k = 0; k < 2; k++) {
		uint64_t p = k ? regs[7] : regs[6];
		if (!(s->kind & (k ? VPT_KIND_REP_DEST : VPT_KIND_REP_SRC)))
			continue;
		lo = (regs[16] & 0x400) ? p + size : p - bytes;
		append_range(site, lo >> 12, (lo + bytes - 1) >> 12, LOAD(&vpt_hot.clock));
	}
}

//go:build !vptgohalf

/*
 * rt_buffers.c: event buffers: the pool, the queue to the Go consumer, raw writes and steals
 * (the vptrace runtime's C half: rt_state.c, rt.h).
 */
#define _GNU_SOURCE
#define VPT_RT_C
#include "rt.h"

/* ------------------------------------------------------------------ */
/* buffers: pool and queue                                              */

static struct vpt_buf *buf_at(uint32_t idx1)
{
	return idx1 ? LOADA(&vpt_bufs[idx1 - 1]) : NULL;
}

HIDDEN void vrt_free_push(struct vpt_buf *b)
{
	uint64_t old = LOAD(&vrt_free_head), nw;
	do {
		STORE(&b->next, (uint32_t)old);
		nw = (((old >> 32) + 1) << 32) | (uint64_t)(b->index + 1);
	} while (!CAS(&vrt_free_head, &old, nw));
}

static struct vpt_buf *free_pop(void)
{
	uint64_t old = LOAD(&vrt_free_head), nw;
	struct vpt_buf *b;
	do {
		b = buf_at((uint32_t)old);
		if (!b)
			return NULL;
		nw = (((old >> 32) + 1) << 32) | (uint64_t)LOAD(&b->next);
	} while (!CAS(&vrt_free_head, &old, nw));
	return b;
}

/* Allocate a slab of buffers; returns one, the others go to the pool.
 * Past VPTRACE_MAXMB only a thread that has no buffer at all gets one
 * (force): the limit bounds the buffers waiting for the aggregator. */
static struct vpt_buf *alloc_slab(int force)
{
	int per = 4;
	size_t bytes = vrt_cfg_buf_bytes * per;
	struct vpt_buf *first = NULL;
	uint64_t had = FADD(&vrt_mem_bytes, bytes);
	char *p;
	if (had + bytes > vrt_cfg_max_bytes) {
		FADD(&vrt_mem_bytes, -(uint64_t)bytes);
		vrt_warn_once(W_MEM, vrt_cfg_max_bytes, "buffer memory limit reached (VPTRACE_MAXMB): threads write their own buffers");
		if (!force)
			return NULL;
		per = 1;
		bytes = vrt_cfg_buf_bytes;
		FADD(&vrt_mem_bytes, bytes);
	}
	/* Not MAP_POPULATE: a short process (a test suite's, a configure
	 * probe's) used a fraction of the slab's first buffer and paid for
	 * faulting in all four (5% of a traced hello-world's CPU); a buffer
	 * is faulted in once, as its events reach each page, and reused. */
	p = (char *)sc6(SYS_mmap, 0, (long)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if ((unsigned long)p > -4096ul) {
		FADD(&vrt_mem_bytes, -(uint64_t)bytes);
		return NULL;
	}
	for (int k = 0; k < per; k++) {
		struct vpt_buf *b = (struct vpt_buf *)(p + (size_t)k * vrt_cfg_buf_bytes);
		uint32_t idx = FADD(&vpt_nbufs, 1);
		if (idx >= VPT_MAXBUFS) {
			FADD(&vpt_nbufs, -1u);
			vrt_warn_once(W_BUFS, VPT_MAXBUFS, "buffer table full");
			break;
		}
		b->index = idx;
		b->cap = vrt_cfg_buf_cap;
		STORER(&vpt_bufs[idx], b);
		if (!first)
			first = b;
		else
			vrt_free_push(b);
	}
	return first;
}

HIDDEN struct vpt_buf *vrt_buf_get(struct vpt_thread *t, int force)
{
	struct vpt_buf *b = free_pop();
	if (!b)
		b = alloc_slab(force);
	if (!b)
		return NULL;
	if (b->flags & VBF_DIRTY) /* (a parent's buffer may hold events after a hole) */
		zero_bytes(b->ev, (size_t)b->cap * sizeof(struct vpt_event));
	b->flags = 0;
	b->serial = t->serial;
	b->tid = t->tid;
	b->tstart = t->tstart;
	b->n = 0;
	b->texit = 0;
	b->drops = t->drops; /* (a recycled buffer carries its last owner's) */
	b->events = t->events;
	copy_bytes(b->name, t->name, sizeof b->name);
	STORE(&b->state, VB_OWNED);
	return b;
}

HIDDEN uint64_t vrt_claim_bump(struct vpt_buf *b)
{
	uint64_t old = LOAD(&b->claim), nw;
	do {
		nw = ((old >> 32) + 1) << 32;
	} while (!CAS(&b->claim, &old, nw));
	return old;
}

/* Close the claim word: readers (steal) leave a closed buffer alone, and a
 * reader that copied slots before cannot publish them (its CAS fails).
 * Returns the old value ("consumed" tells where the owner takes over). */
static uint64_t claim_close(struct vpt_buf *b)
{
	uint64_t old = LOAD(&b->claim);
	while (!CAS(&b->claim, &old, (old & ~0xffffffffull) | VPT_CLAIM_CLOSED))
		;
	return old;
}

/* Reopen a closed buffer, zeroed, in the next generation. */
static void claim_reopen(struct vpt_buf *b, uint64_t old)
{
	STORE(&b->claim, ((old >> 32) + 1) << 32);
}

/* buffer back to the pool: its first `used` slots are zeroed */
void vpt_buf_release(struct vpt_buf *b, uint64_t used)
{
	uint64_t old = claim_close(b);
	if (used > b->cap)
		used = b->cap;
	zero_bytes(b->ev, (size_t)used * sizeof(struct vpt_event));
	claim_reopen(b, old);
	b->flags = 0;
	STORE(&b->state, VB_FREE);
	vrt_free_push(b);
}

HIDDEN void vrt_wake_consumer(void)
{
	FADD(&vrt_wake_seq, 1);
	if (LOAD(&vrt_consumer_sleeping))
		futex_wake(&vrt_wake_seq);
}

/* The consumer wakes every interval; waking it costs the producer a
 * futex(2) call (and in a VM an inter-processor interrupt), so only a
 * backlog of WAKE_AT buffers, a thread exit, a flush or the exit wake it. */
#define WAKE_AT 8u

HIDDEN void vrt_queue_push(struct vpt_buf *b)
{
	uint32_t old = LOAD(&vrt_queue_head), q;
	STORE(&b->state, VB_QUEUED);
	do {
		STORE(&b->next, old);
	} while (!CAS(&vrt_queue_head, &old, b->index + 1));
	q = FADD(&vrt_nqueued, 1) + 1;
	FADD(&vrt_handed_events, b->n);
	if (q == WAKE_AT || (q > WAKE_AT && q % WAKE_AT == 0) || (b->flags & VBF_EXIT))
		vrt_wake_consumer();
}

uint32_t vpt_queue_take(void)
{
	uint32_t h = XCHG(&vrt_queue_head, 0), prev = 0, n = 0;
	while (h) {
		struct vpt_buf *b = buf_at(h);
		uint32_t next = LOAD(&b->next);
		STORE(&b->state, VB_TAKEN);
		STORE(&b->next, prev);
		prev = h;
		h = next;
		n++;
	}
	if (n) {
		FADD(&vrt_nqueued, -n);
		FADD(&vrt_taken_seq, 1);
		if (LOAD(&vrt_backlog_waiters))
			futex_wake(&vrt_taken_seq);
	}
	return prev;
}

/* The queue holds VPTRACE_BACKLOG buffers: wait for the consumer to take
 * them (up to VPTRACE_BACKLOG_WAIT_MS), so that the thread hands its
 * buffer over instead of writing it raw (24 bytes an event, uncompressed:
 * a burst the aggregator cannot follow made most of a trace's bytes).
 * Returns 1 when the queue has room. No wait when waiting is off, while
 * the exit flush is asked for, when the consumer is not running, or after
 * a wait timed out until the consumer takes the queue again (a consumer
 * that stopped taking costs each thread one wait, not one per buffer). */
HIDDEN int vrt_backlog_wait(void)
{
	uint64_t deadline;
	uint32_t stuck = LOAD(&vrt_backlog_stuck);
	int ok = 0;
	if (vrt_cfg_backlog_wait_ms <= 0 || (stuck && stuck - 1 == LOAD(&vrt_taken_seq)))
		return 0;
	deadline = clock_ns(CLOCK_MONOTONIC) + (uint64_t)vrt_cfg_backlog_wait_ms * 1000000ull;
	vrt_warn_once(W_WAIT, vrt_cfg_backlog, "consumer behind (VPTRACE_BACKLOG): threads wait for it (VPTRACE_BACKLOG_WAIT_MS)");
	FADD(&vrt_backlog_waiters, 1);
	for (;;) {
		uint32_t seq = LOAD(&vrt_taken_seq);
		uint64_t now;
		if (LOAD(&vrt_nqueued) < vrt_cfg_backlog) {
			ok = 1;
			break;
		}
		if (LOAD(&vrt_final_req) || LOAD(&vrt_final_done) || LOAD(&vrt_go_alive) != GO_RUNNING)
			break;
		now = clock_ns(CLOCK_MONOTONIC);
		if (now >= deadline) {
			STORE(&vrt_backlog_stuck, seq + 1);
			break;
		}
		vrt_wake_consumer();
		/* (slices of 10 ms: the exit flush does not wake waiters) */
		futex_wait(&vrt_taken_seq, seq, (deadline - now) / 1000000ull < 10 ? (int)((deadline - now) / 1000000ull) + 1 : 10);
	}
	FADD(&vrt_backlog_waiters, -1u);
	return ok;
}

int vpt_consumer_wait(int timeout_ms)
{
	uint32_t s = LOAD(&vrt_wake_seq);
	STORE(&vrt_consumer_sleeping, 1);
	if (LOAD(&vrt_queue_head) || LOAD(&vrt_flush_req) != LOAD(&vrt_flush_done_ctr) || LOAD(&vrt_final_req)) {
		STORE(&vrt_consumer_sleeping, 0);
		return 1;
	}
	if (timeout_ms > 0)
		futex_wait(&vrt_wake_seq, s, timeout_ms);
	STORE(&vrt_consumer_sleeping, 0);
	return LOAD(&vrt_queue_head) != 0;
}

/* ------------------------------------------------------------------ */
/* writing a thread's own buffer, stealing others'                       */

/* The owner writes its buffer's events [consumed, n) as a RAW chunk and
 * resets it (zeroed, next generation). */
HIDDEN void vrt_raw_write_own(struct vpt_thread *t, struct vpt_buf *b, uint64_t n, uint32_t flags)
{
	uint64_t old = claim_close(b);
	uint64_t from = (uint32_t)old;
	if (n > b->cap)
		n = b->cap;
	if (from < n)
		vrt_raw_chunk(t->serial, t->tid, flags, t->drops, &b->ev[from], n - from);
	zero_bytes(b->ev, (size_t)n * sizeof(struct vpt_event));
	claim_reopen(b, old);
}

#define STEAL_CHUNK 256
/* Take the written, unconsumed events of someone else's buffer and write
 * them as RAW chunks. */
static void steal_raw(struct vpt_buf *b)
{
	struct vpt_event copy[STEAL_CHUNK];
	for (int tries = 0; tries < 1000; tries++) {
		uint64_t c = LOAD(&b->claim);
		uint32_t from = (uint32_t)c, k = 0;
		if (c & VPT_CLAIM_CLOSED)
			return;
		while (from + k < b->cap && k < STEAL_CHUNK) {
			uint64_t site = LOADA(&b->ev[from + k].site);
			if (!site)
				break;
			copy[k].site = site;
			copy[k].page1 = b->ev[from + k].page1;
			copy[k].time = b->ev[from + k].time;
			k++;
		}
		if (k == 0)
			return;
		if (!CAS(&b->claim, &c, (c & ~0xffffffffull) | (from + k)))
			continue;
		vrt_raw_chunk(b->serial, b->tid, 0, b->drops, copy, k);
	}
}

HIDDEN void vrt_c_steal_all(int include_queued)
{
	uint32_t n = LOAD(&vpt_nbufs);
	if (n > VPT_MAXBUFS)
		n = VPT_MAXBUFS;
	for (uint32_t i = 0; i < n; i++) {
		struct vpt_buf *b = LOADA(&vpt_bufs[i]);
		uint32_t st;
		if (!b)
			continue;
		st = LOAD(&b->state);
		if (st == VB_OWNED || (include_queued && (st == VB_QUEUED || st == VB_TAKEN))) {
			steal_raw(b);
			if (st != VB_OWNED && (b->flags & VBF_EXIT))
				vrt_thread_exit_chunk(b->serial, b->tid, b->texit, b->events, b->drops, b->name);
		}
	}
}

/* ------------------------------------------------------------------ */
/* for the Go consumer                                                 */

int vpt_go_started(void)
{
	int gs = GO_NONE;
	if (!CAS(&vrt_go_alive, &gs, GO_RUNNING))
		return 0; /* the process is exiting without us */
	STORE(&vrt_consumer_tid, sys_gettid());
	if (LOAD(&vrt_init_state) == ST_READY)
		vrt_late_init();
	return 1;
}

void vpt_go_tick(void)
{
	if (LOAD(&vrt_init_state) == ST_READY && sys_getpid() == vpt_pid)
		vrt_late_init();
}

int vpt_trace_fd(void)
{
	if (LOAD(&vrt_init_state) != ST_READY || sys_getpid() != vpt_pid)
		return -1;
	return LOAD(&vrt_trace_fd);
}

int vpt_trace_mode(void)
{
	if (LOAD(&vrt_init_state) != ST_READY)
		return -1;
	return LOAD(&vrt_mode);
}

int vpt_interval_ms(void)
{
	return vrt_cfg_interval_ms;
}

//go:build !vptgohalf

/*
 * rt_blocks.c: the block counts of objects of the blockcount preset
 * (ABI.md "blockcount"; the vptrace runtime's C half: rt_state.c, rt.h).
 *
 * A thread counts its executions of an object's blocks in a static TLS
 * array of the object (word 0: the thread is registered; word 1+k: block
 * k) that instrumented code increments inline. The runtime only learns
 * where the array is (vpt_blocks_thread, once per thread and object) and
 * reads it: at the thread's exit (its TLS destructor), when the object
 * unregisters (every thread's array, before dlclose unmaps the object), at
 * process exit, before an exec and at vptrace_flush; it writes the nonzero
 * counters as COUNTS chunks (FORMAT.md). Counters only grow and each chunk
 * holds them whole: readers keep the largest count, so writing a thread's
 * counters again is never counting twice.
 *
 * A record (struct vpt_bcrec) ties a thread to its array of one object.
 * Records are listed globally and per thread (vpt_t.blocks), under one
 * spin lock that a thread takes with VTF_BLOCKS set: a signal handler's
 * vpt_blocks_thread on that thread returns at once instead of waiting for
 * itself (its counts go to the same array, which the interrupted code
 * registers or has registered). A record is read only while its thread
 * lives: the thread's exit removes it, and clears word 0, so that
 * instrumented code in a later TLS destructor registers the thread again
 * (and the runtime's destructor runs again); the object's unregistration
 * removes its records too.
 *
 * Fork: the child counts what it runs after fork returns. A pthread_atfork
 * child handler (registered by the first vpt_blocks_register) zeroes the
 * forking thread's counters and drops the other threads' records (they are
 * the parent's); the prepare handler holds the lock over the fork, so the
 * child's lists are whole.
 */
#define _GNU_SOURCE
#define VPT_RT_C
#include "rt.h"

_Static_assert(sizeof(struct vpt_blocks) == 48, "vpt_blocks");
_Static_assert(sizeof(struct vpt_block) == 16, "vpt_block");
_Static_assert(offsetof(struct vpt_thread, blocks) == 104, "vpt_thread.blocks");

/* A blockcount object the runtime knows: one per registration (an object
 * unloaded and loaded again is a new one, with fresh counters). Never
 * freed: a handful per loaded object. */
struct bc_obj {
	struct bc_obj *next;            /* newest first */
	const struct vpt_blocks *desc;
	uint64_t id;
	uint32_t reg;                   /* registration number, from 1 (the trace's) */
	uint32_t nblocks, nstrs;
	uint32_t live;                  /* 0 once unregistered: desc may be gone */
	uint32_t dumped;                /* the file generation (vrt_file_gen) its BLOCKS chunk went to */
	uint32_t pad;
	struct bc_obj *same;            /* an earlier registration of the same object at the same address */
};

/* One thread's counters of one object. */
struct vpt_bcrec {
	struct vpt_bcrec *next, *prev;  /* every record */
	struct vpt_bcrec *tnext;        /* the thread's (vpt_t.blocks) */
	struct bc_obj *obj;
	uint64_t *words;                /* the thread's array: word 0, then the counters */
	struct vpt_thread *thread;      /* the owner's vpt_t */
	uint64_t serial;                /* the owner's, for the trace */
	uint32_t tid;
	uint32_t pad;
	char name[16];                  /* the owner's name at registration */
};

/* the blockcount state: bc_lock protects the rest */
static uint32_t bc_lock;
static struct bc_obj *bc_objs;
static uint32_t bc_nreg;
static struct vpt_bcrec *bc_recs, *bc_free;
static int bc_atfork;

/* Takes the lock; 0 when this thread holds it already (a signal handler
 * that interrupted it, or a write that opens a fork child's file). */
static int bc_enter(struct vpt_thread *t)
{
	uint32_t z = 0;
	if (t->flags & VTF_BLOCKS)
		return 0;
	t->flags |= VTF_BLOCKS;
	while (!CAS(&bc_lock, &z, 1)) {
		z = 0;
		sc3(SYS_sched_yield, 0, 0, 0);
	}
	return 1;
}

static void bc_leave(struct vpt_thread *t, int took)
{
	if (!took)
		return;
	STORE(&bc_lock, 0);
	t->flags &= ~VTF_BLOCKS;
}

static uint64_t thread_pointer(void)
{
	uint64_t tp;
	__asm__("movq %%fs:0, %0" : "=r"(tp));
	return tp;
}

/* Memory for objects and records, carved from 64 KiB mappings; with the lock. */
static void *bc_alloc(size_t n)
{
	static uint8_t *cur, *end;
	void *p;
	n = (n + 15) & ~(size_t)15;
	if (n > (size_t)(end - cur)) {
		long m = sc6(SYS_mmap, 0, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m < 0 && m > -4096)
			return NULL;
		cur = (uint8_t *)m;
		end = cur + (1 << 16);
	}
	p = cur;
	cur += n;
	return p;
}

static int desc_valid(const struct vpt_blocks *d)
{
	return d->magic == VPT_BLOCKS_MAGIC && d->version == VPT_BLOCKS_VERSION && d->nblocks < VPT_MAX_BLOCKS &&
	       d->nstrs < VPT_MAX_STRS && (d->nstrs == 0 || d->name < d->nstrs);
}

static uint64_t rel(const int32_t *field)
{
	return (uint64_t)(uintptr_t)field + (uint64_t)(int64_t)*field;
}

/* The live object of descriptor d, or a new registration; NULL when out
 * of memory. With the lock. */
static struct bc_obj *obj_of(const struct vpt_blocks *d)
{
	struct bc_obj *o, *same = NULL;
	for (o = bc_objs; o; o = o->next) {
		if (o->desc != d)
			continue;
		if (o->live)
			return o;
		if (!same && o->id == d->id && o->nblocks == d->nblocks && o->nstrs == d->nstrs)
			same = o->same ? o->same : o;
	}
	if (!(o = bc_alloc(sizeof *o)))
		return NULL;
	zero_bytes(o, sizeof *o);
	o->desc = d;
	o->id = d->id;
	o->nblocks = d->nblocks;
	o->nstrs = d->nstrs;
	o->reg = ++bc_nreg;
	o->live = 1;
	o->same = same;
	o->next = bc_objs;
	bc_objs = o;
	return o;
}

/* The object's BLOCKS chunk, once per file; force: even if this (fork
 * child) process has no file yet (it is about to write counts). With
 * the lock. An object loaded again where it was (the same id, blocks and
 * strings) refers to its first registration's chunk instead of repeating
 * the tables, when that chunk is in this file. */
static void dump_obj(struct bc_obj *o, int force)
{
	const struct vpt_blocks *d = o->desc;
	uint32_t gen = LOAD(&vrt_file_gen), same = 0;
	uint8_t fix[48];
	struct iovec iov[4];
	if (!o->live || o->dumped == gen || (!force && LOAD(&vrt_trace_fd) < 0))
		return;
	o->dumped = gen;
	if (o->same && o->same->dumped == gen)
		same = o->same->reg;
	zero_bytes(fix, sizeof fix);
	put32(fix, o->reg);
	put16(fix + 4, d->version);
	put16(fix + 6, d->flags);
	put64(fix + 8, (uint64_t)(uintptr_t)d);
	put64(fix + 16, d->id);
	put64(fix + 24, (uint64_t)LOAD(&d->tpoff));
	put32(fix + 32, same ? 0 : d->nblocks);
	put32(fix + 36, same ? 0 : d->nstrs);
	put32(fix + 40, d->name);
	put32(fix + 44, same);
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	iov[2].iov_base = (void *)(uintptr_t)rel(&d->blocks_rel);
	iov[2].iov_len = (size_t)d->nblocks * sizeof(struct vpt_block);
	iov[3].iov_base = (void *)(uintptr_t)rel(&d->strs_rel);
	iov[3].iov_len = d->nstrs;
	vrt_write_chunk(CH_BLOCKS, iov, same ? 2 : 4);
}

static size_t put_uvarint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* the pairs of the COUNTS chunk being built: with the lock */
static uint8_t bc_buf[1 << 16];

static void counts_chunk(const struct vpt_bcrec *r, uint32_t flags, uint32_t n, size_t len, uint64_t now)
{
	uint8_t fix[48];
	struct iovec iov[3];
	zero_bytes(fix, sizeof fix);
	put64(fix, r->serial);
	put32(fix + 8, r->tid);
	put32(fix + 12, flags);
	put32(fix + 16, r->obj->reg);
	put32(fix + 20, n);
	put64(fix + 24, now);
	copy_bytes(fix + 32, r->name, 15);
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	iov[2].iov_base = bc_buf;
	iov[2].iov_len = len;
	vrt_write_chunk(CH_COUNTS, iov, 3);
}

#define COUNTS_FINAL 1u

/* Write a record's nonzero counters (COUNTS chunks of at most 64 KiB of
 * pairs), preceded by its object's BLOCKS chunk if this file lacks it.
 * With the lock. */
static void write_counts(struct vpt_bcrec *r, uint32_t flags)
{
	const uint64_t *c = r->words + 1;
	uint64_t now = vpt_now();
	uint32_t n = r->obj->nblocks, np = 0, prev = 0;
	size_t len = 0;
	if (r->thread == &vpt_t) {
		zero_bytes(r->name, sizeof r->name);
		sc6(SYS_prctl, PR_GET_NAME, (long)r->name, 0, 0, 0, 0);
		r->name[15] = 0;
	}
	for (uint32_t k = 0; k < n; k++) {
		uint64_t v = __atomic_load_n(&c[k], __ATOMIC_RELAXED);
		if (v == 0)
			continue;
		if (len + 2 * 10 > sizeof bc_buf) {
			counts_chunk(r, flags, np, len, now);
			len = 0;
			np = 0;
		}
		if (np == 0 && len == 0)
			dump_obj(r->obj, 1);
		len += put_uvarint(bc_buf + len, np ? k - prev : k);
		len += put_uvarint(bc_buf + len, v);
		prev = k;
		np++;
	}
	if (np)
		counts_chunk(r, flags, np, len, now);
}

/* Unlink a record from both lists and free it. With the lock. */
static void rec_drop(struct vpt_bcrec *r)
{
	struct vpt_bcrec **pp;
	if (r->prev)
		r->prev->next = r->next;
	else
		bc_recs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	for (pp = &r->thread->blocks; *pp; pp = &(*pp)->tnext) {
		if (*pp == r) {
			*pp = r->tnext;
			break;
		}
	}
	r->next = bc_free;
	bc_free = r;
}

static struct vpt_bcrec *rec_new(void)
{
	struct vpt_bcrec *r = bc_free;
	if (r)
		bc_free = r->next;
	else if (!(r = bc_alloc(sizeof *r)))
		return NULL;
	zero_bytes(r, sizeof *r);
	return r;
}

/* fork: the prepare handler holds the lock over the fork (the child's
 * lists are whole), the parent's releases it, the child's releases it and
 * keeps the forking thread's records only, counters zeroed. */
static int bc_fork_took;

static void bc_prepare(void)
{
	bc_fork_took = bc_enter(&vpt_t);
}

static void bc_parent(void)
{
	bc_leave(&vpt_t, bc_fork_took);
}

static void bc_child(void)
{
	struct vpt_thread *t = &vpt_t;
	struct vpt_bcrec *r, *next;
	uint32_t tid = sys_gettid();
	for (r = bc_recs; r; r = next) {
		next = r->next;
		if (r->thread != t) {
			rec_drop(r);
			continue;
		}
		zero_bytes(r->words + 1, (size_t)r->obj->nblocks * 8);
		/* the child's thread: its own serial in the child's file */
		r->serial = FADD(&vrt_serial_ctr, 1) + 1;
		r->tid = tid;
	}
	bc_leave(t, bc_fork_took);
}

/* ------------------------------------------------------------------ */
/* entry points                                                        */

/* From the object's constructor: the runtime learns of the object and
 * writes its BLOCKS chunk. */
void vpt_blocks_register(const struct vpt_blocks *d)
{
	struct vpt_thread *t = &vpt_t;
	struct bc_obj *o;
	int took;
	if (!d || vrt_init_normal() != ST_READY)
		return;
	if (!desc_valid(d)) {
		vrt_warn_once(W_BLOCKS, (uint64_t)(uintptr_t)d, "vpt_blocks_register: bad blockcount descriptor ignored");
		return;
	}
	if (!XCHG(&bc_atfork, 1))
		pthread_atfork(bc_prepare, bc_parent, bc_child);
	took = bc_enter(t);
	if ((o = obj_of(d)))
		dump_obj(o, 0);
	bc_leave(t, took);
	if (!o)
		vrt_warn_once(W_BLOCKS, (uint64_t)(uintptr_t)d, "vpt_blocks_register: out of memory");
}

/* From the object's destructor, the last of its module's: every thread's
 * counters of the object go to the trace, and the runtime forgets them
 * (dlclose unmaps the object and its TLS next). */
void vpt_blocks_unregister(const struct vpt_blocks *d)
{
	struct vpt_thread *t = &vpt_t;
	struct vpt_bcrec *r, *next;
	int took;
	if (!d || LOAD(&vrt_init_state) != ST_READY)
		return;
	took = bc_enter(t);
	for (struct bc_obj *o = bc_objs; o; o = o->next) {
		if (o->desc != d || !o->live)
			continue;
		for (r = bc_recs; r; r = next) {
			next = r->next;
			if (r->obj == o) {
				write_counts(r, COUNTS_FINAL);
				rec_drop(r);
			}
		}
		o->live = 0;
	}
	bc_leave(t, took);
}

/* vpt_blocks_thread (stubs.S, everything saved): the calling thread's word
 * 0 of the object desc is 0. Registers the thread's array and sets word 0;
 * leaves it 0 when the array is not known yet (tpoff 0: the constructor
 * has not stored it) or the runtime is busy on this thread, so that the
 * thread asks again. */
void vpt_blocks_thread_c(uint64_t desc)
{
	const struct vpt_blocks *d = (const struct vpt_blocks *)(uintptr_t)desc;
	struct vpt_thread *t = &vpt_t;
	struct vpt_bcrec *r = NULL;
	struct bc_obj *o;
	uint64_t *words;
	int64_t tpoff;
	int st, took;
	if (t->flags & (VTF_INBATCH | VTF_RUNTIME | VTF_BLOCKS))
		return; /* a signal handler that interrupted the runtime: later */
	if (!desc_valid(d)) {
		vrt_warn_once(W_BLOCKS, desc, "vpt_blocks_thread: bad blockcount descriptor ignored");
		return;
	}
	tpoff = LOAD(&d->tpoff);
	if (tpoff == 0)
		return;
	words = (uint64_t *)(uintptr_t)(thread_pointer() + (uint64_t)tpoff);
	if (LOAD(&words[0]))
		return;
	t->flags |= VTF_INBATCH;
	st = vrt_thread_ident(t);
	if (st == ST_BUSY)
		goto out; /* initialising on this thread: later */
	/* Not tracing; or no TLS destructor to remove the record before the
	 * thread's TLS goes (its key could not be set, or its last round of
	 * destructors may be running): the counts of this thread cannot be
	 * read safely, and are not. */
	if (st != ST_READY || !(t->flags & VTF_KEYED) || t->dtors >= 3)
		goto done;
	took = bc_enter(t);
	for (r = t->blocks; r && r->words != words; r = r->tnext)
		;
	if (r)
		; /* registered already (word 0 was cleared by someone else) */
	else if ((o = obj_of(d)) && (r = rec_new())) {
		r->obj = o;
		r->words = words;
		r->thread = t;
		r->serial = t->serial;
		r->tid = t->tid;
		copy_bytes(r->name, t->name, sizeof r->name);
		r->next = bc_recs;
		if (bc_recs)
			bc_recs->prev = r;
		bc_recs = r;
		r->tnext = t->blocks;
		t->blocks = r;
		dump_obj(o, 0);
	}
	bc_leave(t, took);
	if (!r)
		vrt_warn_once(W_BLOCKS, desc, "vpt_blocks_thread: out of memory: block counts lost");
done:
	STORE(&words[0], 1);
out:
	t->flags &= ~VTF_INBATCH;
}

/* The thread exits (its key destructor, VTF_INBATCH set): its counters go
 * to the trace, its records go; word 0 is cleared, so that instrumented
 * code in a later destructor registers the thread again. */
HIDDEN void vrt_blocks_thread_exit(struct vpt_thread *t)
{
	int took;
	t->dtors++;
	if (!t->blocks)
		return;
	took = bc_enter(t);
	while (t->blocks) {
		struct vpt_bcrec *r = t->blocks;
		write_counts(r, COUNTS_FINAL);
		STORE(&r->words[0], 0);
		rec_drop(r);
	}
	bc_leave(t, took);
}

/* Every registered thread's counters to the trace (process exit, exec,
 * vptrace_flush). Threads keep counting: a later write has the larger
 * counts. */
HIDDEN void vrt_blocks_snapshot(void)
{
	struct vpt_thread *t = &vpt_t;
	int took;
	if (!LOAD(&bc_recs))
		return;
	took = bc_enter(t);
	for (struct vpt_bcrec *r = bc_recs; r; r = r->next)
		write_counts(r, 0);
	bc_leave(t, took);
}

//go:build !vptgohalf

/*
 * rt_objects.c: instrumented objects: their descriptors, registration and the C API
 * (the vptrace runtime's C half: rt_state.c, rt.h).
 */
#define _GNU_SOURCE
#define VPT_RT_C
#include "rt.h"

/* ------------------------------------------------------------------ */
/* objects                                                             */

static int obj_valid(const struct vpt_object *o)
{
	return o->magic == VPT_OBJ_MAGIC && o->version == VPTRACE_ABI_VERSION && o->nsites < VPT_MAX_SITES &&
	       o->nstrs < VPT_MAX_STRS && (o->nstrs == 0 || o->name < o->nstrs) &&
	       (!(o->flags & VPT_FLAG_SLOTS) || (o->nslots >= o->nsites && o->nslots < VPT_MAX_SLOTS));
}

uint64_t vpt_obj_sites(const struct vpt_object *o, uint32_t *nsites)
{
	*nsites = o->nsites;
	return (uint64_t)(uintptr_t)&o->sites_rel + (uint64_t)(int64_t)o->sites_rel;
}

static uint64_t obj_strs(const struct vpt_object *o)
{
	return (uint64_t)(uintptr_t)&o->strs_rel + (uint64_t)(int64_t)o->strs_rel;
}

/* the packed table (VPT_FLAG_PACKED) */
static uint64_t obj_packed(const struct vpt_object *o)
{
	return (uint64_t)(uintptr_t)&o->packed_rel + (uint64_t)(int64_t)o->packed_rel;
}

static void object_chunk(const struct vpt_object *o)
{
	uint8_t fix[64];
	struct iovec iov[4];
	uint32_t ns;
	uint64_t sites = vpt_obj_sites(o, &ns), strs = obj_strs(o);
	zero_bytes(fix, sizeof fix);
	put64(fix, (uint64_t)(uintptr_t)o);
	put64(fix + 8, sites);
	put64(fix + 16, strs);
	put32(fix + 24, o->nsites);
	put32(fix + 28, o->nstrs);
	put32(fix + 32, o->flags);
	put32(fix + 36, o->version);
	put64(fix + 40, o->id);
	put64(fix + 48, o->reserved);
	put32(fix + 56, o->name);
	if ((o->flags & VPT_FLAG_PACKED) && o->packed_len && vrt_cfg_compress) {
		/* hijack compressed the sites and strings (a raw DEFLATE
		 * stream that starts on a byte boundary and refers to nothing
		 * before it): the DEFLATE chunk is the header in a stored block,
		 * then that stream. No compression here, at every start. */
		uint8_t pre[8 + 5];
		uint64_t inner = sizeof fix + (uint64_t)o->nsites * sizeof(struct vpt_site) + o->nstrs;
		put16(pre, CH_OBJECT);
		put16(pre + 2, 0);
		put32(pre + 4, (uint32_t)inner);
		pre[8] = 0; /* BFINAL 0, BTYPE 00 (stored), padding to the byte */
		put16(pre + 9, sizeof fix);
		put16(pre + 11, (uint16_t)~(uint16_t)sizeof fix);
		iov[1].iov_base = pre;
		iov[1].iov_len = sizeof pre;
		iov[2].iov_base = fix;
		iov[2].iov_len = sizeof fix;
		iov[3].iov_base = (void *)(uintptr_t)obj_packed(o);
		iov[3].iov_len = o->packed_len;
		if (inner <= (1u << 30)) {
			vrt_write_chunk_plain(LOAD(&vrt_trace_fd), CH_DEFLATE, iov, 4);
			return;
		}
	}
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	iov[2].iov_base = (void *)(uintptr_t)sites;
	iov[2].iov_len = (size_t)o->nsites * sizeof(struct vpt_site);
	iov[3].iov_base = (void *)(uintptr_t)strs;
	iov[3].iov_len = o->nstrs;
	vrt_write_chunk_fd(LOAD(&vrt_trace_fd), CH_OBJECT, iov, 4);
}

/* Registration. Registrants (vpt_register, vpt_unregister) take vrt_reg_lock
 * in turn; code that reads registered descriptors (vrt_dump_objects,
 * vrt_reset_slots) counts itself in vrt_obj_readers without a lock, and
 * vpt_unregister, once the descriptor is out of vpt_objs, waits for the
 * readers to leave: it runs in the object's destructor, and dlclose unmaps
 * the descriptor after it returns. */
HIDDEN uint32_t vrt_reg_lock;
HIDDEN uint32_t vrt_obj_readers;
HIDDEN uint32_t vrt_file_gen = 1; /* moves on with each file (a fork child's) */

static void spin_lock(uint32_t *l)
{
	uint32_t z = 0;
	while (!CAS(l, &z, 1)) {
		z = 0;
		sc3(SYS_sched_yield, 0, 0, 0);
	}
}

static void spin_unlock(uint32_t *l) { STORE(l, 0); }

static void readers_enter(void) { FADD(&vrt_obj_readers, 1); }
static void readers_leave(void) { FADD(&vrt_obj_readers, -1); }

static void readers_drain(void)
{
	while (LOAD(&vrt_obj_readers) != 0)
		sc3(SYS_sched_yield, 0, 0, 0);
}

/* An object's epoch word (VPT_FLAG_EPOCH), which its cache probes add to
 * their keys: raised to e, never lowered (a registration that read the
 * epoch before a bump stores after it). */
static void epoch_raise(const struct vpt_object *o, uint64_t e)
{
	uint64_t *w, old;
	if (!(o->flags & VPT_FLAG_EPOCH) || !(o->flags & VPT_FLAG_SLOTS) || !o->epoch_rel)
		return;
	w = (uint64_t *)(uintptr_t)((uintptr_t)&o->epoch_rel + (uintptr_t)(intptr_t)o->epoch_rel);
	old = LOAD(w);
	while (old < e && !CAS(w, &old, e))
		;
}

/* The cache epoch moves on (the interval, vptrace_start, a fork child, a
 * released range): the cache's keys and the range memos change, and every
 * registered object's epoch word follows (the readers' count keeps an
 * object that vpt_unregister drops from going away meanwhile). Any
 * context: atomics and the objects' data only. */
HIDDEN void vrt_epoch_bump(void)
{
	uint64_t e = FADD(&vpt_hot.epoch, 1ull << 40) + (1ull << 40);
	uint32_t n = LOAD(&vpt_nobjs);
	if (n > VPT_MAXOBJ)
		n = VPT_MAXOBJ;
	readers_enter();
	for (uint32_t i = 0; i < n; i++) {
		const struct vpt_object *o = LOADA(&vpt_objs[i]);
		if (o)
			epoch_raise(o, e);
	}
	readers_leave();
}

HIDDEN void vrt_dump_objects(void)
{
	uint32_t n = LOAD(&vpt_nobjs);
	if (LOAD(&vrt_trace_fd) < 0)
		return; /* the file's opener dumps them */
	if (n > VPT_MAXOBJ)
		n = VPT_MAXOBJ;
	readers_enter();
	for (uint32_t i = 0; i < n; i++) {
		const struct vpt_object *o = LOADA(&vpt_objs[i]);
		uint32_t k;
		if (!o || LOAD(&vpt_objdumped[i]) || XCHG(&vpt_objdumped[i], 1))
			continue;
		/* one OBJECT chunk per object and file: a library dlopen'ed
		 * again at the same address has its chunk there already */
		k = LOAD(&vrt_obj_kinds[i]);
		if (k && XCHG(&vpt_kinds[k - 1]->dumped, vrt_file_gen) == vrt_file_gen)
			continue;
		object_chunk(o);
	}
	readers_leave();
}

/* Zero the calling thread's last-page slots: of objects that publish their
 * TLS offset in vpt_object.reserved (optional, see ABI.md), and the slot
 * arrays of objects of tls: indirect (the thread's list). */
HIDDEN void vrt_reset_slots(void)
{
	uint32_t n = LOAD(&vpt_nobjs);
	uint64_t tp;
	if (n > VPT_MAXOBJ)
		n = VPT_MAXOBJ;
	__asm__("movq %%fs:0, %0" : "=r"(tp));
	readers_enter();
	for (uint32_t i = 0; i < n; i++) {
		const struct vpt_object *o = LOADA(&vpt_objs[i]);
		if (o && (o->flags & (VPT_FLAG_SLOTS_TPOFF | VPT_FLAG_INDIRECT)) == VPT_FLAG_SLOTS_TPOFF && o->reserved != 0)
			zero_bytes((void *)(uintptr_t)(tp + o->reserved), (size_t)vrt_obj_nslots(o) * 8);
	}
	readers_leave();
	for (struct vpt_slothdr *h = LOAD(&vpt_t.slots); h; h = h->next)
		zero_bytes((uint8_t *)h + VPT_SLOTHDR, (size_t)h->bytes - VPT_SLOTHDR);
}

/* Memory the runtime keeps to the end (the kinds of registered objects):
 * carved from 1 MiB mappings; with vrt_reg_lock held. NULL when out of memory. */
static void *arena_alloc(size_t n)
{
	static uint8_t *cur, *end;
	void *p;
	n = (n + 15) & ~(size_t)15;
	if (n > (size_t)(end - cur)) {
		size_t sz = n > (1u << 20) ? (n + 4095) & ~(size_t)4095 : 1u << 20;
		long m = sc6(SYS_mmap, 0, (long)sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m < 0 && m > -4096)
			return NULL;
		cur = (uint8_t *)m;
		end = cur + sz;
	}
	p = cur;
	cur += n;
	return p;
}

/* The vpt_kinds entry of o (index + 1): the one an earlier registration of
 * the same object at the same address made, or a new one; 0 when there is
 * no room. With vrt_reg_lock held. */
static uint32_t kinds_of(const struct vpt_object *o)
{
	uint32_t ns, n = LOAD(&vpt_nkinds);
	uint64_t sites = vpt_obj_sites(o, &ns);
	const struct vpt_site *s = (const struct vpt_site *)(uintptr_t)sites;
	struct vpt_kinds *k;
	for (uint32_t i = n; i-- > 0;) {
		k = vpt_kinds[i];
		if (k->sites == sites) {
			if (k->desc == o && k->id == o->id && k->nsites == ns)
				return i + 1;
			break; /* another object where this one was: a new entry */
		}
	}
	if (n >= VPT_MAXOBJ || !(k = arena_alloc(sizeof *k + ns)))
		return 0;
	k->sites = sites;
	k->id = o->id;
	k->nsites = ns;
	k->dumped = 0;
	k->desc = o;
	if (o->flags & VPT_FLAG_KINDS) {
		/* hijack's copy of the kinds, one byte a site: a few pages,
		 * where the records are 32 bytes a site */
		const uint8_t *kinds = (o->flags & VPT_FLAG_PACKED) ? (const uint8_t *)(uintptr_t)(obj_packed(o) + o->packed_len)
								     : (const uint8_t *)(uintptr_t)(obj_strs(o) + o->nstrs);
		copy_bytes(k->kind, kinds, ns);
	} else {
		for (uint32_t i = 0; i < ns; i++)
			k->kind[i] = s[i].kind;
	}
	STORER(&vpt_kinds[n], k);
	STORER(&vpt_nkinds, n + 1);
	return n + 1;
}

/* ------------------------------------------------------------------ */
/* registration and the C API                                          */

void vpt_register(const struct vpt_object *o)
{
	uint32_t n, i, free = VPT_MAXOBJ;
	if (!o)
		return;
	if (vrt_init_normal() != ST_READY)
		return;
	if (!obj_valid(o)) {
		vrt_warn_once(W_OBJ, (uint64_t)(uintptr_t)o, "vpt_register: bad object descriptor ignored");
		return;
	}
	spin_lock(&vrt_reg_lock);
	n = LOAD(&vpt_nobjs);
	if (n > VPT_MAXOBJ)
		n = VPT_MAXOBJ;
	for (i = 0; i < n; i++) {
		const struct vpt_object *p = LOADA(&vpt_objs[i]);
		if (p == o) {
			spin_unlock(&vrt_reg_lock);
			return;
		}
		if (!p && free == VPT_MAXOBJ)
			free = i; /* an unregistered object's */
	}
	i = free;
	if (i == VPT_MAXOBJ) {
		if (n >= VPT_MAXOBJ) {
			spin_unlock(&vrt_reg_lock);
			vrt_warn_once(W_MAXOBJ, VPT_MAXOBJ, "vpt_register: too many objects");
			return;
		}
		i = n;
		STORE(&vpt_nobjs, n + 1);
	}
	STORE(&vrt_obj_kinds[i], kinds_of(o));
	STORE(&vpt_objdumped[i], 0);
	STORER(&vpt_objs[i], o);
	spin_unlock(&vrt_reg_lock);
	epoch_raise(o, LOAD(&vpt_hot.epoch)); /* (after: a bump now raises it too) */
	vrt_dump_objects();
	vrt_maps_check(); /* a dlopen'ed object: the mappings now */
}

/* The object goes away (dlclose; hijack's destructor calls this last of
 * the object's destructors): forget it, and return only when no thread
 * reads its descriptor any more. Its sites stay resolvable in the trace
 * (its OBJECT chunk was written at registration) and for the aggregator
 * (vpt_kinds). */
void vpt_unregister(const struct vpt_object *o)
{
	uint32_t n;
	if (!o)
		return;
	spin_lock(&vrt_reg_lock);
	n = LOAD(&vpt_nobjs);
	if (n > VPT_MAXOBJ)
		n = VPT_MAXOBJ;
	for (uint32_t i = 0; i < n; i++)
		if (LOADA(&vpt_objs[i]) == o)
			STORE(&vpt_objs[i], NULL);
	vrt_slots_forget(o);
	spin_unlock(&vrt_reg_lock);
	readers_drain();
}

void vptrace_start(void)
{
	if (vrt_init_normal() != ST_READY)
		return;
	if (!XCHG(&vpt_hot.active, 1)) {
		/* pages recorded before the stop count again */
		vrt_epoch_bump();
		vrt_note_chunk(VPTRACE_NOTE_START, sys_gettid(), 0, "vptrace_start");
	}
}

void vptrace_stop(void)
{
	if (vrt_init_normal() != ST_READY)
		return;
	if (XCHG(&vpt_hot.active, 0))
		vrt_note_chunk(VPTRACE_NOTE_STOP, sys_gettid(), 0, "vptrace_stop");
}

int vptrace_active(void)
{
	return LOAD(&vrt_init_state) != ST_OFF && LOAD(&vpt_hot.active) != 0;
}

int vptrace_flush(void)
{
	struct vpt_thread *t = &vpt_t;
	if (vrt_init_normal() != ST_READY)
		return -1;
	if (t->flags & VTF_INBATCH)
		return -1;
	if (sys_getpid() != vpt_pid) {
		t->flags |= VTF_INBATCH;
		vrt_child_fixup(0);
		t->flags &= ~VTF_INBATCH;
	}
	if (vrt_flush_now()) {
		vrt_warn_once(W_FLUSH, (uint64_t)vrt_cfg_exit_timeout_ms,
			      "vptrace_flush: the aggregator did not answer within VPTRACE_EXIT_TIMEOUT_MS; "
			      "what it held reaches the file later");
		return 1;
	}
	return 0;
}

void vptrace_note(const char *text)
{
	if (vrt_init_normal() != ST_READY)
		return;
	vrt_note_chunk(VPTRACE_NOTE_TEXT, sys_gettid(), 0, text ? text : "");
}

const char *vptrace_path(void)
{
	if (vrt_init_normal() != ST_READY)
		return NULL;
	return vrt_out_path;
}

//go:build !vptgohalf

/*
 * rt_slots.c: the slot arrays of objects of tls: indirect (ABI.md)
 * (the vptrace runtime's C half: rt_state.c, rt.h).
 */
#define _GNU_SOURCE
#define VPT_RT_C
#include "rt.h"

/* ------------------------------------------------------------------ */
/* slot arrays of objects of tls: indirect (ABI.md)                     */

/* Such an object has one initial-exec TLS word instead of its slots: the
 * address of this thread's slot array for it, 0 until vpt_slots maps one.
 * The arrays of a thread are listed in vpt_t.slots (a header before each
 * array says which word points to it) and unmapped at its exit, by
 * vpt_unregister for the object going away, and by vpt_slots once the
 * word no longer points to them (the object was unloaded and its TLS
 * given to a later load). A word is reset only while it still points to
 * its array: a word of an unloaded object lies in the thread's static TLS
 * block, which stays mapped while the thread lives, and holds another
 * object's value once the loader reuses it. */

static uint64_t thread_pointer(void)
{
	uint64_t tp;
	__asm__("movq %%fs:0, %0" : "=r"(tp));
	return tp;
}

static uint64_t *slot_word(uint64_t tp, const struct vpt_slothdr *h)
{
	return (uint64_t *)(uintptr_t)(tp + h->tpoff);
}

static uint64_t slot_array(const struct vpt_slothdr *h)
{
	return (uint64_t)(uintptr_t)h + VPT_SLOTHDR;
}

static void slots_push(struct vpt_thread *t, struct vpt_slothdr *h)
{
	struct vpt_slothdr *old = LOAD(&t->slots);
	do
		h->next = old;
	while (!CAS(&t->slots, &old, h));
}

/* Unmap the thread's arrays that drop says go (resetting the words that
 * still point to them), keep the others. The list is taken whole (a
 * signal handler's vpt_slots adds to an empty one meanwhile). */
static void slots_filter(struct vpt_thread *t, int (*vrt_drop)(uint64_t tp, const struct vpt_slothdr *h, const void *arg), const void *arg)
{
	uint64_t tp = thread_pointer();
	struct vpt_slothdr *h = XCHG(&t->slots, NULL), *next;
	for (; h; h = next) {
		next = h->next;
		if (!vrt_drop(tp, h, arg)) {
			slots_push(t, h);
			continue;
		}
		uint64_t a = slot_array(h);
		CAS(slot_word(tp, h), &a, 0);
		sc3(SYS_munmap, (long)(uintptr_t)h, (long)h->bytes, 0);
	}
}

static int slots_stale(uint64_t tp, const struct vpt_slothdr *h, const void *arg)
{
	(void)arg;
	return LOAD(slot_word(tp, h)) != slot_array(h);
}

static int slots_all(uint64_t tp, const struct vpt_slothdr *h, const void *arg)
{
	(void)tp, (void)h, (void)arg;
	return 1;
}

static int slots_of(uint64_t tp, const struct vpt_slothdr *h, const void *arg)
{
	(void)tp;
	return h->desc == arg;
}

/* o goes away: the calling thread's array for it (the others' go when
 * their threads exit or map another array). */
HIDDEN void vrt_slots_forget(const struct vpt_object *o)
{
	slots_filter(&vpt_t, slots_of, o);
}

static void fatal(const char *const *parts)
{
	static char msg[512];
	vrt_say(msg, sizeof msg, parts);
	sc3(SYS_kill, sys_getpid(), SIGABRT, 0);
	sc3(SYS_exit_group, 127, 0, 0);
}

/* vpt_slots (stubs.S, every register saved): the calling thread has no
 * slot array for the object desc yet, whose TLS word is at tpoff from the
 * thread pointer. Maps one, zeroed, and points the word to it. */
void vpt_slots_c(uint64_t desc, uint64_t tpoff)
{
	const struct vpt_object *o = (const struct vpt_object *)(uintptr_t)desc;
	struct vpt_thread *t = &vpt_t;
	uint64_t *word = (uint64_t *)(uintptr_t)(thread_pointer() + tpoff), want = 0;
	struct vpt_slothdr *h;
	size_t bytes;
	uint32_t n;
	long m;
	if (LOAD(word))
		return; /* (a signal handler's call mapped it) */
	if (o->magic != VPT_OBJ_MAGIC || o->nsites >= VPT_MAX_SITES || vrt_obj_nslots(o) >= VPT_MAX_SLOTS) {
		const char *msg[] = {"vptrace: a bad object descriptor asks for TLS slots; aborting\n", NULL};
		fatal(msg);
	}
	slots_filter(t, slots_stale, NULL);
	n = vrt_obj_nslots(o);
	bytes = ((size_t)VPT_SLOTHDR + 8 * (size_t)(n ? n : 1) + 4095) & ~(size_t)4095;
	m = sc6(SYS_mmap, 0, (long)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m < 0 && m > -4096) {
		char why[128], size[24];
		const char *msg[] = {"vptrace: cannot map ", size, " bytes of TLS slots: ", why, "; aborting\n", NULL};
		vrt_utoa(bytes, size);
		vrt_errno_text((int)-m, why, sizeof why);
		fatal(msg);
	}
	h = (struct vpt_slothdr *)m;
	h->tpoff = tpoff;
	h->bytes = bytes;
	h->desc = o;
	slots_push(t, h);
	if (!CAS(word, &want, slot_array(h)))
		return; /* a signal handler's call was first: this one goes at exit */
	/* the key destructor unmaps the arrays */
	if (!(t->flags & (VTF_KEYED | VTF_INBATCH | VTF_RUNTIME))) {
		t->flags |= VTF_INBATCH;
		vrt_thread_key(t);
		t->flags &= ~VTF_INBATCH;
	}
}

/* pthread key destructor: the thread exits */
HIDDEN void vrt_key_dtor(void *arg)
{
	struct vpt_thread *t = &vpt_t;
	struct vpt_buf *b = t->buf;
	(void)arg;
	vrt_alloc_thread_exit(); /* its allocation records (rt_alloc.c) */
	if (t->flags & (VTF_INBATCH | VTF_RUNTIME))
		return;
	t->flags |= VTF_INBATCH;
	t->end = 0;
	/* the thread's block counts (its counters are TLS: still there) */
	vrt_blocks_thread_exit(t);
	if (LOAD(&vrt_init_state) == ST_READY) {
		if (sys_getpid() != vpt_pid)
			vrt_child_fixup(0);
		b = t->buf;
		if (b) {
			uint64_t n = (t->cur - (uint64_t)(uintptr_t)b->ev) / VPT_EV_SIZE;
			vrt_handoff(t, b, n, 1);
		} else if (t->flags & VTF_SETUP) {
			char name[16];
			zero_bytes(name, sizeof name);
			sc6(SYS_prctl, PR_GET_NAME, (long)name, 0, 0, 0, 0);
			name[15] = 0;
			vrt_thread_exit_chunk(t->serial, t->tid, LOAD(&vpt_hot.clock), t->events, t->drops, name);
		}
	}
	t->buf = NULL;
	t->cur = t->end = 0;
	vrt_cache_unmap(t);
	/* (instrumented code in later destructors maps an array again, and
	 * keys the thread again for another round of destructors) */
	slots_filter(t, slots_all, NULL);
	t->flags = (t->flags | VTF_EXITED) & ~(VTF_INBATCH | VTF_KEYED);
}

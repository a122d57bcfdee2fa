//go:build !vptgohalf

/*
 * rt_fork.c: fork: the child's state and its own trace file
 * (the vptrace runtime's C half: rt_state.c, rt.h).
 */
#define _GNU_SOURCE
#define VPT_RT_C
#include "rt.h"

/* ------------------------------------------------------------------ */
/* fork                                                                */

HIDDEN void vrt_child_fixup(int from_atfork)
{
	struct vpt_thread *t = &vpt_t;
	uint32_t n = LOAD(&vpt_nbufs);
	int oldfd = LOAD(&vrt_trace_fd);
	uint32_t ppid = vpt_pid;

	vpt_pid = sys_getpid();
	vpt_ppid = ppid;
	STORE(&vrt_mode, MODE_C);
	vrt_header_flags |= VPTRACE_HDR_FORKED;
	STORE(&vrt_trace_fd, -1);
	if (oldfd >= 0)
		sc3(SYS_close, oldfd, 0, 0);
	/* every buffer back to the pool: their events are the parent's */
	STORE(&vrt_free_head, 0);
	STORE(&vrt_queue_head, 0);
	STORE(&vrt_nqueued, 0);
	if (n > VPT_MAXBUFS)
		n = VPT_MAXBUFS;
	for (uint32_t i = n; i-- > 0;) {
		struct vpt_buf *b = LOADA(&vpt_bufs[i]);
		if (!b)
			continue;
		vrt_claim_bump(b);
		b->flags = VBF_DIRTY;
		STORE(&b->state, VB_FREE);
		vrt_free_push(b);
	}
	t->buf = NULL;
	t->cur = t->end = 0;
	t->events = 0;
	t->drops = 0;
	t->flags &= ~VTF_SETUP; /* next event: new serial, tid, THREAD chunk */
	STORE(&vrt_final_started, 0);
	STORE(&vrt_final_done, 0);
	STORE(&vrt_final_req, 0);
	STORE(&vrt_flush_req, 0);
	STORE(&vrt_flush_done_ctr, 0);
	STORE(&vrt_go_alive, GO_LOCKED); /* no Go in a fork child */
	STORE(&vpt_go_held, 0);           /* (the parent's consumer's) */
	for (uint32_t i = 0; i < VPT_MAXOBJ; i++)
		if (vpt_objdumped[i])
			vpt_objdumped[i] = 0;
	/* (held by threads the child does not have) */
	STORE(&vrt_reg_lock, 0);
	STORE(&vrt_obj_readers, 0);
	FADD(&vrt_file_gen, 1); /* the child's file has no OBJECT chunk yet */
	vrt_open_ns = vpt_now();
	STORE(&vrt_write_errno, 0); /* (the parent's file's) */
	vrt_trace_regular = 0;
	vrt_expand_path(vpt_pid);
	vrt_fork_ppid = ppid;
	STORE(&vrt_child_open, 1); /* created by the first chunk the child writes */
	vrt_reset_slots();
	/* The forking thread's recent-page cache holds pages the parent's
	 * trace recorded: a new epoch, so that the child's trace records them. */
	vrt_epoch_bump();
	if (from_atfork)
		vrt_late_init();
}

/* Create a fork child's trace file (see vrt_write_chunk). Returns its fd, or -1. */
HIDDEN int vrt_child_open_now(void)
{
	int st = 1;
	if (CAS(&vrt_child_open, &st, 2)) {
		vpt_t.flags |= VTF_INIT;
		if (vrt_open_trace(1) == 0) {
			vrt_dump_objects();
			vrt_note_chunk(VPTRACE_NOTE_FORK, sys_gettid(), vrt_fork_ppid, "fork child");
		} else {
			STORE(&vpt_hot.active, 0);
			STORE(&vrt_init_state, ST_OFF);
		}
		STORE(&vrt_child_open, 3);
		vpt_t.flags &= ~VTF_INIT;
	} else if (st == 2) {
		if (vpt_t.flags & VTF_INIT)
			return -1; /* re-entered while opening: this chunk is lost */
		while (LOAD(&vrt_child_open) == 2)
			sc3(SYS_sched_yield, 0, 0, 0);
	}
	return LOAD(&vrt_trace_fd);
}

HIDDEN void vrt_atfork_child(void)
{
	if (LOAD(&vrt_init_state) == ST_READY && sys_getpid() != vpt_pid)
		vrt_child_fixup(1);
}

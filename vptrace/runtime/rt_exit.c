//go:build !vptgohalf

/*
 * rt_exit.c: flush, exit, exec and _exit
 * (the vptrace runtime's C half: rt_state.c, rt.h).
 */
#define _GNU_SOURCE
#define VPT_RT_C
#include "rt.h"

/* ------------------------------------------------------------------ */
/* flush, exit                                                         */

static int wait_done(uint32_t ticket, int timeout_ms)
{
	uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		uint32_t d = LOAD(&vrt_flush_done_ctr);
		uint64_t now;
		if ((int32_t)(d - ticket) >= 0)
			return 1;
		now = clock_ns(CLOCK_MONOTONIC);
		if (now >= deadline)
			return 0;
		futex_wait(&vrt_flush_done_ctr, d, (int)((deadline - now) / 1000000ull) + 1);
	}
}

uint64_t vpt_flush_requested(void) { return LOAD(&vrt_flush_req); }
uint64_t vpt_final_requested(void) { return LOAD(&vrt_final_req); }

void vpt_flush_done(uint64_t ticket, int final)
{
	uint32_t d = LOAD(&vrt_flush_done_ctr);
	while ((int32_t)((uint32_t)ticket - d) > 0 && !CAS(&vrt_flush_done_ctr, &d, (uint32_t)ticket))
		;
	if (final)
		STORE(&vrt_final_req, 0);
	futex_wake(&vrt_flush_done_ctr);
}

static int go_request(int final, int timeout_ms)
{
	uint32_t ticket = FADD(&vrt_flush_req, 1) + 1;
	if (final)
		STORE(&vrt_final_req, ticket);
	vrt_wake_consumer();
	return wait_done(ticket, timeout_ms);
}

/* Whether this thread is the Go consumer's (a signal handler that
 * interrupted it): it cannot wait for itself. */
static int on_consumer(void)
{
	return LOAD(&vrt_consumer_tid) == sys_gettid();
}

/* Whether the process runs under valgrind: its RUNNING_ON_VALGRIND client
 * request, a sequence of rotates that leaves rdi as it was and does
 * nothing on the CPU (rdx keeps its 0), which valgrind answers with its
 * nesting depth. Under valgrind's default scheduling the Go runtime's
 * spinning threads can stall the aggregator for minutes; --fair-sched=yes
 * avoids it: the exit message says so. */
static int on_valgrind(void)
{
	volatile uint64_t req[6] = {0x1001, 0, 0, 0, 0, 0};
	uint64_t depth = 0;
	__asm__ volatile("rolq $3, %%rdi\n\trolq $13, %%rdi\n\trolq $61, %%rdi\n\trolq $51, %%rdi\n\txchgq %%rbx, %%rbx"
			 : "+d"(depth)
			 : "a"(&req[0])
			 : "cc", "memory");
	return depth != 0;
}

/* The Go consumer did not answer in time at exit or before an exec: the
 * process goes on without it. Fence it (a write of its that came later
 * would land after the END; it checks the fence before each) and return
 * the events it had taken and not written: the file misses them, the END
 * says how many (flag LOST) and so does stderr. A consumer that was
 * already inside a write when fenced may still land its chunk: the count
 * then names events the file has (a loss said that was not one, never
 * the reverse). */
static uint64_t fence_consumer(const char *when)
{
	static char msg[4400], num[24], ms[24];
	uint64_t lost;
	STORE(&vpt_go_fenced, 1);
	lost = LOAD(&vpt_go_held);
	if (lost && LOAD(&vrt_trace_fd) >= 0) {
		const char *m[] = {"vptrace: the aggregator did not answer within ", ms, " ms ", when, ": ",
				   num, " events it held are missing from ", vrt_out_path,
				   " (the trace says INCOMPLETE; VPTRACE_EXIT_TIMEOUT_MS sets the wait",
				   on_valgrind() ? "; under valgrind, run with --fair-sched=yes)\n" : ")\n", NULL};
		vrt_utoa(lost, num);
		vrt_utoa((uint64_t)vrt_cfg_exit_timeout_ms, ms);
		vrt_say(msg, sizeof msg, m);
	}
	return lost;
}

static void finalize(void)
{
	struct vpt_thread *t = &vpt_t;
	uint32_t saved;
	int ok = 0;
	/* a program that allocated but recorded no event opens its file now */
	if (LOAD(&vrt_init_state) == ST_NONE && vrt_alloc_pending() && !(t->flags & (VTF_INBATCH | VTF_RUNTIME)))
		vrt_core_init();
	if (LOAD(&vrt_init_state) != ST_READY || XCHG(&vrt_final_started, 1))
		return;
	saved = t->flags;
	t->flags |= VTF_INBATCH;
	if (sys_getpid() != vpt_pid)
		vrt_child_fixup(0);
	/* every thread's block counts, allocation records and the mappings,
	 * before the END */
	vrt_blocks_snapshot();
	vrt_alloc_flush_all(1);
	if (LOAD(&vrt_trace_fd) >= 0 || LOAD(&vrt_child_open) == 1)
		vrt_maps_chunk(MAPS_EXIT);
	if (LOAD(&vrt_mode) == MODE_GO) {
		int gs = GO_NONE;
		/* lock a consumer that has not started yet out for good, or
		 * ask the running one */
		if (!CAS(&vrt_go_alive, &gs, GO_LOCKED) && gs == GO_RUNNING && !on_consumer())
			ok = go_request(1, vrt_cfg_exit_timeout_ms);
	}
	if (!ok) {
		/* the aggregator is not running (C only, or a short program
		 * that ends before it started) or did not answer in time */
		int timedout = LOAD(&vrt_mode) == MODE_GO && LOAD(&vrt_go_alive) == GO_RUNNING;
		uint64_t lost = timedout ? fence_consumer("at exit") : 0;
		vrt_c_steal_all(1);
		if (LOAD(&vrt_trace_fd) >= 0) /* (a fork child with no events has no file) */
			vrt_end_chunk(VPTRACE_END_CLEAN | (timedout ? VPTRACE_END_FALLBACK : 0), lost);
	}
	STORE(&vrt_final_done, 1);
	STORE(&vrt_mode, MODE_C);
	/* events after this point (later destructors, other threads still
	 * running) are written through by the thread that records them */
	t->flags = (saved | VTF_FINAL) & ~VTF_INBATCH;
	t->cur = t->end = 0;
}

__attribute__((destructor(101))) static void vpt_fini(void)
{
	finalize();
}

/* Write what every thread recorded so far to the file and return when it
 * is there: through the Go consumer when it runs, else (a fork child, no
 * answer in time) by this thread, raw; and every thread's block counts.
 * With VTF_INBATCH clear. Returns 1 when the consumer was asked and did
 * not answer in time (what it holds reaches the file when it goes on). */
HIDDEN int vrt_flush_now(void)
{
	struct vpt_thread *t = &vpt_t;
	int ok = 0, asked = 0;
	if (LOAD(&vrt_mode) == MODE_GO && LOAD(&vrt_go_alive) == GO_RUNNING && !LOAD(&vrt_final_done) && !on_consumer()) {
		asked = 1;
		ok = go_request(0, vrt_cfg_exit_timeout_ms);
	}
	if (!ok) {
		t->flags |= VTF_INBATCH;
		vrt_c_steal_all(1);
		t->flags &= ~VTF_INBATCH;
	}
	vrt_blocks_snapshot();
	vrt_alloc_flush_all(0);
	vrt_maps_check();
	return asked && !ok;
}

/* ------------------------------------------------------------------ */
/* exec and _exit (exec.c interposes them)                              */

/* Whether this thread may flush before an exec or an _exit: the runtime
 * traces this process (a vfork child has another pid and shares its
 * parent's memory: it must leave the runtime alone; a fork child that
 * recorded something was set up as one, with its own pid) and this
 * thread is not inside it (a signal handler that interrupted it). */
static int may_flush(void)
{
	return LOAD(&vrt_init_state) == ST_READY && sys_getpid() == LOAD(&vpt_pid) &&
	       !(vpt_t.flags & (VTF_INBATCH | VTF_RUNTIME)) && !LOAD(&vrt_final_started);
}

/* Before an exec replaces the image: everything recorded so far to the
 * file (the exec closes it and ends the other threads), then a NOTE EXEC
 * naming prog and an END flagged EXEC. Returns 1 when it wrote them (the
 * caller says vpt_exec_failed if the exec returns). A fork child that
 * recorded nothing has no file and gets none. */
int vpt_before_exec(const char *prog)
{
	uint64_t lost = 0;
	if (!may_flush())
		return 0;
	if (vrt_flush_now())
		lost = fence_consumer("before exec");
	if (LOAD(&vrt_trace_fd) < 0)
		return 0;
	vrt_note_chunk(VPTRACE_NOTE_EXEC, sys_gettid(), 0, prog ? prog : "");
	vrt_end_chunk(VPTRACE_END_EXEC, lost);
	return 1;
}

/* The exec failed (err: errno): tracing goes on in the same file, the
 * EXEC end before this note is void. */
void vpt_exec_failed(int err)
{
	STORE(&vpt_go_fenced, 0); /* (fenced before it, if it did not answer: what it holds is not lost now) */
	vrt_note_chunk(VPTRACE_NOTE_EXEC_FAILED, sys_gettid(), (uint64_t)err, "exec failed: tracing goes on in this file");
}

/* _exit, _Exit: the exit flush that exit() does in its destructor (a fork
 * child's events between fork and _exit were lost without it). */
void vpt_before_exit(void)
{
	if (may_flush())
		finalize();
}

//go:build !vptgohalf

/*
 * rt_state.c: the C half of the vptrace runtime (see ../ABI.md, ../FORMAT.md and
 * vptrace.h).
 *
 * Threads append events to per-thread buffers (stubs.S). A full buffer is
 * handed over here (vpt_full) without ever calling Go: it is pushed on a
 * lock-free queue that the Go consumer (main.go) drains, aggregates and
 * streams to the trace file; the thread continues in a fresh buffer from a
 * lock-free pool. Everything on this path is async-signal-safe (atomics, raw
 * system calls). When Go cannot take the buffer (not running yet, too far
 * behind, after a fork, VPTRACE_RAW=1, or after the exit flush) the thread
 * writes the buffer itself as a RAW chunk with one writev(2) on the O_APPEND
 * trace descriptor and reuses it. Both writers emit whole chunks with single
 * write calls, so chunks never interleave.
 *
 * Reading a thread's buffer while it runs (the consumer's periodic steal, the
 * exit flush) uses the buffer's claim word: generation<<32 | consumed. A
 * reader copies the written slots (site != 0) past "consumed", then moves
 * "consumed" with a CAS in the same generation. The owner (or the releaser)
 * closes the word before it writes the buffer out and zeroes it, and reopens
 * it in the next generation afterwards: a reader never publishes events
 * from a buffer being reused, and no event is taken twice.
 *
 * Signals: the stub reserves its slot with one xadd and counts its nesting
 * (depth); a handler that interrupts a stub or the batch path on the same
 * thread records into the buffer, but never hands it over (it drops and
 * counts its event when the buffer is full).
 *
 * The C half is split into files along what they do, rt.h declaring what
 * they share: rt_state.c (state shared with stubs.S and Go, configuration),
 * rt_output.c (chunks), rt_objects.c (objects, registration, the C API),
 * rt_buffers.c (the buffer pool and queue, raw writes, steals, the Go
 * consumer's side), rt_init.c (initialisation), rt_fork.c, rt_threads.c
 * (threads and the batch path), rt_slots.c (slot arrays of tls: indirect),
 * rt_exit.c (flush, exit, exec); exec.c interposes the exec family.
 */
#define _GNU_SOURCE
#define VPT_RT_C
#include "rt.h"

_Static_assert(offsetof(struct vpt_thread, cur) == VT_CUR, "VT_CUR");
_Static_assert(offsetof(struct vpt_thread, end) == VT_END, "VT_END");
_Static_assert(offsetof(struct vpt_thread, depth) == VT_DEPTH, "VT_DEPTH");
_Static_assert(offsetof(struct vpt_thread, flags) == VT_FLAGS, "VT_FLAGS");
_Static_assert(sizeof(struct vpt_event) == VPT_EV_SIZE, "event size");
_Static_assert(offsetof(struct vpt_buf, ev) == VPT_BUF_HDR, "buffer header");
_Static_assert(offsetof(struct vpt_hot_s, clock) == VH_CLOCK, "VH_CLOCK");
_Static_assert(offsetof(struct vpt_hot_s, epoch) == VH_EPOCH, "VH_EPOCH");
_Static_assert(offsetof(struct vpt_thread, cache) == VT_CACHE, "VT_CACHE");
_Static_assert(offsetof(struct vpt_thread, slots) == VT_SLOTS, "VT_SLOTS");
_Static_assert(offsetof(struct vpt_thread, probe) == VT_PROBE, "VT_PROBE");
_Static_assert(sizeof(struct vpt_thread) == 128, "vpt_thread");
_Static_assert(sizeof(struct vpt_slothdr) == VPT_SLOTHDR, "vpt_slothdr");
_Static_assert(offsetof(struct vpt_kinds, kind) == VPT_KINDS_HDR, "vpt_kinds");
_Static_assert(sizeof(struct vpt_object) == 64, "vpt_object");
_Static_assert(sizeof(struct vpt_site) == 32, "vpt_site");
_Static_assert(offsetof(struct vpt_site, kind) == VS_KIND, "VS_KIND");
_Static_assert(offsetof(struct vpt_site, size) == VS_SIZE, "VS_SIZE");
_Static_assert(offsetof(struct vpt_site, block) == VS_BLOCK, "VS_BLOCK");
_Static_assert(VD_VSIB(1u << VD_VSIB_BIT) && VD_MASK(1u << VD_MASK_BIT) && VD_MREG(31u << VD_MREG_SHIFT) == 31,
	       "VD_*_BIT");

/* ------------------------------------------------------------------ */
/* state shared with stubs.S and Go                                    */

HIDDEN struct vpt_hot_s vpt_hot __attribute__((aligned(64))) = {.active = 1};
/* (in .bss, not .rodata: zeros that take no room in the file) */
HIDDEN const uint64_t vrt_probe_none[VPT_CACHE] __attribute__((aligned(64), section(".bss.vrt_probe_none")));
/* aligned(16): as GCC aligned it when rt_*.c were one file (the runtime's
 * TLS block: 160 bytes in libvptrace.so, ABI.md) */
HIDDEN __thread struct vpt_thread vpt_t __attribute__((tls_model("initial-exec"), aligned(16))) = {.probe = vrt_probe_none};
/* What inserted code reads itself (ABI.md "The inline cache probe": the
 * thread's probe table at VT_PROBE and the epoch at VH_EPOCH), under
 * names of their own, exported from libvptrace.so too. vpt_probe_tls is
 * new with VT_PROBE: objects whose probes read it fail to link against a
 * runtime without it (vpt_probe_thread: the name earlier objects read
 * VT_CACHE through) */
extern __thread struct vpt_thread vpt_probe_thread
	__attribute__((alias("vpt_t"), visibility("default"), tls_model("initial-exec")));
extern __thread struct vpt_thread vpt_probe_tls
	__attribute__((alias("vpt_t"), visibility("default"), tls_model("initial-exec")));
extern struct vpt_hot_s vpt_probe_hot __attribute__((alias("vpt_hot"), visibility("default")));

HIDDEN const struct vpt_object *vpt_objs[VPT_MAXOBJ];
HIDDEN uint32_t vpt_nobjs;
HIDDEN uint8_t vpt_objdumped[VPT_MAXOBJ];
VPT_GOAPI struct vpt_kinds *vpt_kinds[VPT_MAXOBJ];
VPT_GOAPI uint32_t vpt_nkinds;
HIDDEN uint32_t vrt_obj_kinds[VPT_MAXOBJ]; /* per vpt_objs slot: its vpt_kinds index + 1 */
VPT_GOAPI struct vpt_buf *vpt_bufs[VPT_MAXBUFS];
VPT_GOAPI uint32_t vpt_nbufs;
VPT_GOAPI uint64_t vpt_go_held;
VPT_GOAPI uint32_t vpt_go_fenced;

/* Linking the C part pulls in the Go part (and the Go runtime) through
 * this (libvptrace.a; libvptrace.so loads its Go half, rt_gohalf.c), and
 * exec.c (the exec family and _exit). */
#ifndef VPT_SPLIT
extern void vptGoAnchor(void);
HIDDEN void (*const vpt_go_anchor)(void) = vptGoAnchor;
#endif
HIDDEN const char *const vpt_exec_anchor = &vpt_exec_linked;

/* ------------------------------------------------------------------ */
/* configuration and global state                                      */

HIDDEN int vrt_init_state;          /* ST_* */
HIDDEN int vrt_atfork_registered;
HIDDEN uint32_t vrt_clock_pid;      /* pid whose clock thread runs */
HIDDEN int vrt_late_done_pid;       /* pid for which late init ran */
HIDDEN int vrt_mode;                /* MODE_* */
HIDDEN int vrt_go_alive;             /* GO_* */
HIDDEN int vrt_trace_fd = -1;
HIDDEN uint32_t vpt_pid, vpt_ppid, vrt_fork_ppid;
HIDDEN int vrt_child_open;           /* fork child's file: 0 n/a, 1 to create, 2 creating, 3 done */
HIDDEN uint32_t vrt_header_flags;
HIDDEN uint64_t vrt_start_mono, vrt_start_unix, vrt_open_ns;

HIDDEN int vrt_cfg_interval_ms = 100;
HIDDEN int vrt_cfg_clock_us = 1000;
HIDDEN uint32_t vrt_cfg_buf_cap;          /* events per buffer */
HIDDEN size_t vrt_cfg_buf_bytes;          /* bytes per buffer (page multiple) */
HIDDEN uint64_t vrt_cfg_max_bytes = 1024ull << 20;
HIDDEN uint32_t vrt_cfg_backlog = 256;    /* queued buffers before threads wait, then write raw */
HIDDEN int vrt_cfg_backlog_wait_ms = 1000; /* how long a thread waits for the consumer then */
HIDDEN int vrt_cfg_compress = 1;          /* C chunks in DEFLATE chunks (VPTRACE_COMPRESS=0: no) */
HIDDEN int vrt_cfg_exit_timeout_ms = 5000;

HIDDEN char vrt_out_pattern[4096];        /* absolute, with %p */
HIDDEN char vrt_out_path[4096];           /* the file this process writes (see vrt_open_trace) */
HIDDEN int vrt_out_hasp;                  /* vrt_out_pattern has a %p */

/* write errors (vrt_write_failed) */
HIDDEN int vrt_write_errno;               /* the first failed write's errno; 0: none */
HIDDEN int vrt_trace_regular;             /* the trace is a regular file: its STATUS can be rewritten */
HIDDEN uint64_t vrt_status_off;           /* offset of the STATUS chunk in it */
HIDDEN uint32_t vrt_consumer_tid;         /* the Go consumer's thread */

HIDDEN uint64_t vrt_serial_ctr;
HIDDEN uint64_t vrt_mem_bytes;
HIDDEN uint64_t vrt_total_drops;
HIDDEN uint32_t vrt_warned;               /* one-time notes */

/* consumer protocol */
HIDDEN uint64_t vrt_free_head;            /* tag<<32 | index+1 */
HIDDEN uint32_t vrt_queue_head;           /* index+1 */
HIDDEN uint32_t vrt_nqueued;
HIDDEN uint64_t vrt_handed_events; /* in buffers queued so far (rt_gohalf.c) */
HIDDEN uint32_t vrt_taken_seq;            /* bumped when the consumer takes the queue */
HIDDEN uint32_t vrt_backlog_waiters;      /* threads waiting for it (vrt_handoff) */
HIDDEN uint32_t vrt_backlog_stuck;        /* vrt_taken_seq+1 when a wait timed out: no waiting until it moves */
HIDDEN uint32_t vrt_wake_seq, vrt_consumer_sleeping;
HIDDEN uint32_t vrt_flush_req, vrt_flush_done_ctr, vrt_final_req;
HIDDEN int vrt_final_started, vrt_final_done;

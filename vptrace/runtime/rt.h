/*
 * rt.h: layouts shared by the runtime's C code (rt.c), its assembly
 * (stubs.S) and its Go code (cgo). Internal to vptrace/runtime; the public
 * API is vptrace.h.
 */
#ifndef VPT_RT_H
#define VPT_RT_H

/* struct vpt_thread (per thread, initial-exec TLS) offsets, used by stubs.S */
#define VT_CUR    0   /* next free event slot (address) */
#define VT_END    8   /* end of the event array; cur >= end: batch path */
#define VT_DEPTH  16  /* stub nesting (signal handlers interrupting a stub) */
#define VT_FLAGS  20
#define VT_CACHE  88  /* the recent-page cache: a pointer to VPT_CACHE entries, or 0 */
#define VT_SLOTS  96  /* the thread's slot arrays of tls: indirect objects (a list) */
#define VPT_CACHE 32768 /* entries: VPT_CACHE / 2 sets of two */
#define VPT_CACHE_SHIFT 50 /* the set: the top 14 bits of key * 0x9e3779b97f4a7c15 */

#define VPT_EV_SIZE   24   /* struct vpt_event */
#define VPT_BUF_HDR   128  /* events start at this offset in a buffer */

/* vpt_hot: the one cache line the per-event path reads */
#define VH_ACTIVE 0
#define VH_CLOCK  8
#define VH_EPOCH  16  /* added to cache keys; vptrace_start changes it */

#ifndef __ASSEMBLER__
#include <stdint.h>

#include "vptrace.h" /* struct vpt_object, struct vpt_site */

/* vpt_site.block of a sweep with a register step (VPT_KIND_DYN_STEP): the
 * register's hardware number in bits 24-31, the multiplier (bytes per unit
 * of the register) a signed 24-bit number below (abi.DynStep) */
#define VPT_DYN_REG(b)  (((b) >> 24) & 0xff)
#define VPT_DYN_MULT(b) ((int32_t)((b) << 8) >> 8)

/* vpt_site.block of a vector site (VPT_KIND_VEC, ABI.md "Vector accesses";
 * abi.VecDesc) */
#define VD_VIDX(d) ((d) & 0x1f)         /* index vector register (VSIB) */
#define VD_VSIB(d) (((d) >> 5) & 1)     /* gather: per-element indices */
#define VD_SCALE(d) (((d) >> 6) & 3)    /* log2 of the index scale */
#define VD_QIDX(d) (((d) >> 8) & 1)     /* indices are qwords (else dwords) */
#define VD_COUNT(d) (((d) >> 9) & 0x3f) /* elements */
#define VD_MREG(d) (((d) >> 15) & 0x1f) /* mask vector register: element sign bits */
#define VD_MASK(d) (((d) >> 20) & 1)    /* the access has a mask */

/* one event: written by the stub (page1, time, then site last; abi.Event) */
struct vpt_event {
	uint64_t page1;  /* page number + 1 */
	uint64_t site;   /* address of the struct vpt_site; 0: slot not written */
	uint64_t time;   /* ns since trace start (vpt_hot.clock) */
};

/* thread flags */
#define VTF_SETUP   1u   /* tid/serial/key done */
#define VTF_INBATCH 2u   /* inside the runtime: events are dropped */
#define VTF_EXITED  4u   /* our key destructor ran */
#define VTF_RUNTIME 8u   /* a runtime thread (clock): events ignored */
#define VTF_INIT    16u  /* this thread runs vpt_init */
#define VTF_KEYED   32u  /* the thread's key is set: its destructor will run */
#define VTF_FINAL   64u  /* the exit flush ran on this thread */
#define VTF_MEMO    128u /* range_record is using the thread's range memo */

struct vpt_buf;
struct vpt_thread {
	uint64_t cur;          /* 0 */
	uint64_t end;          /* 8 */
	uint32_t depth;        /* 16 */
	uint32_t flags;        /* 20 */
	struct vpt_buf *buf;   /* 24 */
	uint64_t drops;        /* 32: cumulative */
	uint64_t serial;       /* 40 */
	uint64_t events;       /* 48: cumulative events handed off */
	uint64_t tstart;       /* 56 */
	uint32_t tid;          /* 64 */
	uint32_t pad;
	char name[16];         /* 72: thread name at its first event */
	/* 88: pages this thread recorded recently, with the kinds of access
	 * (read, write) it recorded them for: entries ((page+1) << 2) + epoch
	 * | kinds, two-way set-associative (a set: the page key's hash; a new
	 * page goes first, the first entry moves second, the second leaves).
	 * An access whose kinds its page's entry has is not recorded again,
	 * whichever site it comes from (sites of exact mode always are).
	 * VPT_CACHE entries, mapped when the thread is set up and unmapped at
	 * its exit (static TLS this large would fail pthread_create for
	 * threads with small stacks); 0: none. The range memo (rt.c) follows
	 * them in the mapping. */
	uint64_t *cache;
	/* 96: the slot arrays vpt_slots mapped for this thread (objects of
	 * tls: indirect, ABI.md), a list; unmapped by the key destructor */
	struct vpt_slothdr *slots;
	uint64_t pad3[3];      /* 104 */
};

/* The head of a slot array of an object of tls: indirect: the mapping
 * starts with it, and the object's TLS word points past it (at slot 0). */
struct vpt_slothdr {
	struct vpt_slothdr *next; /* the thread's list */
	uint64_t tpoff;           /* the object's TLS word, from the thread pointer */
	uint64_t bytes;           /* the mapping's size */
	const struct vpt_object *desc; /* the object */
	uint64_t pad[4];
};
#define VPT_SLOTHDR 64

/* buffer states */
#define VB_FREE   0u
#define VB_OWNED  1u
#define VB_QUEUED 2u
#define VB_TAKEN  3u
/* claim word: generation<<32 | consumed; closed while its owner rewrites it */
#define VPT_CLAIM_CLOSED 0x80000000ull
/* buffer flags */
#define VBF_EXIT  1u

struct vpt_buf {
	uint32_t index;          /* 0: in vpt_bufs */
	uint32_t next;           /* 4: list link, index+1, 0 = end */
	uint32_t state;          /* 8 (atomic) */
	uint32_t flags;          /* 12 */
	uint64_t claim;          /* 16 (atomic): generation<<32 | events consumed */
	uint64_t serial;         /* 24: owner thread */
	uint32_t tid;            /* 32 */
	uint32_t cap;            /* 36: capacity in events */
	uint64_t n;              /* 40: events at hand-off */
	uint64_t drops;          /* 48: owner's cumulative drops at hand-off */
	uint64_t tstart;         /* 56: owner thread's start time */
	uint64_t texit;          /* 64: exit time (VBF_EXIT) */
	uint64_t events;         /* 72: owner's cumulative events incl. this buffer */
	char name[16];           /* 80: thread name (VBF_EXIT) */
	uint8_t pad[32];         /* 96 */
	struct vpt_event ev[];   /* 128 */
};

/* the hot line */
struct vpt_hot_s {
	uint32_t active;         /* 0: 0 = stopped/disabled */
	uint32_t pad;
	uint64_t clock;          /* 8: ns since trace start, updated every clock tick */
	uint64_t epoch;          /* 16: cache-key offset, moved on by vptrace_start and in a fork child */
	uint64_t pad2[5];
};
extern struct vpt_hot_s vpt_hot;

#define VPT_MAXOBJ  65536
#define VPT_MAXBUFS 65536

extern const struct vpt_object *vpt_objs[VPT_MAXOBJ];
extern uint32_t vpt_nobjs;

/* The site kinds of a registered object, copied at registration: the Go
 * consumer reads these, never a descriptor (which dlclose unmaps). Entries
 * are immutable once published and never freed; a later entry with the
 * same sites address (a library loaded again where an unloaded one was)
 * replaces an earlier one for lookups. */
struct vpt_kinds {
	uint64_t sites;          /* address of sites[0] */
	uint64_t id;             /* the object's id */
	uint32_t nsites;
	uint32_t dumped;         /* the file generation its OBJECT chunk went to */
	const struct vpt_object *desc;
	uint8_t kind[];          /* nsites kinds, at VPT_KINDS_HDR */
};
#define VPT_KINDS_HDR 32
extern struct vpt_kinds *vpt_kinds[VPT_MAXOBJ];
extern uint32_t vpt_nkinds;
extern struct vpt_buf *vpt_bufs[VPT_MAXBUFS];
extern uint32_t vpt_nbufs;

/* interface for the Go consumer (main.go) */
extern int vpt_consumer_wait(int timeout_ms);     /* 1: work or request pending */
extern uint32_t vpt_queue_take(void);             /* list head (index+1), FIFO order */
extern void vpt_buf_release(struct vpt_buf *b, uint64_t used);
extern int vpt_go_started(void);                  /* 0: stay out (exit went raw) */
extern void vpt_go_tick(void);                    /* late init in a normal context */
extern uint64_t vpt_now(void);                    /* ns since trace start */
extern int vpt_trace_fd(void);
extern int vpt_trace_mode(void);                  /* 0 Go, 1 C only, -1 off/not open */
extern uint64_t vpt_flush_requested(void);
extern uint64_t vpt_final_requested(void);
extern void vpt_flush_done(uint64_t ticket, int final);
extern uint64_t vpt_obj_sites(const struct vpt_object *o, uint32_t *nsites);
extern int vpt_interval_ms(void);
extern void vpt_write_failed(int err);             /* a write to the trace failed: errno */
extern int vpt_write_errno(void);                  /* the first failed write's errno, or 0 */

/* for exec.c (the exec family, _exit) */
#define VPT_HIDDEN __attribute__((visibility("hidden")))
extern VPT_HIDDEN int vpt_before_exec(const char *prog); /* 1: wrote NOTE EXEC, END(EXEC) */
extern VPT_HIDDEN void vpt_exec_failed(int err);
extern VPT_HIDDEN void vpt_before_exit(void);
extern VPT_HIDDEN const char vpt_exec_linked;            /* exec.c is in the link */
#endif
#endif

/*
 * rt.h: layouts shared by the runtime's C code (rt_*.c), its assembly
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
#define VT_PROBE  112 /* what inline probes read: the cache, or vrt_probe_none (never 0) */
#define VPT_CACHE 32768 /* entries: VPT_CACHE / 2 sets of two */
#define VPT_CACHE_SETMASK 0x3fff0 /* a key's set: (key << 2) & this is its offset (bits 2-15 of key: page+1 mod 16384) */

#define VPT_EV_SIZE   24   /* struct vpt_event */
#define VPT_BUF_HDR   128  /* events start at this offset in a buffer */

/* vpt_hot: the one cache line the per-event path reads */
#define VH_ACTIVE 0
#define VH_CLOCK  8
#define VH_EPOCH  16  /* added to cache keys; vptrace_start changes it */

/* struct vpt_site as stubs.S reads it (rt_state.c asserts the offsets) and
 * the bits of a vector descriptor it tests (VD_* below) */
#define VS_KIND  16
#define VS_SIZE  18
#define VS_BLOCK 24
#define VD_VSIB_BIT   5
#define VD_MREG_SHIFT 15
#define VD_MASK_BIT   20

#include "vptrace.h" /* struct vpt_object, struct vpt_site; VPT_KIND_* in assembly too */

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>


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
#define VTF_BLOCKS  256u /* the thread holds (or waits for) the blockcount lock (rt_blocks.c) */

struct vpt_buf;
struct vpt_bcrec;
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
	uint32_t dtors;        /* 68: times the key destructor ran (rt_blocks.c) */
	char name[16];         /* 72: thread name at its first event */
	/* 88: pages this thread recorded recently, with the kinds of access
	 * (read, write) it recorded them for: entries ((page+1) << 2) + epoch
	 * | kinds, two-way set-associative (a set: the page key's hash; a new
	 * page goes first, the first entry moves second, the second leaves).
	 * An access whose kinds its page's entry has is not recorded again,
	 * whichever site it comes from (sites of exact mode always are).
	 * VPT_CACHE entries, mapped when the thread is set up and unmapped at
	 * its exit (static TLS this large would fail pthread_create for
	 * threads with small stacks); 0: none. The range memo (rt_threads.c) follows
	 * them in the mapping. */
	uint64_t *cache;
	/* 96: the slot arrays vpt_slots mapped for this thread (objects of
	 * tls: indirect, ABI.md), a list; unmapped by the key destructor */
	struct vpt_slothdr *slots;
	/* 104: the thread's block counters of blockcount objects (rt_blocks.c), a list */
	struct vpt_bcrec *blocks;
	/* 112: the cache for inline probes (ABI.md "The inline cache
	 * probe"): cache when there is one, else vrt_probe_none, a table of
	 * zeros no key matches (the TLS image starts every thread with it),
	 * so that the probes need not test for none. Set before cache is
	 * set, reset before cache is cleared and unmapped. */
	const uint64_t *probe;
	uint64_t pad3;         /* 120 */
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
#define VBF_DIRTY 0x100u /* (fork child) stale events from the parent */

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
	uint64_t epoch;          /* 16: cache-key offset, moved on by vrt_epoch_bump (which raises the objects' epoch words too) */
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
/* The Go consumer's unwritten events: taken from buffers and not yet in
 * the file (it stores the count after every change). When it stops
 * answering at exit or before an exec, the runtime fences it (its writes
 * stop) and reports that count as lost (END flag LOST). */
extern uint64_t vpt_go_held;
extern uint32_t vpt_go_fenced;

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
/* The number of o's last-page slots: its sites' own and the second slots
 * of some (VPT_FLAG_SLOTS; ABI.md "Second slots"), else one a site. */
static inline uint32_t vrt_obj_nslots(const struct vpt_object *o)
{
	return (o->flags & VPT_FLAG_SLOTS) ? o->nslots : o->nsites;
}
extern int vpt_interval_ms(void);
extern void vpt_write_failed(int err);             /* a write to the trace failed: errno */
extern int vpt_write_errno(void);                  /* the first failed write's errno, or 0 */
/* the times releases asked the aggregates to be cut at (rt_alloc.c) since *tail */
extern uint32_t vpt_cuts_take(uint64_t *tail, uint64_t *out, uint32_t max);
/* The Go half (libvptrace-go.so, VPT_SPLIT below), from its constructor
 * before the Go runtime's: its ELF header, whose executable segment is the
 * runtime's code too (allocations made from there are not the program's). */
extern void vpt_go_half_loaded(const void *ehdr);

/* VPT_GOAPI marks the C half's state that the Go half reads (rt_state.c):
 * hidden where both are one link (libvptrace.a), exported by libvptrace.so
 * when the Go half is a library of its own (build.sh builds the C half
 * alone with -DVPT_SPLIT, the Go half with -tags vptgohalf). */
#ifdef VPT_SPLIT
#define VPT_GOAPI __attribute__((visibility("default")))
#else
#define VPT_GOAPI __attribute__((visibility("hidden")))
#endif

/* for exec.c (the exec family, _exit) */
#define VPT_HIDDEN __attribute__((visibility("hidden")))
extern VPT_HIDDEN int vpt_before_exec(const char *prog); /* 1: wrote NOTE EXEC, END(EXEC) */
extern VPT_HIDDEN void vpt_exec_failed(int err);
extern VPT_HIDDEN void vpt_before_exit(void);
extern VPT_HIDDEN const char vpt_exec_linked;            /* exec.c is in the link */
/* crc32c of p[0:n] continuing from crc, like Go's crc32.Update (rt_output.c) */
extern VPT_HIDDEN uint32_t vrt_crc32c(uint32_t crc, const void *p, size_t n);

#ifdef VPT_RT_C
/* ---- shared by the runtime's C files (rt_*.c; rt_state.c says how they
 * work together). Their shared state and functions are hidden and named
 * vpt_* or vrt_*: the archive links into static programs, where a global
 * named like one of the program's would clash. */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define HIDDEN __attribute__((visibility("hidden")))

/* The inline probes' table while a thread has no cache: VPT_CACHE zeros. */
extern HIDDEN const uint64_t vrt_probe_none[VPT_CACHE];

/* atomics and raw system calls (no libc on the batch path) */
#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define LOADA(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define STORER(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define CAS(p, o, n) __atomic_compare_exchange_n((p), (o), (n), 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)
#define XCHG(p, v) __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define FADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)

static inline long sc6(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#define sc3(n, a, b, c) sc6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)

static inline uint32_t sys_gettid(void) { return (uint32_t)sc3(SYS_gettid, 0, 0, 0); }
static inline uint32_t sys_getpid(void) { return (uint32_t)sc3(SYS_getpid, 0, 0, 0); }

static inline uint64_t clock_ns(int clk)
{
	struct timespec ts = {0, 0};
	sc3(SYS_clock_gettime, clk, &ts, 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void futex_wake(uint32_t *addr)
{
	sc6(SYS_futex, (long)addr, FUTEX_WAKE_PRIVATE, INT_MAX, 0, 0, 0);
}

static inline void futex_wait(uint32_t *addr, uint32_t val, int timeout_ms)
{
	struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
	sc6(SYS_futex, (long)addr, FUTEX_WAIT_PRIVATE, val, (long)&ts, 0, 0);
}

/* zero n bytes without calling memset (which may be instrumented) */
static inline void zero_bytes(void *p, size_t n)
{
	__asm__ volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(0) : "memory");
}
static inline void copy_bytes(void *d, const void *s, size_t n)
{
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}
static inline size_t cstrlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

/* configuration and global state (rt_state.c) */
enum { ST_NONE, ST_BUSY, ST_READY, ST_OFF };
enum { MODE_GO = 0, MODE_C = 1 };
#define GO_NONE 0                /* the consumer has not started */
#define GO_RUNNING 1
#define GO_LOCKED 2              /* exit went raw before it started: it must stay out */
#define W_MEM 1u
#define W_OBJ 2u
#define W_BUFS 4u
#define W_BACKLOG 8u
#define W_MAXOBJ 16u
#define W_BLOCKS 32u
#define W_WAIT 128u
#define W_FLUSH 256u
#define W_GOLOAD 512u
#define W_CLOCK 1024u

#ifdef VPT_SPLIT
/* the Go half of libvptrace.so (rt_gohalf.c) */
extern HIDDEN void vrt_go_load(void);           /* load it now (once) */
extern HIDDEN void vrt_go_tick(int interval_end); /* the clock thread: load it when needed */
#endif

/* chunks (rt_output.c) */
#define CH_HEADER 1
#define CH_OBJECT 2
#define CH_THREAD 3
#define CH_THREAD_EXIT 4
#define CH_AGG 5
#define CH_RAW 6
#define CH_NOTE 7
#define CH_END 8
#define CH_STATUS 9
#define CH_BLOCKS 10
#define CH_COUNTS 11
#define CH_DEFLATE 14 /* (CH_ALLOCS, CH_MAPS below) */

#define CHUNK_MAGIC 0x43545056u /* "VPTC" */
#define FILE_MAGIC "VPTRACE\n"
#define FMT_MAJOR 1
#define FMT_MINOR 6 /* (1.4: the Go aggregator writes AGGC in DEFLATE chunks; 1.5: ALLOCS records compact; 1.6: END's lost count) */

static inline void put16(uint8_t *p, uint16_t v) { __builtin_memcpy(p, &v, 2); }
static inline void put32(uint8_t *p, uint32_t v) { __builtin_memcpy(p, &v, 4); }
static inline void put64(uint8_t *p, uint64_t v) { __builtin_memcpy(p, &v, 8); }

/* rt_state.c */
extern HIDDEN __thread struct vpt_thread vpt_t __attribute__((tls_model("initial-exec"), aligned(16)));
extern HIDDEN uint8_t vpt_objdumped[VPT_MAXOBJ];
extern HIDDEN uint32_t vrt_obj_kinds[VPT_MAXOBJ];
extern HIDDEN int vrt_init_state;
extern HIDDEN int vrt_atfork_registered;
extern HIDDEN uint32_t vrt_clock_pid;
extern HIDDEN int vrt_late_done_pid;
extern HIDDEN int vrt_mode;
extern HIDDEN int vrt_go_alive;
extern HIDDEN int vrt_trace_fd;
extern HIDDEN uint32_t vpt_pid, vpt_ppid, vrt_fork_ppid;
extern HIDDEN int vrt_child_open;
extern HIDDEN uint32_t vrt_header_flags;
extern HIDDEN uint64_t vrt_start_mono, vrt_start_unix, vrt_open_ns;
extern HIDDEN int vrt_cfg_interval_ms;
extern HIDDEN int vrt_cfg_clock_us;
extern HIDDEN uint32_t vrt_cfg_buf_cap;
extern HIDDEN size_t vrt_cfg_buf_bytes;
extern HIDDEN uint64_t vrt_cfg_max_bytes;
extern HIDDEN uint32_t vrt_cfg_backlog;
extern HIDDEN int vrt_cfg_backlog_wait_ms;
extern HIDDEN int vrt_cfg_compress;
extern HIDDEN int vrt_cfg_exit_timeout_ms;
extern HIDDEN char vrt_out_pattern[4096];
extern HIDDEN char vrt_out_path[4096];
extern HIDDEN int vrt_out_hasp;
extern HIDDEN int vrt_write_errno;
extern HIDDEN int vrt_trace_regular;
extern HIDDEN uint64_t vrt_status_off;
extern HIDDEN uint32_t vrt_consumer_tid;
extern HIDDEN uint64_t vrt_serial_ctr;
extern HIDDEN uint64_t vrt_mem_bytes;
extern HIDDEN uint64_t vrt_total_drops;
extern HIDDEN uint32_t vrt_warned;
extern HIDDEN uint64_t vrt_free_head;
extern HIDDEN uint32_t vrt_queue_head;
extern HIDDEN uint64_t vrt_handed_events;
extern HIDDEN uint32_t vrt_nqueued;
extern HIDDEN uint32_t vrt_taken_seq, vrt_backlog_waiters, vrt_backlog_stuck;
extern HIDDEN uint32_t vrt_wake_seq, vrt_consumer_sleeping;
extern HIDDEN uint32_t vrt_flush_req, vrt_flush_done_ctr, vrt_final_req;
extern HIDDEN int vrt_final_started, vrt_final_done;

/* rt_output.c */
extern HIDDEN int vrt_write_chunk_fd(int fd, uint16_t type, struct iovec *iov, int n);
/* one chunk as it is, never compressed (iov[0] for the chunk header) */
extern HIDDEN int vrt_write_chunk_plain(int fd, uint16_t type, struct iovec *iov, int n);
extern HIDDEN int vrt_write_chunk(uint16_t type, struct iovec *iov, int n);
extern HIDDEN void vrt_clock_bump(void);
extern HIDDEN void vrt_note_chunk(uint32_t kind, uint32_t tid, uint64_t value, const char *text);
extern HIDDEN void vrt_warn_once(uint32_t bit, uint64_t value, const char *text);
extern HIDDEN void vrt_raw_chunk(uint64_t serial, uint32_t tid, uint32_t flags, uint64_t drops,
		      const struct vpt_event *ev, uint64_t n);
extern HIDDEN void vrt_thread_exit_chunk(uint64_t serial, uint32_t tid, uint64_t texit, uint64_t events,
			      uint64_t drops, const char *name);
extern HIDDEN void vrt_end_chunk(uint32_t flags, uint64_t lost);

/* rt_objects.c */
extern HIDDEN uint32_t vrt_reg_lock;
extern HIDDEN uint32_t vrt_obj_readers;
extern HIDDEN uint32_t vrt_file_gen;
extern HIDDEN void vrt_dump_objects(void);
extern HIDDEN void vrt_epoch_bump(void);
extern HIDDEN void vrt_reset_slots(void);

/* rt_buffers.c */
extern HIDDEN void vrt_free_push(struct vpt_buf *b);
extern HIDDEN struct vpt_buf *vrt_buf_get(struct vpt_thread *t, int force);
extern HIDDEN uint64_t vrt_claim_bump(struct vpt_buf *b);
extern HIDDEN void vrt_wake_consumer(void);
extern HIDDEN int vrt_backlog_wait(void);
extern HIDDEN void vrt_queue_push(struct vpt_buf *b);
extern HIDDEN void vrt_raw_write_own(struct vpt_thread *t, struct vpt_buf *b, uint64_t n, uint32_t flags);
extern HIDDEN void vrt_c_steal_all(int include_queued);

/* rt_init.c */
extern HIDDEN void vrt_utoa(uint64_t v, char *buf);
extern HIDDEN void vrt_expand_path(uint32_t pid);
extern HIDDEN void vrt_errno_text(int e, char *buf, size_t cap);
extern HIDDEN void vrt_say(char *buf, size_t cap, const char *const *parts);
extern HIDDEN int vrt_open_trace(int child);
extern HIDDEN void vrt_write_failed(int err);
extern HIDDEN void vrt_late_init(void);
extern HIDDEN int vrt_core_init(void);
extern HIDDEN int vrt_init_normal(void);

/* rt_fork.c */
extern HIDDEN void vrt_child_fixup(int from_atfork);
extern HIDDEN int vrt_child_open_now(void);
extern HIDDEN void vrt_atfork_child(void);

/* rt_threads.c */
void vpt_full(uint64_t page1, uint64_t site, uint64_t time) HIDDEN;
void vpt_rep_c(uint64_t site, uint64_t rsi, uint64_t rdi, uint64_t count, uint64_t rflags) HIDDEN;
void vpt_range_c(uint64_t site, uint64_t first, uint64_t last) HIDDEN;
void vpt_vec_c(uint64_t site, const uint64_t *regs, const uint8_t *state, uint64_t base) HIDDEN;
void vpt_rep_after_c(uint64_t site, const uint64_t *regs, const uint8_t *state, uint64_t rcx0) HIDDEN;
void vpt_range_dyn_c(uint64_t site, const uint64_t *regs, const uint8_t *state, uint64_t adj) HIDDEN;
int vpt_range_quick(uint64_t site, uint64_t first, uint64_t last) HIDDEN;
int vpt_vec_quick(uint64_t site, const uint8_t *area, uint64_t base) HIDDEN;
int vpt_range_dyn_quick(uint64_t site, const uint64_t *regs, const uint8_t *state, uint64_t adj) HIDDEN;
extern HIDDEN void vrt_thread_key(struct vpt_thread *t);
extern HIDDEN void vrt_thread_chunk(struct vpt_thread *t);
extern HIDDEN void vrt_cache_unmap(struct vpt_thread *t);
extern HIDDEN void vrt_drop(struct vpt_thread *t);
extern HIDDEN int vrt_thread_ident(struct vpt_thread *t);
extern HIDDEN struct vpt_buf *vrt_handoff(struct vpt_thread *t, struct vpt_buf *b, uint64_t n, int exiting);

/* rt_slots.c */
void vpt_slots_c(uint64_t desc, uint64_t tpoff) HIDDEN;
extern HIDDEN void vrt_slots_forget(const struct vpt_object *o);
extern HIDDEN void vrt_key_dtor(void *arg);

/* rt_exit.c */
extern HIDDEN int vrt_flush_now(void);

/* rt_blocks.c */
void vpt_blocks_thread_c(uint64_t desc) HIDDEN;
extern HIDDEN void vrt_blocks_thread_exit(struct vpt_thread *t);
extern HIDDEN void vrt_blocks_snapshot(void);

/* ---- allocation tracking, mappings, thread ranges (rt_alloc.c, rt_maps.c;
 * format 1.3: chunks ALLOCS and MAPS, the THREAD chunk's ranges). The
 * hooks the other rt_*.c files call. */
#define CH_ALLOCS 12
#define CH_MAPS 13
#define MAPS_START 1
#define MAPS_DLOPEN 2
#define MAPS_DLCLOSE 3
#define MAPS_EXIT 4
#define W_ALLOCS 64u
/* rt_alloc.c */
extern HIDDEN void vrt_alloc_file_opened(void);      /* the trace file is open (parent, child) */
extern HIDDEN void vrt_alloc_flush_all(int final);   /* every thread's pending records to the file */
extern HIDDEN void vrt_alloc_thread_exit(void);      /* the calling thread exits (its key destructor) */
extern HIDDEN void vrt_alloc_child(void);            /* a fork child: the records are the parent's */
extern HIDDEN void vrt_alloc_interval(void);         /* the clock thread, every interval */
extern HIDDEN void vrt_alloc_enter(void);            /* the runtime calls libc: its allocations */
extern HIDDEN void vrt_alloc_leave(void);            /* are not the program's */
extern HIDDEN int vrt_alloc_inside(void);            /* this thread is inside an allocator */
extern HIDDEN int vrt_alloc_in_effect(void);         /* the runtime's malloc is the program's */
extern HIDDEN int vrt_alloc_pending(void);           /* records wait in some buffer */
/* rt_maps.c */
extern HIDDEN void vrt_maps_chunk(uint32_t why);     /* a /proc/self/maps snapshot */
extern HIDDEN void vrt_maps_check(void);             /* one if objects were loaded or unloaded */
extern HIDDEN void vrt_maps_child(void);             /* a fork child: no snapshot in progress */
extern HIDDEN uint32_t vrt_thread_ranges(uint64_t *stack_lo, uint64_t *stack_hi, uint64_t *tls, uint32_t cap);
#endif /* VPT_RT_C */
#endif
#endif

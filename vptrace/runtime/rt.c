/*
 * rt.c: the C half of the vptrace runtime (see ../ABI.md, ../FORMAT.md and
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
 */
#define _GNU_SOURCE
#include "rt.h"
#include "vptrace.h"

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
_Static_assert(sizeof(struct vpt_thread) == 128, "vpt_thread");
_Static_assert(sizeof(struct vpt_slothdr) == VPT_SLOTHDR, "vpt_slothdr");
_Static_assert(offsetof(struct vpt_kinds, kind) == VPT_KINDS_HDR, "vpt_kinds");
_Static_assert(sizeof(struct vpt_object) == 48, "vpt_object");
_Static_assert(sizeof(struct vpt_site) == 32, "vpt_site");

/* ------------------------------------------------------------------ */
/* state shared with stubs.S and Go                                    */

HIDDEN struct vpt_hot_s vpt_hot __attribute__((aligned(64))) = {.active = 1};
HIDDEN __thread struct vpt_thread vpt_t __attribute__((tls_model("initial-exec")));

HIDDEN const struct vpt_object *vpt_objs[VPT_MAXOBJ];
HIDDEN uint32_t vpt_nobjs;
static uint8_t vpt_objdumped[VPT_MAXOBJ];
HIDDEN struct vpt_kinds *vpt_kinds[VPT_MAXOBJ];
HIDDEN uint32_t vpt_nkinds;
static uint32_t obj_kinds[VPT_MAXOBJ]; /* per vpt_objs slot: its vpt_kinds index + 1 */
HIDDEN struct vpt_buf *vpt_bufs[VPT_MAXBUFS];
HIDDEN uint32_t vpt_nbufs;

void vpt_full(uint64_t page1, uint64_t site, uint64_t time) HIDDEN;
void vpt_rep_c(uint64_t site, uint64_t rsi, uint64_t rdi, uint64_t count, uint64_t rflags) HIDDEN;
void vpt_range_c(uint64_t site, uint64_t first, uint64_t last) HIDDEN;
void vpt_vec_c(uint64_t site, const uint64_t *regs, const uint8_t *state, uint64_t base) HIDDEN;
void vpt_rep_after_c(uint64_t site, const uint64_t *regs, const uint8_t *state, uint64_t rcx0) HIDDEN;
void vpt_range_dyn_c(uint64_t site, const uint64_t *regs, const uint8_t *state, uint64_t adj) HIDDEN;
int vpt_range_quick(uint64_t site, uint64_t first, uint64_t last) HIDDEN;
int vpt_vec_quick(uint64_t site, const uint8_t *area, uint64_t base) HIDDEN;
int vpt_range_dyn_quick(uint64_t site, const uint64_t *regs, const uint8_t *state, uint64_t adj) HIDDEN;
void vpt_slots_c(uint64_t desc, uint64_t tpoff) HIDDEN;

/* Linking the C part pulls in the Go part (and the Go runtime) through
 * this, and exec.c (the exec family and _exit). */
extern void vptGoAnchor(void);
HIDDEN void (*const vpt_go_anchor)(void) = vptGoAnchor;
HIDDEN const char *const vpt_exec_anchor = &vpt_exec_linked;

/* ------------------------------------------------------------------ */
/* atomics and raw system calls (no libc on the batch path)            */

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

static uint64_t clock_ns(int clk)
{
	struct timespec ts = {0, 0};
	sc3(SYS_clock_gettime, clk, &ts, 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void futex_wake(uint32_t *addr)
{
	sc6(SYS_futex, (long)addr, FUTEX_WAKE_PRIVATE, INT_MAX, 0, 0, 0);
}

static void futex_wait(uint32_t *addr, uint32_t val, int timeout_ms)
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
static size_t cstrlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

/* ------------------------------------------------------------------ */
/* CRC32C (Castagnoli): SSE4.2 crc32 instruction, or a table           */

static int crc_hw = -1;
static uint32_t crc_tab[256];

static void crc_init(void)
{
	unsigned a, b, c, d;
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t v = i;
		for (int k = 0; k < 8; k++)
			v = (v >> 1) ^ (0x82F63B78u & (0u - (v & 1)));
		crc_tab[i] = v;
	}
	int hw = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 20));
	STORE(&crc_hw, hw);
}

/* crc32c of p[0:n] continuing from crc (0 for a fresh one), like Go's crc32.Update */
static uint32_t crc32c(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t c = ~crc & 0xffffffffu;
	if (LOAD(&crc_hw) < 0)
		crc_init();
	if (crc_hw) {
		while (n >= 8) {
			uint64_t v;
			__builtin_memcpy(&v, s, 8);
			__asm__("crc32q %1, %0" : "+r"(c) : "rm"(v));
			s += 8;
			n -= 8;
		}
		while (n > 0) {
			uint32_t c32 = (uint32_t)c;
			__asm__("crc32b %1, %0" : "+r"(c32) : "rm"(*s));
			c = c32;
			s++;
			n--;
		}
	} else {
		uint32_t c32 = (uint32_t)c;
		while (n-- > 0)
			c32 = crc_tab[(c32 ^ *s++) & 0xff] ^ (c32 >> 8);
		c = c32;
	}
	return ~(uint32_t)c;
}

/* ------------------------------------------------------------------ */
/* configuration and global state                                      */

enum { ST_NONE, ST_BUSY, ST_READY, ST_OFF };
enum { MODE_GO = 0, MODE_C = 1 };

static int init_state;          /* ST_* */
static int atfork_registered;
static uint32_t clock_pid;      /* pid whose clock thread runs */
static int late_done_pid;       /* pid for which late init ran */
static int mode;                /* MODE_* */
static int go_alive;             /* GO_* */
#define GO_NONE 0                /* the consumer has not started */
#define GO_RUNNING 1
#define GO_LOCKED 2              /* exit went raw before it started: it must stay out */
static int trace_fd = -1;
static uint32_t vpt_pid, vpt_ppid, fork_ppid;
static int child_open;           /* fork child's file: 0 n/a, 1 to create, 2 creating, 3 done */
static uint32_t header_flags;
static uint64_t start_mono, start_unix, open_ns;

static int cfg_interval_ms = 100;
static int cfg_clock_us = 1000;
static uint32_t cfg_buf_cap;          /* events per buffer */
static size_t cfg_buf_bytes;          /* bytes per buffer (page multiple) */
static uint64_t cfg_max_bytes = 1024ull << 20;
static uint32_t cfg_backlog = 256;    /* queued buffers before writing raw */
static int cfg_exit_timeout_ms = 5000;

static char out_pattern[4096];        /* absolute, with %p */
static char out_path[4096];           /* the file this process writes (see open_trace) */
static int out_hasp;                  /* out_pattern has a %p */

/* write errors (write_failed) */
static int write_errno;               /* the first failed write's errno; 0: none */
static int trace_regular;             /* the trace is a regular file: its STATUS can be rewritten */
static uint64_t status_off;           /* offset of the STATUS chunk in it */
static uint32_t consumer_tid;         /* the Go consumer's thread */

static uint64_t serial_ctr;
static uint64_t mem_bytes;
static uint64_t total_drops;
static uint32_t warned;               /* one-time notes */
#define W_MEM 1u
#define W_OBJ 2u
#define W_BUFS 4u
#define W_BACKLOG 8u
#define W_MAXOBJ 16u

/* consumer protocol */
static uint64_t free_head;            /* tag<<32 | index+1 */
static uint32_t queue_head;           /* index+1 */
static uint32_t nqueued;
static uint32_t wake_seq, consumer_sleeping;
static uint32_t flush_req, flush_done_ctr, final_req;
static int final_started, final_done;

/* ------------------------------------------------------------------ */
/* chunks                                                              */

#define CH_HEADER 1
#define CH_OBJECT 2
#define CH_THREAD 3
#define CH_THREAD_EXIT 4
#define CH_AGG 5
#define CH_RAW 6
#define CH_NOTE 7
#define CH_END 8
#define CH_STATUS 9

#define CHUNK_MAGIC 0x43545056u /* "VPTC" */
#define FILE_MAGIC "VPTRACE\n"
#define FMT_MAJOR 1
#define FMT_MINOR 1

static inline void put16(uint8_t *p, uint16_t v) { __builtin_memcpy(p, &v, 2); }
static inline void put32(uint8_t *p, uint32_t v) { __builtin_memcpy(p, &v, 4); }
static inline void put64(uint8_t *p, uint64_t v) { __builtin_memcpy(p, &v, 8); }

static void write_failed(int err);

/* Write one chunk: iov[0] is filled with the chunk header; iov[1..n) is the payload. */
static int write_chunk_fd(int fd, uint16_t type, struct iovec *iov, int n)
{
	uint8_t hdr[16];
	size_t len = 0, total;
	uint32_t crc;
	if (fd < 0)
		return -1;
	for (int i = 1; i < n; i++)
		len += iov[i].iov_len;
	put32(hdr, CHUNK_MAGIC);
	put16(hdr + 4, type);
	put16(hdr + 6, 0);
	put32(hdr + 8, (uint32_t)len);
	crc = crc32c(0, hdr + 4, 8);
	for (int i = 1; i < n; i++)
		crc = crc32c(crc, iov[i].iov_base, iov[i].iov_len);
	put32(hdr + 12, crc);
	iov[0].iov_base = hdr;
	iov[0].iov_len = 16;
	total = len + 16;
	for (;;) {
		long r = sc3(SYS_writev, fd, iov, n);
		if (r == -EINTR)
			continue;
		if (r <= 0) {
			write_failed(r < 0 ? (int)-r : ENOSPC); /* (0: a device that takes nothing) */
			return -1;
		}
		if ((size_t)r >= total)
			return 0;
		/* short write (disk full?): finish it; the chunk may be damaged */
		total -= (size_t)r;
		while (r > 0) {
			if ((size_t)r >= iov[0].iov_len) {
				r -= (long)iov[0].iov_len;
				iov++;
				n--;
			} else {
				iov[0].iov_base = (char *)iov[0].iov_base + r;
				iov[0].iov_len -= (size_t)r;
				r = 0;
			}
		}
	}
}

static int child_open_now(void);

/* Write a chunk to the trace; in a fork child, the first one creates the
 * child's file (so a child that only execs leaves none). */
static int write_chunk(uint16_t type, struct iovec *iov, int n)
{
	int fd = LOAD(&trace_fd);
	if (fd < 0)
		fd = child_open_now();
	return write_chunk_fd(fd, type, iov, n);
}

uint64_t vpt_now(void)
{
	return clock_ns(CLOCK_MONOTONIC) - start_mono;
}

static void clock_bump(void)
{
	uint64_t now = vpt_now(), old = LOAD(&vpt_hot.clock);
	while (old < now && !CAS(&vpt_hot.clock, &old, now))
		;
}

static void note_chunk(uint32_t kind, uint32_t tid, uint64_t value, const char *text)
{
	uint8_t fix[28];
	struct iovec iov[3];
	size_t tl = text ? cstrlen(text) : 0;
	if (tl > 4096)
		tl = 4096;
	put32(fix, kind);
	put32(fix + 4, tid);
	put64(fix + 8, vpt_now());
	put64(fix + 16, value);
	put32(fix + 24, (uint32_t)tl);
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	iov[2].iov_base = (void *)(text ? text : "");
	iov[2].iov_len = tl;
	write_chunk(CH_NOTE, iov, 3);
}

static void warn_once(uint32_t bit, uint64_t value, const char *text)
{
	if (!(FADD(&warned, 0) & bit) && !(__atomic_fetch_or(&warned, bit, __ATOMIC_SEQ_CST) & bit))
		note_chunk(VPTRACE_NOTE_WARNING, sys_gettid(), value, text);
}

/* RAW chunk: fixed part (48 bytes) then events */
static void raw_chunk(uint64_t serial, uint32_t tid, uint32_t flags, uint64_t drops,
		      const struct vpt_event *ev, uint64_t n)
{
	uint8_t fix[48];
	struct iovec iov[3];
	zero_bytes(fix, sizeof fix);
	put64(fix, serial);
	put32(fix + 8, tid);
	put32(fix + 12, flags);
	put64(fix + 16, drops);
	put64(fix + 24, vpt_now());
	put32(fix + 32, (uint32_t)n);
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	iov[2].iov_base = (void *)ev;
	iov[2].iov_len = n * sizeof(struct vpt_event);
	write_chunk(CH_RAW, iov, 3);
}

static void thread_exit_chunk(uint64_t serial, uint32_t tid, uint64_t texit, uint64_t events,
			      uint64_t drops, const char *name)
{
	uint8_t fix[56];
	struct iovec iov[2];
	zero_bytes(fix, sizeof fix);
	put64(fix, serial);
	put32(fix + 8, tid);
	put64(fix + 16, texit);
	put64(fix + 24, events);
	put64(fix + 32, drops);
	for (int i = 0; i < 15 && name[i]; i++)
		fix[40 + i] = (uint8_t)name[i];
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	write_chunk(CH_THREAD_EXIT, iov, 2);
}

static void end_chunk(uint32_t flags)
{
	uint8_t fix[40];
	struct iovec iov[2];
	uint32_t err = (uint32_t)LOAD(&write_errno);
	zero_bytes(fix, sizeof fix);
	put64(fix, vpt_now());
	put64(fix + 8, LOAD(&serial_ctr));
	put64(fix + 16, 0);
	put64(fix + 24, LOAD(&total_drops));
	put32(fix + 32, flags | (err ? VPTRACE_END_WRITE_ERROR : 0));
	put32(fix + 36, err);
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	write_chunk(CH_END, iov, 2);
}

/* ------------------------------------------------------------------ */
/* objects                                                             */

static int obj_valid(const struct vpt_object *o)
{
	return o->magic == VPT_OBJ_MAGIC && o->version == VPTRACE_ABI_VERSION && o->nsites < VPT_MAX_SITES &&
	       o->nstrs < VPT_MAX_STRS && (o->nstrs == 0 || o->name < o->nstrs);
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
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	iov[2].iov_base = (void *)(uintptr_t)sites;
	iov[2].iov_len = (size_t)o->nsites * sizeof(struct vpt_site);
	iov[3].iov_base = (void *)(uintptr_t)strs;
	iov[3].iov_len = o->nstrs;
	write_chunk_fd(LOAD(&trace_fd), CH_OBJECT, iov, 4);
}

/* Registration. Registrants (vpt_register, vpt_unregister) take reg_lock
 * in turn; code that reads registered descriptors (dump_objects,
 * reset_slots) counts itself in obj_readers without a lock, and
 * vpt_unregister, once the descriptor is out of vpt_objs, waits for the
 * readers to leave: it runs in the object's destructor, and dlclose unmaps
 * the descriptor after it returns. */
static uint32_t reg_lock;
static uint32_t obj_readers;
static uint32_t file_gen = 1; /* moves on with each file (a fork child's) */

static void spin_lock(uint32_t *l)
{
	uint32_t z = 0;
	while (!CAS(l, &z, 1)) {
		z = 0;
		sc3(SYS_sched_yield, 0, 0, 0);
	}
}

static void spin_unlock(uint32_t *l) { STORE(l, 0); }

static void readers_enter(void) { FADD(&obj_readers, 1); }
static void readers_leave(void) { FADD(&obj_readers, -1); }

static void readers_drain(void)
{
	while (LOAD(&obj_readers) != 0)
		sc3(SYS_sched_yield, 0, 0, 0);
}

static void dump_objects(void)
{
	uint32_t n = LOAD(&vpt_nobjs);
	if (LOAD(&trace_fd) < 0)
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
		k = LOAD(&obj_kinds[i]);
		if (k && XCHG(&vpt_kinds[k - 1]->dumped, file_gen) == file_gen)
			continue;
		object_chunk(o);
	}
	readers_leave();
}

/* Zero the calling thread's last-page slots: of objects that publish their
 * TLS offset in vpt_object.reserved (optional, see ABI.md), and the slot
 * arrays of objects of tls: indirect (the thread's list). */
static void reset_slots(void)
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
			zero_bytes((void *)(uintptr_t)(tp + o->reserved), (size_t)o->nsites * 8);
	}
	readers_leave();
	for (struct vpt_slothdr *h = LOAD(&vpt_t.slots); h; h = h->next)
		zero_bytes((uint8_t *)h + VPT_SLOTHDR, (size_t)h->bytes - VPT_SLOTHDR);
}

/* Memory the runtime keeps to the end (the kinds of registered objects):
 * carved from 1 MiB mappings; with reg_lock held. NULL when out of memory. */
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
 * no room. With reg_lock held. */
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
	for (uint32_t i = 0; i < ns; i++)
		k->kind[i] = s[i].kind;
	STORER(&vpt_kinds[n], k);
	STORER(&vpt_nkinds, n + 1);
	return n + 1;
}

/* ------------------------------------------------------------------ */
/* buffers: pool and queue                                              */

static struct vpt_buf *buf_at(uint32_t idx1)
{
	return idx1 ? LOADA(&vpt_bufs[idx1 - 1]) : NULL;
}

static void free_push(struct vpt_buf *b)
{
	uint64_t old = LOAD(&free_head), nw;
	do {
		STORE(&b->next, (uint32_t)old);
		nw = (((old >> 32) + 1) << 32) | (uint64_t)(b->index + 1);
	} while (!CAS(&free_head, &old, nw));
}

static struct vpt_buf *free_pop(void)
{
	uint64_t old = LOAD(&free_head), nw;
	struct vpt_buf *b;
	do {
		b = buf_at((uint32_t)old);
		if (!b)
			return NULL;
		nw = (((old >> 32) + 1) << 32) | (uint64_t)LOAD(&b->next);
	} while (!CAS(&free_head, &old, nw));
	return b;
}

/* Allocate a slab of buffers; returns one, the others go to the pool.
 * Past VPTRACE_MAXMB only a thread that has no buffer at all gets one
 * (force): the limit bounds the buffers waiting for the aggregator. */
static struct vpt_buf *alloc_slab(int force)
{
	int per = 4;
	size_t bytes = cfg_buf_bytes * per;
	struct vpt_buf *first = NULL;
	uint64_t had = FADD(&mem_bytes, bytes);
	char *p;
	if (had + bytes > cfg_max_bytes) {
		FADD(&mem_bytes, -(uint64_t)bytes);
		warn_once(W_MEM, cfg_max_bytes, "buffer memory limit reached (VPTRACE_MAXMB): threads write their own buffers");
		if (!force)
			return NULL;
		per = 1;
		bytes = cfg_buf_bytes;
		FADD(&mem_bytes, bytes);
	}
	p = (char *)sc6(SYS_mmap, 0, (long)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if ((unsigned long)p > -4096ul) {
		FADD(&mem_bytes, -(uint64_t)bytes);
		return NULL;
	}
	for (int k = 0; k < per; k++) {
		struct vpt_buf *b = (struct vpt_buf *)(p + (size_t)k * cfg_buf_bytes);
		uint32_t idx = FADD(&vpt_nbufs, 1);
		if (idx >= VPT_MAXBUFS) {
			FADD(&vpt_nbufs, -1u);
			warn_once(W_BUFS, VPT_MAXBUFS, "buffer table full");
			break;
		}
		b->index = idx;
		b->cap = cfg_buf_cap;
		STORER(&vpt_bufs[idx], b);
		if (!first)
			first = b;
		else
			free_push(b);
	}
	return first;
}

#define VBF_DIRTY 0x100u /* (fork child) stale events from the parent */

static struct vpt_buf *buf_get(struct vpt_thread *t, int force)
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

static uint64_t claim_bump(struct vpt_buf *b)
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
	free_push(b);
}

static void wake_consumer(void)
{
	FADD(&wake_seq, 1);
	if (LOAD(&consumer_sleeping))
		futex_wake(&wake_seq);
}

/* The consumer wakes every interval; waking it costs the producer a
 * futex(2) call (and in a VM an inter-processor interrupt), so only a
 * backlog of WAKE_AT buffers, a thread exit, a flush or the exit wake it. */
#define WAKE_AT 8u

static void queue_push(struct vpt_buf *b)
{
	uint32_t old = LOAD(&queue_head), q;
	STORE(&b->state, VB_QUEUED);
	do {
		STORE(&b->next, old);
	} while (!CAS(&queue_head, &old, b->index + 1));
	q = FADD(&nqueued, 1) + 1;
	if (q == WAKE_AT || (q > WAKE_AT && q % WAKE_AT == 0) || (b->flags & VBF_EXIT))
		wake_consumer();
}

uint32_t vpt_queue_take(void)
{
	uint32_t h = XCHG(&queue_head, 0), prev = 0, n = 0;
	while (h) {
		struct vpt_buf *b = buf_at(h);
		uint32_t next = LOAD(&b->next);
		STORE(&b->state, VB_TAKEN);
		STORE(&b->next, prev);
		prev = h;
		h = next;
		n++;
	}
	if (n)
		FADD(&nqueued, -n);
	return prev;
}

int vpt_consumer_wait(int timeout_ms)
{
	uint32_t s = LOAD(&wake_seq);
	STORE(&consumer_sleeping, 1);
	if (LOAD(&queue_head) || LOAD(&flush_req) != LOAD(&flush_done_ctr) || LOAD(&final_req)) {
		STORE(&consumer_sleeping, 0);
		return 1;
	}
	if (timeout_ms > 0)
		futex_wait(&wake_seq, s, timeout_ms);
	STORE(&consumer_sleeping, 0);
	return LOAD(&queue_head) != 0;
}

/* ------------------------------------------------------------------ */
/* writing a thread's own buffer, stealing others'                       */

/* The owner writes its buffer's events [consumed, n) as a RAW chunk and
 * resets it (zeroed, next generation). */
static void raw_write_own(struct vpt_thread *t, struct vpt_buf *b, uint64_t n, uint32_t flags)
{
	uint64_t old = claim_close(b);
	uint64_t from = (uint32_t)old;
	if (n > b->cap)
		n = b->cap;
	if (from < n)
		raw_chunk(t->serial, t->tid, flags, t->drops, &b->ev[from], n - from);
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
		raw_chunk(b->serial, b->tid, 0, b->drops, copy, k);
	}
}

static void c_steal_all(int include_queued)
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
				thread_exit_chunk(b->serial, b->tid, b->texit, b->events, b->drops, b->name);
		}
	}
}

/* ------------------------------------------------------------------ */
/* initialisation                                                      */

static int env_int(const char *name, int def, int lo, int hi)
{
	const char *s = getenv(name);
	long v = 0;
	int any = 0;
	if (!s)
		return def;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (*s - '0');
		any = 1;
		if (v > hi)
			break;
	}
	if (!any || *s)
		return def;
	return v < lo ? lo : v > hi ? hi : (int)v;
}

static int env_is(const char *name, const char *const *vals)
{
	const char *s = getenv(name);
	if (!s)
		return 0;
	for (; *vals; vals++) {
		const char *a = s, *b = *vals;
		while (*a && *b && ((*a | 0x20) == *b))
			a++, b++;
		if (!*a && !*b)
			return 1;
	}
	return 0;
}

static void append(char *dst, size_t cap, size_t *len, const char *s)
{
	while (*s && *len + 1 < cap)
		dst[(*len)++] = *s++;
	dst[*len] = 0;
}

static void utoa(uint64_t v, char *buf)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (int i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = 0;
}

/* expand %p (pid) and %% of out_pattern into out_path */
static void expand_path(uint32_t pid)
{
	size_t len = 0;
	char num[24];
	utoa(pid, num);
	out_path[0] = 0;
	out_hasp = 0;
	for (const char *p = out_pattern; *p; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			append(out_path, sizeof out_path, &len, num);
			out_hasp = 1;
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			append(out_path, sizeof out_path, &len, "%");
			p++;
		} else {
			char c[2] = {*p, 0};
			append(out_path, sizeof out_path, &len, c);
		}
	}
}

/* The k-th name open_trace tries for out_path P (see vptrace.h): k = 0
 * is P; then, with STEM.EXT = P (EXT ".vpt" or nothing), STEM.PID.EXT
 * (k = 1, when P has no %p), and STEM.N.EXT (with %p) or STEM.PID.N.EXT
 * (without) for N = k >= 2. 0 when k = 1 does not apply. */
static int trace_name(int k, uint32_t pid, char *buf, size_t cap)
{
	size_t len = 0, plen = cstrlen(out_path), stem = plen;
	char num[24];
	if (k == 0) {
		append(buf, cap, &len, out_path);
		return 1;
	}
	if (k == 1 && out_hasp)
		return 0;
	if (plen >= 4 && out_path[plen - 4] == '.' && out_path[plen - 3] == 'v' && out_path[plen - 2] == 'p' && out_path[plen - 1] == 't')
		stem = plen - 4;
	buf[0] = 0;
	for (size_t i = 0; i < stem && len + 1 < cap; i++)
		buf[len++] = out_path[i];
	buf[len] = 0;
	if (!out_hasp) {
		utoa(pid, num);
		append(buf, cap, &len, ".");
		append(buf, cap, &len, num);
	}
	if (k >= 2) {
		utoa((uint64_t)k, num);
		append(buf, cap, &len, ".");
		append(buf, cap, &len, num);
	}
	append(buf, cap, &len, out_path + stem);
	return 1;
}

/* errno's description, for messages: "No space left on device (ENOSPC)" */
static void errno_text(int e, char *buf, size_t cap)
{
	static const struct {
		int e;
		const char *name, *text;
	} tab[] = {
		{ENOSPC, "ENOSPC", "No space left on device"}, {EDQUOT, "EDQUOT", "Disk quota exceeded"},
		{EFBIG, "EFBIG", "File too large"}, {EIO, "EIO", "Input/output error"},
		{EPIPE, "EPIPE", "Broken pipe"}, {EBADF, "EBADF", "Bad file descriptor"},
		{EROFS, "EROFS", "Read-only file system"}, {EACCES, "EACCES", "Permission denied"},
		{EPERM, "EPERM", "Operation not permitted"}, {ENOENT, "ENOENT", "No such file or directory"},
		{ENOTDIR, "ENOTDIR", "Not a directory"}, {EISDIR, "EISDIR", "Is a directory"},
		{ENAMETOOLONG, "ENAMETOOLONG", "File name too long"}, {ELOOP, "ELOOP", "Too many levels of symbolic links"},
		{EMFILE, "EMFILE", "Too many open files"}, {ENFILE, "ENFILE", "Too many open files in system"},
		{ENXIO, "ENXIO", "No such device or address"}, {EEXIST, "EEXIST", "File exists"},
		{EINVAL, "EINVAL", "Invalid argument"}, {EAGAIN, "EAGAIN", "Resource temporarily unavailable"},
	};
	size_t len = 0;
	char num[24];
	buf[0] = 0;
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
		if (tab[i].e == e) {
			append(buf, cap, &len, tab[i].text);
			append(buf, cap, &len, " (");
			append(buf, cap, &len, tab[i].name);
			append(buf, cap, &len, ")");
			return;
		}
	}
	utoa((uint64_t)e, num);
	append(buf, cap, &len, "errno ");
	append(buf, cap, &len, num);
}

/* The strings of parts (NULL-ended) joined in buf; returns the length. */
static size_t join(char *buf, size_t cap, const char *const *parts)
{
	size_t len = 0;
	buf[0] = 0;
	for (; *parts; parts++)
		append(buf, cap, &len, *parts);
	return len;
}

/* One line to stderr, in one write, assembled in buf. Callers run once (a
 * once-flag, or initialisation), so a static buf is theirs. */
static void say(char *buf, size_t cap, const char *const *parts)
{
	sc3(SYS_write, 2, buf, join(buf, cap, parts));
}

static size_t read_file(const char *path, char *buf, size_t cap)
{
	size_t n = 0;
	long fd = sc3(SYS_open, path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	while (n < cap) {
		long r = sc3(SYS_read, fd, buf + n, cap - n);
		if (r == -EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	sc3(SYS_close, fd, 0, 0);
	return n;
}

static uint8_t hdrbuf[16384];

/* A STATUS chunk (32 bytes) at b: the file's write status. */
static void status_chunk(uint8_t *b, uint32_t flags, uint32_t err)
{
	put32(b, CHUNK_MAGIC);
	put16(b + 4, CH_STATUS);
	put16(b + 6, 0);
	put32(b + 8, 16);
	put32(b + 16, flags);
	put32(b + 20, err);
	put64(b + 24, vpt_now());
	put32(b + 12, crc32c(crc32c(0, b + 4, 8), b + 16, 16));
}

static char asked_path[4096]; /* out_path before create_trace moved it */

/* Create the directories of path that do not exist (mode 0777 less the
 * umask, as mkdir -p), so that VPTRACE_OUT=dir/%p.vpt works for a test
 * suite's first process; what cannot be made is found out by the open. */
static void make_parents(const char *path)
{
	static char dir[4096];
	struct stat st;
	size_t n = cstrlen(path);
	while (n > 0 && path[n - 1] != '/')
		n--;
	if (n <= 1 || n >= sizeof dir)
		return;
	copy_bytes(dir, path, n - 1);
	dir[n - 1] = 0;
	if (sc3(SYS_stat, dir, &st, 0) == 0)
		return;
	for (size_t i = 1; i < n; i++) {
		if (dir[i] != '/' && dir[i] != 0)
			continue;
		char c = dir[i];
		dir[i] = 0;
		sc3(SYS_mkdir, dir, 0777, 0);
		dir[i] = c;
	}
}

/* Create the trace file, never opening an existing one: it holds another
 * process image's trace (the same pid before an exec, a sibling sharing
 * VPTRACE_OUT, an earlier run), which truncating or appending to would
 * destroy or mix. O_CREAT|O_EXCL, trying the names of trace_name in turn;
 * out_path becomes the one created, and a name other than the first
 * (taken) is said once on stderr. An existing path that is not a regular
 * file (/dev/null, a fifo) is written into: there is nothing there to
 * overwrite. A fork child takes a device its parent writes to, not a fifo
 * (one process per stream). Returns the fd, or -errno. */
static long create_trace(int child)
{
	static char try[4096], msg[8400];
	struct stat st;
	int first = child && !out_hasp ? 1 : 0;
	long fd;
	make_parents(out_path);
	if (sc3(SYS_stat, out_path, &st, 0) == 0 && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (!first || S_ISCHR(st.st_mode))
			return sc3(SYS_open, out_path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY, 0);
	}
	for (int k = first; k < 1000; k++) {
		if (!trace_name(k, vpt_pid, try, sizeof try))
			continue;
		fd = sc3(SYS_open, try, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
		if (fd == -EEXIST)
			continue;
		if (fd >= 0 && k > first) {
			const char *m[] = {"vptrace: ", asked_path, " exists; writing this trace to ", try, "\n", NULL};
			trace_name(first, vpt_pid, asked_path, sizeof asked_path);
			say(msg, sizeof msg, m);
		}
		copy_bytes(out_path, try, cstrlen(try) + 1); /* (what a message names) */
		return fd;
	}
	return -EEXIST;
}

/* Create out_path (create_trace) and write the file magic, the HEADER
 * and the STATUS chunk (write_failed rewrites it in place). A file whose
 * header could not be written is removed: tracing is off. */
static int open_trace(int child)
{
	static char cmdline[4096], exe[1024], msg[8400], why[128];
	size_t ncmd, nexe = 0, prog = 0, off, sent = 0;
	const char *ver = "vptrace-runtime 1";
	long fd, r;
	struct iovec iov[2];
	struct stat st;
	uint8_t *h = hdrbuf;

	asked_path[0] = 0;
	fd = create_trace(child);
	if (fd < 0) {
		const char *m[] = {"vptrace: cannot create trace file ", out_path, ": ", why, "; tracing is off (set VPTRACE_OUT)\n", NULL};
		errno_text((int)-fd, why, sizeof why);
		say(msg, sizeof msg, m);
		return -1;
	}
	trace_regular = sc3(SYS_fstat, fd, &st, 0) == 0 && S_ISREG(st.st_mode);
	ncmd = read_file("/proc/self/cmdline", cmdline, sizeof cmdline);
	r = sc3(SYS_readlink, "/proc/self/exe", exe, sizeof exe);
	if (r > 0)
		nexe = (size_t)r;
	while (prog < ncmd && cmdline[prog])
		prog++;
	zero_bytes(h, 64);
	copy_bytes(h, FILE_MAGIC, 8);
	/* chunk header at 8, payload at 24 */
	off = 24;
	put16(h + off, FMT_MAJOR);
	put16(h + off + 2, FMT_MINOR);
	put32(h + off + 4, 4096);
	put32(h + off + 8, vpt_pid);
	put32(h + off + 12, vpt_ppid);
	put32(h + off + 16, header_flags);
	put32(h + off + 20, (uint32_t)cfg_clock_us * 1000u);
	put64(h + off + 24, start_unix);
	put64(h + off + 32, start_mono);
	put64(h + off + 40, open_ns);
	put32(h + off + 48, cfg_buf_cap);
	put32(h + off + 52, (uint32_t)cfg_interval_ms);
	off += 56;
#define PUTSTR(s, n)                                \
	do {                                        \
		put32(h + off, (uint32_t)(n));      \
		copy_bytes(h + off + 4, (s), (n));  \
		off += 4 + (n);                     \
	} while (0)
	PUTSTR(cmdline, prog);
	PUTSTR(exe, nexe);
	PUTSTR(cmdline, ncmd);
	PUTSTR(ver, cstrlen(ver));
#undef PUTSTR
	put32(h + 8, CHUNK_MAGIC);
	put16(h + 12, CH_HEADER);
	put16(h + 14, 0);
	put32(h + 16, (uint32_t)(off - 24));
	put32(h + 20, crc32c(crc32c(0, h + 12, 8), h + 24, off - 24));
	status_off = off;
	status_chunk(h + off, 0, 0);
	off += 32;
	while (sent < off) {
		iov[0].iov_base = h + sent;
		iov[0].iov_len = off - sent;
		r = sc3(SYS_writev, fd, iov, 1);
		if (r == -EINTR)
			continue;
		if (r <= 0)
			break;
		sent += (size_t)r;
	}
	if (sent < off) {
		const char *m[] = {"vptrace: cannot write trace file ", out_path, ": ", why, "; tracing is off\n", NULL};
		errno_text(r < 0 ? (int)-r : ENOSPC, why, sizeof why);
		say(msg, sizeof msg, m);
		if (trace_regular)
			sc3(SYS_unlink, out_path, 0, 0); /* ours (O_EXCL), and of no use */
		sc3(SYS_close, fd, 0, 0);
		return -1;
	}
	STORE(&trace_fd, (int)fd);
	if (asked_path[0]) {
		const char *m[] = {asked_path, " exists: this trace is written to ", out_path, NULL};
		join(msg, sizeof msg, m);
		note_chunk(VPTRACE_NOTE_WARNING, sys_gettid(), 0, msg);
	}
	return 0;
}

/* A write to the trace failed (err: errno): the trace is incomplete. Said
 * once, on stderr (the only place sure to be seen) and in the file: its
 * STATUS chunk is rewritten in place, through a descriptor without
 * O_APPEND (pwrite on an O_APPEND one appends), which needs no new space
 * on a full file system. The END chunk carries it too, if one can still
 * be written. Async-signal-safe (raw system calls, once). */
static void write_failed(int err)
{
	static char msg[8400], why[128], proc[64];
	const char *m[] = {"vptrace: cannot write trace file ", out_path, ": ", why, "; the trace is incomplete\n", NULL};
	uint8_t st[32];
	struct stat a, b;
	size_t len = 0;
	char num[24];
	long fd;
	int none = 0;
	if (err <= 0 || !CAS(&write_errno, &none, err))
		return;
	errno_text(err, why, sizeof why);
	say(msg, sizeof msg, m);
	if (!trace_regular)
		return;
	utoa((uint64_t)LOAD(&trace_fd), num);
	append(proc, sizeof proc, &len, "/proc/self/fd/");
	append(proc, sizeof proc, &len, num);
	fd = sc3(SYS_open, proc, O_WRONLY | O_CLOEXEC, 0);
	if (fd < 0) {
		/* no /proc: the path, if it still is our file */
		fd = sc3(SYS_open, out_path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0);
		if (fd >= 0 && (sc3(SYS_fstat, fd, &a, 0) != 0 || sc3(SYS_fstat, LOAD(&trace_fd), &b, 0) != 0 ||
				a.st_dev != b.st_dev || a.st_ino != b.st_ino)) {
			sc3(SYS_close, fd, 0, 0);
			fd = -1;
		}
	}
	if (fd < 0)
		return;
	status_chunk(st, VPTRACE_STATUS_WRITE_ERROR, (uint32_t)err);
	sc6(SYS_pwrite64, fd, (long)st, sizeof st, (long)status_off, 0, 0);
	sc3(SYS_close, fd, 0, 0);
}

/* for the Go consumer: its writes failed */
void vpt_write_failed(int err)
{
	write_failed(err);
}

int vpt_write_errno(void)
{
	return LOAD(&write_errno);
}

static void read_config(void)
{
	static const char *const off[] = {"off", "0", "no", "false", "disable", "disabled", NULL};
	static const char *const stopped[] = {"stopped", "stop", "0", "no", "off", NULL};
	static const char *const yes[] = {"1", "yes", "true", "on", NULL};
	const char *out = getenv("VPTRACE_OUT");
	size_t len = 0;
	int kb;

	if (env_is("VPTRACE", off)) {
		STORE(&vpt_hot.active, 0);
		STORE(&init_state, ST_OFF);
		return;
	}
	cfg_interval_ms = env_int("VPTRACE_INTERVAL_MS", 100, 1, 3600000);
	cfg_clock_us = env_int("VPTRACE_CLOCK_US", 1000, 0, 1000000);
	kb = env_int("VPTRACE_BUFKB", 64, 4, 65536);
	cfg_buf_bytes = ((size_t)kb * 1024 + 4095) & ~(size_t)4095;
	cfg_buf_cap = (uint32_t)((cfg_buf_bytes - VPT_BUF_HDR) / VPT_EV_SIZE);
	cfg_max_bytes = (uint64_t)env_int("VPTRACE_MAXMB", 1024, 1, 1 << 20) << 20;
	cfg_backlog = (uint32_t)env_int("VPTRACE_BACKLOG", 256, 1, 1 << 20);
	cfg_exit_timeout_ms = env_int("VPTRACE_EXIT_TIMEOUT_MS", 5000, 0, 600000);
	if (env_is("VPTRACE_RAW", yes)) {
		mode = MODE_C;
		header_flags |= VPTRACE_HDR_RAW;
	}
	if (env_is("VPTRACE_START", stopped)) {
		STORE(&vpt_hot.active, 0);
		header_flags |= VPTRACE_HDR_STOPPED;
	}
	if (!out || !*out)
		out = "vptrace.%p.vpt";
	if (out[0] != '/') {
		static char cwd[2048];
		long r = sc3(SYS_getcwd, cwd, sizeof cwd, 0);
		if (r > 0) {
			append(out_pattern, sizeof out_pattern, &len, cwd);
			if (len && out_pattern[len - 1] != '/')
				append(out_pattern, sizeof out_pattern, &len, "/");
		}
	}
	append(out_pattern, sizeof out_pattern, &len, out);
}

static void *clock_main(void *arg);
static void thread_chunk(struct vpt_thread *t);
static void atfork_child(void);

/* Parts of the initialisation that are not async-signal-safe: run from
 * normal contexts (vpt_register, the C API, the Go consumer, fork child). */
static void late_init(void)
{
	static int atfork_done;
	int pid = (int)LOAD(&vpt_pid);
	if (LOAD(&init_state) != ST_READY || LOAD(&late_done_pid) == pid)
		return;
	if (vpt_t.flags & VTF_INBATCH)
		return;
	STORE(&late_done_pid, pid);
	if (!XCHG(&atfork_done, 1) && pthread_atfork(NULL, NULL, atfork_child) == 0)
		STORE(&atfork_registered, 1);
	if (cfg_clock_us > 0) {
		pthread_t th;
		pthread_attr_t a;
		sigset_t all, old;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&a, 64 * 1024);
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		if (pthread_create(&th, &a, clock_main, NULL) == 0)
			STORE(&clock_pid, (uint32_t)pid);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&a);
	}
}

/* Core initialisation: configuration, trace file. Async-signal-safe enough
 * (getenv, raw system calls). Returns the state. */
static int core_init(void)
{
	int st = LOAD(&init_state), exp = ST_NONE;
	if (st == ST_READY || st == ST_OFF)
		return st;
	if (!CAS(&init_state, &exp, ST_BUSY)) {
		/* another thread initialises; wait unless it is us (re-entered) */
		if (vpt_t.flags & VTF_INIT)
			return ST_BUSY;
		while ((st = LOAD(&init_state)) == ST_BUSY)
			sc3(SYS_sched_yield, 0, 0, 0);
		return st;
	}
	vpt_t.flags |= VTF_INIT;
	start_mono = clock_ns(CLOCK_MONOTONIC);
	start_unix = clock_ns(CLOCK_REALTIME);
	vpt_pid = sys_getpid();
	vpt_ppid = (uint32_t)sc3(SYS_getppid, 0, 0, 0);
	read_config();
	if (LOAD(&init_state) == ST_OFF) {
		vpt_t.flags &= ~VTF_INIT;
		return ST_OFF;
	}
	expand_path(vpt_pid);
	if (open_trace(0) < 0) {
		STORE(&vpt_hot.active, 0);
		STORE(&init_state, ST_OFF);
		vpt_t.flags &= ~VTF_INIT;
		return ST_OFF;
	}
	STORE(&init_state, ST_READY);
	dump_objects();
	vpt_t.flags &= ~VTF_INIT;
	return ST_READY;
}

static int init_normal(void)
{
	int st = core_init();
	if (st == ST_READY)
		late_init();
	return st;
}

/* The clock thread: moves vpt_hot.clock on every tick, and the cache
 * epoch every VPTRACE_INTERVAL_MS, so that the recent-page caches and
 * range memos forget: a page a thread keeps using is recorded again in
 * every interval (its streamed aggregates, and heatmaps, show it over
 * time), not only the first time. */
static void *clock_main(void *arg)
{
	uint32_t pid = LOAD(&vpt_pid);
	uint64_t interval = (uint64_t)cfg_interval_ms * 1000000ull, next = LOAD(&vpt_hot.clock) + interval;
	(void)arg;
	vpt_t.flags |= VTF_RUNTIME | VTF_INBATCH;
	sc6(SYS_prctl, PR_SET_NAME, (long)"vptrace-clock", 0, 0, 0, 0);
	for (;;) {
		struct timespec ts = {cfg_clock_us / 1000000, (long)(cfg_clock_us % 1000000) * 1000L};
		sc3(SYS_nanosleep, &ts, 0, 0);
		if (LOAD(&vpt_pid) != pid)
			return NULL; /* (never: a fork child has no copy of this thread) */
		clock_bump();
		if (LOAD(&vpt_hot.clock) >= next) {
			FADD(&vpt_hot.epoch, 1ull << 40);
			next = LOAD(&vpt_hot.clock) + interval;
		}
	}
}

/* ------------------------------------------------------------------ */
/* fork                                                                */

static void child_fixup(int from_atfork)
{
	struct vpt_thread *t = &vpt_t;
	uint32_t n = LOAD(&vpt_nbufs);
	int oldfd = LOAD(&trace_fd);
	uint32_t ppid = vpt_pid;

	vpt_pid = sys_getpid();
	vpt_ppid = ppid;
	STORE(&mode, MODE_C);
	header_flags |= VPTRACE_HDR_FORKED;
	STORE(&trace_fd, -1);
	if (oldfd >= 0)
		sc3(SYS_close, oldfd, 0, 0);
	/* every buffer back to the pool: their events are the parent's */
	STORE(&free_head, 0);
	STORE(&queue_head, 0);
	STORE(&nqueued, 0);
	if (n > VPT_MAXBUFS)
		n = VPT_MAXBUFS;
	for (uint32_t i = n; i-- > 0;) {
		struct vpt_buf *b = LOADA(&vpt_bufs[i]);
		if (!b)
			continue;
		claim_bump(b);
		b->flags = VBF_DIRTY;
		STORE(&b->state, VB_FREE);
		free_push(b);
	}
	t->buf = NULL;
	t->cur = t->end = 0;
	t->events = 0;
	t->drops = 0;
	t->flags &= ~VTF_SETUP; /* next event: new serial, tid, THREAD chunk */
	STORE(&final_started, 0);
	STORE(&final_done, 0);
	STORE(&final_req, 0);
	STORE(&flush_req, 0);
	STORE(&flush_done_ctr, 0);
	STORE(&go_alive, GO_LOCKED); /* no Go in a fork child */
	for (uint32_t i = 0; i < VPT_MAXOBJ; i++)
		if (vpt_objdumped[i])
			vpt_objdumped[i] = 0;
	/* (held by threads the child does not have) */
	STORE(&reg_lock, 0);
	STORE(&obj_readers, 0);
	FADD(&file_gen, 1); /* the child's file has no OBJECT chunk yet */
	open_ns = vpt_now();
	STORE(&write_errno, 0); /* (the parent's file's) */
	trace_regular = 0;
	expand_path(vpt_pid);
	fork_ppid = ppid;
	STORE(&child_open, 1); /* created by the first chunk the child writes */
	reset_slots();
	/* The forking thread's recent-page cache holds pages the parent's
	 * trace recorded: a new epoch, so that the child's trace records them. */
	FADD(&vpt_hot.epoch, 1ull << 40);
	if (from_atfork)
		late_init();
}

/* Create a fork child's trace file (see write_chunk). Returns its fd, or -1. */
static int child_open_now(void)
{
	int st = 1;
	if (CAS(&child_open, &st, 2)) {
		vpt_t.flags |= VTF_INIT;
		if (open_trace(1) == 0) {
			dump_objects();
			note_chunk(VPTRACE_NOTE_FORK, sys_gettid(), fork_ppid, "fork child");
		} else {
			STORE(&vpt_hot.active, 0);
			STORE(&init_state, ST_OFF);
		}
		STORE(&child_open, 3);
		vpt_t.flags &= ~VTF_INIT;
	} else if (st == 2) {
		if (vpt_t.flags & VTF_INIT)
			return -1; /* re-entered while opening: this chunk is lost */
		while (LOAD(&child_open) == 2)
			sc3(SYS_sched_yield, 0, 0, 0);
	}
	return LOAD(&trace_fd);
}

static void atfork_child(void)
{
	if (LOAD(&init_state) == ST_READY && sys_getpid() != vpt_pid)
		child_fixup(1);
}

/* ------------------------------------------------------------------ */
/* threads                                                             */

static pthread_key_t vpt_key;
static int key_state; /* 0 none, 1 creating, 2 ok, 3 failed */

static void key_dtor(void *arg);

static void thread_key(struct vpt_thread *t)
{
	int st = LOAD(&key_state), exp = 0;
	if (st == 0 && CAS(&key_state, &exp, 1))
		STORE(&key_state, st = pthread_key_create(&vpt_key, key_dtor) == 0 ? 2 : 3);
	/* Another thread is creating the key: wait for it (a thread that gave
	 * up here had no destructor, so its exit was never recorded; the
	 * creator is never this thread, which VTF_INBATCH keeps out). */
	while ((st = LOAD(&key_state)) == 1)
		sc3(SYS_sched_yield, 0, 0, 0);
	if (st == 2 && pthread_setspecific(vpt_key, (void *)1) == 0)
		t->flags |= VTF_KEYED;
}

static void thread_chunk(struct vpt_thread *t)
{
	uint8_t fix[40];
	struct iovec iov[2];
	zero_bytes(fix, sizeof fix);
	put64(fix, t->serial);
	put32(fix + 8, t->tid);
	put64(fix + 16, t->tstart);
	copy_bytes(fix + 24, t->name, 15);
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	write_chunk(CH_THREAD, iov, 2);
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
	return c + 2 * ((*key * 0x9e3779b97f4a7c15ull) >> VPT_CACHE_SHIFT);
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
	STORE(&t->cache, (uint64_t *)p);
}

static void cache_unmap(struct vpt_thread *t)
{
	uint64_t *c = XCHG(&t->cache, NULL);
	if (c)
		sc3(SYS_munmap, (long)c, CACHE_BYTES, 0);
}

static void thread_setup(struct vpt_thread *t)
{
	t->tid = sys_gettid();
	t->serial = FADD(&serial_ctr, 1) + 1;
	t->tstart = LOAD(&vpt_hot.clock);
	zero_bytes(t->name, sizeof t->name);
	sc6(SYS_prctl, PR_GET_NAME, (long)t->name, 0, 0, 0, 0);
	t->name[15] = 0;
	t->flags |= VTF_SETUP;
	thread_chunk(t);
}

static void drop_n(struct vpt_thread *t, uint64_t n, int hdr)
{
	t->drops += n;
	FADD(&total_drops, n);
	if (hdr && t->buf)
		t->buf->drops = t->drops; /* readers of a running buffer see it */
}

/* (inside the batch path of an interrupted outer one, t->buf may be stale) */
static void drop(struct vpt_thread *t)
{
	drop_n(t, 1, !(t->flags & VTF_INBATCH));
}

/* Hand a thread's buffer with n events over; returns the buffer to
 * continue in (fresh, or the same one written out and reset), or NULL. */
static struct vpt_buf *handoff(struct vpt_thread *t, struct vpt_buf *b, uint64_t n, int exiting)
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
	if (LOAD(&mode) == MODE_GO && !LOAD(&final_done)) {
		if (LOAD(&nqueued) < cfg_backlog) {
			struct vpt_buf *nb = exiting ? NULL : buf_get(t, 0);
			if (exiting || nb) {
				queue_push(b);
				return nb;
			}
		} else if (LOAD(&go_alive) == GO_RUNNING) {
			warn_once(W_BACKLOG, cfg_backlog, "consumer behind (VPTRACE_BACKLOG): threads write their own buffers");
		}
	}
	raw_write_own(t, b, n, exiting ? VBF_EXIT : 0);
	if (exiting) {
		thread_exit_chunk(t->serial, t->tid, b->texit, t->events, t->drops, b->name);
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
	raw_chunk(t->serial, t->tid, 0, t->drops, &e, 1);
}

/* With VTF_INBATCH set: what the thread needs before it records (runtime
 * initialised, tid/serial, TLS destructor). Returns ST_*. */
static int thread_ready(struct vpt_thread *t)
{
	int st = core_init();
	if (st != ST_READY)
		return st;
	/* a fork child: the atfork handler resets the runtime; without it
	 * (fork before late_init, raw clone) getpid tells */
	if (!LOAD(&atfork_registered) && sys_getpid() != vpt_pid)
		child_fixup(0);
	if ((st = LOAD(&init_state)) != ST_READY)
		return st;
	if (LOAD(&clock_pid) != vpt_pid)
		clock_bump(); /* no clock thread (yet, or VPTRACE_CLOCK_US=0) */
	if (!(t->flags & VTF_SETUP))
		thread_setup(t);
	if (t->flags & VTF_EXITED)
		t->flags &= ~(VTF_EXITED | VTF_KEYED); /* (no cache again: nothing would unmap it) */
	else if (!t->cache)
		cache_map(t);
	if (!(t->flags & VTF_KEYED))
		thread_key(t);
	return ST_READY;
}

/* after the exit flush: events are written one by one */
static int write_through_mode(struct vpt_thread *t)
{
	return (t->flags & VTF_FINAL) || (LOAD(&final_done) && !t->buf);
}

/* With VTF_INBATCH set, thread_ready: hand the full buffer over, or get the
 * thread's first. Returns the buffer to continue in, or NULL. */
static struct vpt_buf *refill(struct vpt_thread *t)
{
	struct vpt_buf *b = t->buf;
	b = b ? handoff(t, b, b->cap, 0) : buf_get(t, 1);
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
			drop(t);
		t->depth--;
		return;
	}
	if (t->depth > 1) {
		/* a signal handler interrupted a stub that may hold a reserved,
		 * unwritten slot: the buffer cannot change hands now */
		t->cur -= VPT_EV_SIZE;
		drop(t);
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
		drop(t);
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
static void slots_filter(struct vpt_thread *t, int (*drop)(uint64_t tp, const struct vpt_slothdr *h, const void *arg), const void *arg)
{
	uint64_t tp = thread_pointer();
	struct vpt_slothdr *h = XCHG(&t->slots, NULL), *next;
	for (; h; h = next) {
		next = h->next;
		if (!drop(tp, h, arg)) {
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
static void slots_forget(const struct vpt_object *o)
{
	slots_filter(&vpt_t, slots_of, o);
}

static void fatal(const char *const *parts)
{
	static char msg[512];
	say(msg, sizeof msg, parts);
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
	long m;
	if (LOAD(word))
		return; /* (a signal handler's call mapped it) */
	if (o->magic != VPT_OBJ_MAGIC || o->nsites >= VPT_MAX_SITES) {
		const char *msg[] = {"vptrace: a bad object descriptor asks for TLS slots; aborting\n", NULL};
		fatal(msg);
	}
	slots_filter(t, slots_stale, NULL);
	bytes = ((size_t)VPT_SLOTHDR + 8 * (size_t)(o->nsites ? o->nsites : 1) + 4095) & ~(size_t)4095;
	m = sc6(SYS_mmap, 0, (long)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m < 0 && m > -4096) {
		char why[128], size[24];
		const char *msg[] = {"vptrace: cannot map ", size, " bytes of TLS slots: ", why, "; aborting\n", NULL};
		utoa(bytes, size);
		errno_text((int)-m, why, sizeof why);
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
		thread_key(t);
		t->flags &= ~VTF_INBATCH;
	}
}

/* pthread key destructor: the thread exits */
static void key_dtor(void *arg)
{
	struct vpt_thread *t = &vpt_t;
	struct vpt_buf *b = t->buf;
	(void)arg;
	if (t->flags & (VTF_INBATCH | VTF_RUNTIME))
		return;
	t->flags |= VTF_INBATCH;
	t->end = 0;
	if (LOAD(&init_state) == ST_READY) {
		if (sys_getpid() != vpt_pid)
			child_fixup(0);
		b = t->buf;
		if (b) {
			uint64_t n = (t->cur - (uint64_t)(uintptr_t)b->ev) / VPT_EV_SIZE;
			handoff(t, b, n, 1);
		} else if (t->flags & VTF_SETUP) {
			char name[16];
			zero_bytes(name, sizeof name);
			sc6(SYS_prctl, PR_GET_NAME, (long)name, 0, 0, 0, 0);
			name[15] = 0;
			thread_exit_chunk(t->serial, t->tid, LOAD(&vpt_hot.clock), t->events, t->drops, name);
		}
	}
	t->buf = NULL;
	t->cur = t->end = 0;
	cache_unmap(t);
	/* (instrumented code in later destructors maps an array again, and
	 * keys the thread again for another round of destructors) */
	slots_filter(t, slots_all, NULL);
	t->flags = (t->flags | VTF_EXITED) & ~(VTF_INBATCH | VTF_KEYED);
}

/* ------------------------------------------------------------------ */
/* flush, exit                                                         */

static int wait_done(uint32_t ticket, int timeout_ms)
{
	uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		uint32_t d = LOAD(&flush_done_ctr);
		uint64_t now;
		if ((int32_t)(d - ticket) >= 0)
			return 1;
		now = clock_ns(CLOCK_MONOTONIC);
		if (now >= deadline)
			return 0;
		futex_wait(&flush_done_ctr, d, (int)((deadline - now) / 1000000ull) + 1);
	}
}

uint64_t vpt_flush_requested(void) { return LOAD(&flush_req); }
uint64_t vpt_final_requested(void) { return LOAD(&final_req); }

void vpt_flush_done(uint64_t ticket, int final)
{
	uint32_t d = LOAD(&flush_done_ctr);
	while ((int32_t)((uint32_t)ticket - d) > 0 && !CAS(&flush_done_ctr, &d, (uint32_t)ticket))
		;
	if (final)
		STORE(&final_req, 0);
	futex_wake(&flush_done_ctr);
}

static int go_request(int final, int timeout_ms)
{
	uint32_t ticket = FADD(&flush_req, 1) + 1;
	if (final)
		STORE(&final_req, ticket);
	wake_consumer();
	return wait_done(ticket, timeout_ms);
}

/* Whether this thread is the Go consumer's (a signal handler that
 * interrupted it): it cannot wait for itself. */
static int on_consumer(void)
{
	return LOAD(&consumer_tid) == sys_gettid();
}

static void finalize(void)
{
	struct vpt_thread *t = &vpt_t;
	uint32_t saved;
	int ok = 0;
	if (LOAD(&init_state) != ST_READY || XCHG(&final_started, 1))
		return;
	saved = t->flags;
	t->flags |= VTF_INBATCH;
	if (sys_getpid() != vpt_pid)
		child_fixup(0);
	if (LOAD(&mode) == MODE_GO) {
		int gs = GO_NONE;
		/* lock a consumer that has not started yet out for good, or
		 * ask the running one */
		if (!CAS(&go_alive, &gs, GO_LOCKED) && gs == GO_RUNNING && !on_consumer())
			ok = go_request(1, cfg_exit_timeout_ms);
	}
	if (!ok) {
		/* the aggregator is not running (C only, or a short program
		 * that ends before it started) or did not answer in time */
		int timedout = LOAD(&mode) == MODE_GO && LOAD(&go_alive) == GO_RUNNING;
		c_steal_all(1);
		if (LOAD(&trace_fd) >= 0) /* (a fork child with no events has no file) */
			end_chunk(VPTRACE_END_CLEAN | (timedout ? VPTRACE_END_FALLBACK : 0));
	}
	STORE(&final_done, 1);
	STORE(&mode, MODE_C);
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
 * answer in time) by this thread, raw. With VTF_INBATCH clear. */
static void flush_now(void)
{
	struct vpt_thread *t = &vpt_t;
	int ok = 0;
	if (LOAD(&mode) == MODE_GO && LOAD(&go_alive) == GO_RUNNING && !LOAD(&final_done) && !on_consumer())
		ok = go_request(0, cfg_exit_timeout_ms);
	if (!ok) {
		t->flags |= VTF_INBATCH;
		c_steal_all(1);
		t->flags &= ~VTF_INBATCH;
	}
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
	return LOAD(&init_state) == ST_READY && sys_getpid() == LOAD(&vpt_pid) &&
	       !(vpt_t.flags & (VTF_INBATCH | VTF_RUNTIME)) && !LOAD(&final_started);
}

/* Before an exec replaces the image: everything recorded so far to the
 * file (the exec closes it and ends the other threads), then a NOTE EXEC
 * naming prog and an END flagged EXEC. Returns 1 when it wrote them (the
 * caller says vpt_exec_failed if the exec returns). A fork child that
 * recorded nothing has no file and gets none. */
int vpt_before_exec(const char *prog)
{
	if (!may_flush())
		return 0;
	flush_now();
	if (LOAD(&trace_fd) < 0)
		return 0;
	note_chunk(VPTRACE_NOTE_EXEC, sys_gettid(), 0, prog ? prog : "");
	end_chunk(VPTRACE_END_EXEC);
	return 1;
}

/* The exec failed (err: errno): tracing goes on in the same file, the
 * EXEC end before this note is void. */
void vpt_exec_failed(int err)
{
	note_chunk(VPTRACE_NOTE_EXEC_FAILED, sys_gettid(), (uint64_t)err, "exec failed: tracing goes on in this file");
}

/* _exit, _Exit: the exit flush that exit() does in its destructor (a fork
 * child's events between fork and _exit were lost without it). */
void vpt_before_exit(void)
{
	if (may_flush())
		finalize();
}

/* ------------------------------------------------------------------ */
/* registration and the C API                                          */

void vpt_register(const struct vpt_object *o)
{
	uint32_t n, i, free = VPT_MAXOBJ;
	if (!o)
		return;
	if (init_normal() != ST_READY)
		return;
	if (!obj_valid(o)) {
		warn_once(W_OBJ, (uint64_t)(uintptr_t)o, "vpt_register: bad object descriptor ignored");
		return;
	}
	spin_lock(&reg_lock);
	n = LOAD(&vpt_nobjs);
	if (n > VPT_MAXOBJ)
		n = VPT_MAXOBJ;
	for (i = 0; i < n; i++) {
		const struct vpt_object *p = LOADA(&vpt_objs[i]);
		if (p == o) {
			spin_unlock(&reg_lock);
			return;
		}
		if (!p && free == VPT_MAXOBJ)
			free = i; /* an unregistered object's */
	}
	i = free;
	if (i == VPT_MAXOBJ) {
		if (n >= VPT_MAXOBJ) {
			spin_unlock(&reg_lock);
			warn_once(W_MAXOBJ, VPT_MAXOBJ, "vpt_register: too many objects");
			return;
		}
		i = n;
		STORE(&vpt_nobjs, n + 1);
	}
	STORE(&obj_kinds[i], kinds_of(o));
	STORE(&vpt_objdumped[i], 0);
	STORER(&vpt_objs[i], o);
	spin_unlock(&reg_lock);
	dump_objects();
}

static void slots_forget(const struct vpt_object *o);

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
	spin_lock(&reg_lock);
	n = LOAD(&vpt_nobjs);
	if (n > VPT_MAXOBJ)
		n = VPT_MAXOBJ;
	for (uint32_t i = 0; i < n; i++)
		if (LOADA(&vpt_objs[i]) == o)
			STORE(&vpt_objs[i], NULL);
	slots_forget(o);
	spin_unlock(&reg_lock);
	readers_drain();
}

void vptrace_start(void)
{
	if (init_normal() != ST_READY)
		return;
	if (!XCHG(&vpt_hot.active, 1)) {
		/* pages recorded before the stop count again */
		FADD(&vpt_hot.epoch, 1ull << 40);
		note_chunk(VPTRACE_NOTE_START, sys_gettid(), 0, "vptrace_start");
	}
}

void vptrace_stop(void)
{
	if (init_normal() != ST_READY)
		return;
	if (XCHG(&vpt_hot.active, 0))
		note_chunk(VPTRACE_NOTE_STOP, sys_gettid(), 0, "vptrace_stop");
}

int vptrace_active(void)
{
	return LOAD(&init_state) != ST_OFF && LOAD(&vpt_hot.active) != 0;
}

int vptrace_flush(void)
{
	struct vpt_thread *t = &vpt_t;
	if (init_normal() != ST_READY)
		return -1;
	if (t->flags & VTF_INBATCH)
		return -1;
	if (sys_getpid() != vpt_pid) {
		t->flags |= VTF_INBATCH;
		child_fixup(0);
		t->flags &= ~VTF_INBATCH;
	}
	flush_now();
	return 0;
}

void vptrace_note(const char *text)
{
	if (init_normal() != ST_READY)
		return;
	note_chunk(VPTRACE_NOTE_TEXT, sys_gettid(), 0, text ? text : "");
}

const char *vptrace_path(void)
{
	if (init_normal() != ST_READY)
		return NULL;
	return out_path;
}

/* ------------------------------------------------------------------ */
/* for the Go consumer                                                 */

int vpt_go_started(void)
{
	int gs = GO_NONE;
	if (!CAS(&go_alive, &gs, GO_RUNNING))
		return 0; /* the process is exiting without us */
	STORE(&consumer_tid, sys_gettid());
	if (LOAD(&init_state) == ST_READY)
		late_init();
	return 1;
}

void vpt_go_tick(void)
{
	if (LOAD(&init_state) == ST_READY && sys_getpid() == vpt_pid)
		late_init();
}

int vpt_trace_fd(void)
{
	if (LOAD(&init_state) != ST_READY || sys_getpid() != vpt_pid)
		return -1;
	return LOAD(&trace_fd);
}

int vpt_trace_mode(void)
{
	if (LOAD(&init_state) != ST_READY)
		return -1;
	return LOAD(&mode);
}

int vpt_interval_ms(void)
{
	return cfg_interval_ms;
}

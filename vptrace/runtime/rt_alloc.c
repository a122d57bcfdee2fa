//go:build !vptgohalf

/*
 * rt_alloc.c: allocation tracking: the runtime's malloc family, C++
 * operators new and delete, mmap, munmap, mremap, strdup and strndup
 * record every call of the program into per-thread buffers, written to
 * the trace as ALLOCS chunks (FORMAT.md "12 ALLOCS"; the vptrace
 * runtime's C half: rt_state.c, rt.h).
 *
 * Interposition. The functions are defined here weakly, with default
 * visibility: in a program linked with libvptrace.so (before libc, as
 * hijack cc links it) they are the definitions every object's calls
 * reach; in a static link libc.a's strong malloc wins and tracking is off.
 * Each calls the next definition (dlsym RTLD_NEXT: libc's, or jemalloc's
 * when a program links it after the runtime), else libc's own names
 * (__libc_malloc, ...) or raw system calls. dlsym itself may allocate: on
 * the thread resolving, those calls are served from a small static arena
 * (its blocks are never the program's and never freed). Whether the
 * runtime's malloc is the one the program's calls reach is probed in a
 * constructor (rt_maps.c); when it is not, nothing is recorded and the
 * trace says so (a NOTE WARNING).
 *
 * What is recorded. A call of the program's, once, with the outer call's
 * kind and return address: a per-thread depth counts the interposed calls
 * in progress, so that an operator new calling malloc, or strdup calling
 * malloc, records only the new, the strdup. Not recorded: calls while the
 * runtime works on the thread (VTF_INBATCH, VTF_INIT: its own libc calls),
 * on runtime threads (VTF_RUNTIME), and on threads of the Go runtime: a
 * thread whose allocator call comes from the runtime's own code (the Go
 * runtime's cgo helpers allocate its thread arguments, map its heap) is
 * one, marked for good (AT_RUNTIME), so that what libc allocates on its
 * behalf (pthread_create, pthread_getattr_np) is not recorded either.
 * Failed calls and free(NULL) are not recorded.
 *
 * Order. A process-wide counter gives every record its seq: releases take
 * it before the release (the block may be handed out again as soon as it
 * is released), allocations after they return; realloc and mremap take it
 * before (they release first).
 *
 * Buffers. A thread appends its records to a buffer of its own (mapped
 * at its first record, kept in a list and reused by later threads, never
 * unmapped) and writes them as one ALLOCS chunk when it is full, at the
 * thread's exit (FINAL), at vptrace_flush, before an exec and at exit.
 * Other threads (the exit flush, vptrace_flush, the clock thread every
 * interval) take a thread's records with the claim word of the event
 * buffers (rt_state.c): generation<<32 | bytes consumed; the owner closes
 * it while it writes its buffer out and resets it. Records made before the
 * trace file is open are kept and written when it opens. A signal handler
 * whose allocator call interrupts the thread's own appending counts the
 * record as lost (the chunk's "lost"), never waits.
 *
 * Encoding. Records are compact (format 1.5): deltas against the thread's
 * previous record and a table of recent sites, about 6 bytes where the
 * fixed layout took 60 (whose write(2) into the page cache was most of
 * the tracking's cost). A chunk's records start from a zeroed state: the
 * owner encodes from the start of its buffer and writes a full buffer as
 * it is; a part taken from another offset (what a stealer takes, what
 * remains after it took some) is decoded from the buffer's start and
 * encoded again (rework): at most once per interval and thread.
 *
 * Releases. A release that covers a whole page moves the recent-page
 * cache epoch on (at most once per clock tick), so that threads record the
 * page again for its next owner, and marks a cut: the aggregator splits
 * the threads' page aggregates at that time (main.go), so that an
 * aggregate does not mix two owners of a page.
 */
#define _GNU_SOURCE
#define VPT_RT_C
#include "rt.h"

#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/auxv.h>

#pragma weak dlsym
#pragma weak dladdr

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

#define INTERPOSE __attribute__((weak, visibility("default"), noinline))
#define RA() ((uint64_t)(uintptr_t)__builtin_return_address(0))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define BARRIER() __asm__ volatile("" ::: "memory")

/* record kinds (FORMAT.md) */
enum {
	AK_MALLOC = 1, AK_CALLOC, AK_REALLOC, AK_REALLOCARRAY, AK_FREE, AK_ALIGNED_ALLOC,
	AK_POSIX_MEMALIGN, AK_MEMALIGN, AK_VALLOC, AK_PVALLOC, AK_NEW, AK_NEW_ARRAY,
	AK_DELETE, AK_DELETE_ARRAY, AK_MMAP, AK_MUNMAP, AK_MREMAP, AK_STRDUP, AK_STRNDUP,
};
/* record flags */
#define RF_FILE   1
#define RF_SHARED 2
#define RF_FIXED  4

#define REC_PATH  4096    /* the longest path kept */
#define CREC_BLK  64u     /* a compact record without flags, prot and path: at most */
#define CREC_MAX(plen) (CREC_BLK + 24u + (plen)) /* one with them */
#define ASITES 128        /* the compact encoding's table of recent sites */

/* ------------------------------------------------------------------ */
/* per-thread state                                                    */

#define AT_RUNTIME 1u /* a runtime (Go) thread: nothing recorded */
#define AT_APPEND  2u /* appending to (or writing out) its buffer */
#define AT_EXITED  4u /* the exit flush ran: records are written one by one */
#define AT_RESOLVE 8u /* resolving the next functions: allocations from the arena */
#define AT_PROBE   16u /* the constructor's probe */
#define AT_GODTV   32u /* the main thread's next call may be the Go runtime's first thread's TLS (see alloc_init) */
#define AT_SOLO    64u /* the one thread that takes seqs: it increments the counter without a lock (next_seq) */

struct abuf;
struct athread {
	struct abuf *buf;  /* the thread's record buffer, or NULL */
	uint32_t depth;    /* interposed calls (or runtime calls into libc) in progress */
	uint32_t flags;    /* AT_* */
	uint64_t lost;     /* records lost before the thread had a buffer */
};
static __thread struct athread vrt_at __attribute__((tls_model("initial-exec")));

/* The compact encoding's state (FORMAT.md, ALLOCS): the previous
 * record's seq, time and address, and the table of recent sites. A chunk's
 * records start from a zeroed one. */
struct aenc {
	uint64_t seq, time, addr;
	uint64_t site[ASITES];
};

/* A thread's record buffer: the records exactly as a chunk holds them
 * (compact, encoded from the start of data, so that the owner writes a
 * full buffer as it is), then the owner's scratch space for re-encoding
 * what remains after another thread took a part (see rework). */
#define AB_FREE  0u
#define AB_OWNED 1u
#define ABUF_BYTES (64u << 10)
#define ABUF_HDR 1152u
#define ABUF_CAP (ABUF_BYTES - ABUF_HDR)
#define ABUF_MAP (2 * ABUF_BYTES) /* the buffer and the owner's scratch (touched only when used) */
struct abuf {
	struct abuf *next;  /* every buffer: a list, never unlinked */
	uint32_t state;     /* AB_* */
	uint32_t tid;       /* the owner */
	uint64_t claim;     /* generation<<32 | bytes consumed (rt_state.c) */
	uint64_t used;      /* bytes of records; the owner publishes with a release store */
	uint64_t serial;    /* the owner's (0 until its first event) */
	uint64_t lost;      /* the owner's lost records, cumulative */
	uint32_t nrec;      /* records in data[0:used] (the owner's count) */
	uint32_t pad1;
	uint64_t pad[1];
	struct aenc enc;    /* the owner's encoder, after data[used-1] */
	uint8_t pad2[ABUF_HDR - 64 - sizeof(struct aenc)];
	uint8_t data[];     /* at ABUF_HDR */
};
_Static_assert(offsetof(struct abuf, data) == ABUF_HDR, "abuf header");

static struct abuf *abufs;  /* the list */
static uint64_t aseq;       /* the last seq handed out */
static int aoff;            /* tracking off: nothing recorded */
static int aready;          /* the constructor ran (libc is up) */
static int aeffect = 1;     /* the probe found the runtime's malloc in effect */
static uint32_t afinal;     /* the exit flush ran: threads write their records through */
static uint32_t steal_lock; /* the stealers' copy buffer */
static int probe_hit;       /* the probe reached the runtime's malloc */

/* ------------------------------------------------------------------ */
/* the functions underneath                                            */

enum {
	N_MALLOC, N_FREE, N_CALLOC, N_REALLOC, N_REALLOCARRAY, N_ALIGNED_ALLOC, N_POSIX_MEMALIGN,
	N_MEMALIGN, N_VALLOC, N_PVALLOC, N_MMAP, N_MUNMAP, N_MREMAP, N_STRDUP, N_STRNDUP,
	N_NEW_NT, N_NEWA_NT, N_NEW_AL_NT, N_NEWA_AL_NT, N_NEW, N_NEWA, N_NEW_AL, N_NEWA_AL,
	N_DEL, N_DELA, N_DEL_SZ, N_DELA_SZ, N_DEL_AL, N_DELA_AL, N_DEL_SZ_AL, N_DELA_SZ_AL,
	N_DEL_NT, N_DELA_NT, N_DEL_AL_NT, N_DELA_AL_NT, N_COUNT
};
static const char *const nx_names[N_COUNT] = {
	"malloc", "free", "calloc", "realloc", "reallocarray", "aligned_alloc", "posix_memalign",
	"memalign", "valloc", "pvalloc", "mmap", "munmap", "mremap", "strdup", "strndup",
	"_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
	"_ZnamSt11align_val_tRKSt9nothrow_t", "_Znwm", "_Znam", "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
	"_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
	"_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t", "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
	"_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};
static void *nx[N_COUNT];
static int nx_done;
static size_t (*nx_usable)(void *); /* the next malloc's malloc_usable_size, or NULL */
static int glibc_sizes;             /* the next malloc is glibc's: its chunk headers tell */

/* libc's own names: what the next definition is when dlsym has none (a
 * static link) */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void *(*reallocarray_fn)(void *, size_t, size_t);
typedef void *(*memalign_fn)(size_t, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*munmap_fn)(void *, size_t);
typedef void *(*mremap_fn)(void *, size_t, size_t, int, ...);
typedef char *(*strdup_fn)(const char *);
typedef char *(*strndup_fn)(const char *, size_t);
typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);
typedef void (*del_fn)(void *);
typedef void (*del_sz_fn)(void *, size_t);
typedef void (*del_sz_al_fn)(void *, size_t, size_t);
typedef void (*del_nt_fn)(void *, const void *);
typedef void (*del_al_nt_fn)(void *, size_t, const void *);

static void *fallback_of(int i);

/* the next function i; before the first resolution has stored it (a
 * call dlsym makes while it resolves), libc's own */
static inline void *nx_get(int i)
{
	void *p = LOADA(&nx[i]);
	return __builtin_expect(p != NULL, 1) ? p : fallback_of(i);
}
#define NX(i, type) ((type)nx_get(i))

static void *sys_mmap(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
	long r = sc6(SYS_mmap, (long)a, (long)len, prot, flags, fd, (long)off);
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return MAP_FAILED;
	}
	return (void *)r;
}

static int sys_munmap(void *a, size_t len)
{
	long r = sc3(SYS_munmap, a, len, 0);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

static void *sys_mremap(void *old, size_t oldlen, size_t len, int flags, ...)
{
	va_list ap;
	void *na;
	va_start(ap, flags);
	na = va_arg(ap, void *);
	va_end(ap);
	long r = sc6(SYS_mremap, (long)old, (long)oldlen, (long)len, flags, (long)na, 0);
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return MAP_FAILED;
	}
	return (void *)r;
}

static void *fallback_of(int i)
{
	/* (N_REALLOCARRAY, N_POSIX_MEMALIGN, N_STRDUP, N_STRNDUP: done here on
	 * the others, by their callers) */
	switch (i) {
	case N_MALLOC: return (void *)__libc_malloc;
	case N_FREE: return (void *)__libc_free;
	case N_CALLOC: return (void *)__libc_calloc;
	case N_REALLOC: return (void *)__libc_realloc;
	case N_MEMALIGN: case N_ALIGNED_ALLOC: return (void *)__libc_memalign;
	case N_VALLOC: return (void *)__libc_valloc;
	case N_PVALLOC: return (void *)__libc_pvalloc;
	case N_MMAP: return (void *)sys_mmap;
	case N_MUNMAP: return (void *)sys_munmap;
	case N_MREMAP: return (void *)sys_mremap;
	}
	return NULL; /* (posix_memalign, reallocarray, strdup, strndup: done here on the others; C++: see below) */
}

/* The runtime's own code: its executable segment in libvptrace.so and
 * that of its Go half, libvptrace-go.so (rt_gohalf.c), once loaded; in a
 * program linked with libvptrace.a, where it shares the executable's, the
 * Go runtime's cgo helpers that allocate (see is_runtime). */
static uint64_t rt_lo, rt_hi, go_lo, go_hi;
static int rt_archive;
extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

/* The executable segments' span of the object whose ELF header is eh,
 * mapped: [*lo, *hi), empty when it has none. */
static void text_span(const ElfW(Ehdr) *eh, uint64_t *lo, uint64_t *hi)
{
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(const void *)((const char *)eh + eh->e_phoff);
	uint64_t base = 0;
	*lo = ~0ull;
	*hi = 0;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0)
			base = (uint64_t)(uintptr_t)eh - ph[i].p_vaddr;
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
			continue;
		if (base + ph[i].p_vaddr < *lo)
			*lo = base + ph[i].p_vaddr;
		if (base + ph[i].p_vaddr + ph[i].p_memsz > *hi)
			*hi = base + ph[i].p_vaddr + ph[i].p_memsz;
	}
}

static void runtime_text(void)
{
	const ElfW(Ehdr) *eh = &__ehdr_start;
	uint64_t lo, hi;
	if ((uint64_t)(uintptr_t)((const char *)eh + eh->e_phoff) == getauxval(AT_PHDR)) {
		STORE(&rt_archive, 1); /* linked into the executable */
		return;
	}
	text_span(eh, &lo, &hi);
	if (lo < hi) {
		STORE(&rt_lo, lo);
		STORE(&rt_hi, hi);
	}
}

#ifdef VPT_SPLIT
/* From the Go half's constructor, before the Go runtime's starts its first
 * thread (whose allocations are then known to be the runtime's). */
void vpt_go_half_loaded(const void *ehdr)
{
	uint64_t lo, hi;
	text_span(ehdr, &lo, &hi);
	if (lo < hi) {
		STORE(&go_hi, hi); /* (is_runtime reads go_lo first) */
		STORE(&go_lo, lo);
	}
}
#endif

/* The Go runtime's C helpers (runtime/cgo) that call the allocator: a
 * thread's first allocator call is one of theirs when it is a Go thread
 * (threadentry frees its argument, x_cgo_init probes malloc, the heap is
 * mapped by x_cgo_mmap). In libvptrace.a they lie anywhere in the
 * executable's text; their objects are small, each within a few hundred
 * bytes of one of these symbols (threadentry just before x_cgo_init). */
extern char x_cgo_init[] __attribute__((weak));
extern char x_cgo_thread_start[] __attribute__((weak));
extern char x_cgo_mmap[] __attribute__((weak));
extern char x_cgo_munmap[] __attribute__((weak));
extern char x_cgo_getstackbound[] __attribute__((weak));
extern char x_cgo_setenv[] __attribute__((weak));
extern char x_cgo_sys_thread_create[] __attribute__((weak));
extern char _cgo_try_pthread_create[] __attribute__((weak));

static int near_cgo(uint64_t ra)
{
	const char *const anchors[] = {x_cgo_init, x_cgo_thread_start, x_cgo_mmap, x_cgo_munmap, x_cgo_getstackbound,
				       x_cgo_setenv, x_cgo_sys_thread_create, _cgo_try_pthread_create};
	for (size_t i = 0; i < sizeof anchors / sizeof anchors[0]; i++) {
		uint64_t a = (uint64_t)(uintptr_t)anchors[i];
		if (a && ra + 0x40 - a < 0x1c0)
			return 1;
	}
	return 0;
}

static inline int is_runtime(uint64_t ra)
{
	uint64_t glo = LOAD(&go_lo); /* (stored after go_hi: set, go_hi is) */
	if (ra - rt_lo < rt_hi - rt_lo || (glo && ra - glo < LOAD(&go_hi) - glo))
		return 1;
	return rt_archive && near_cgo(ra);
}

/* A static arena for what dlsym allocates while the thread resolves:
 * 16-byte blocks headed by their size, never freed. */
static uint8_t arena[128 << 10] __attribute__((aligned(64)));
static uint64_t arena_used;

static inline int in_arena(const void *p)
{
	return (const uint8_t *)p >= arena && (const uint8_t *)p < arena + sizeof arena;
}

static void *arena_alloc(size_t n, size_t align)
{
	uint64_t off, want;
	if (align < 16)
		align = 16;
	if (n > sizeof arena || align > 4096)
		return NULL;
	want = (n + 16 + align + 15) & ~15ull;
	off = FADD(&arena_used, want);
	if (off + want > sizeof arena)
		return NULL;
	uint64_t p = ((uint64_t)(uintptr_t)(arena + off) + 16 + align - 1) & ~(uint64_t)(align - 1);
	__builtin_memcpy((void *)(uintptr_t)(p - 8), &n, 8);
	return (void *)(uintptr_t)p;
}

static size_t arena_size(const void *p)
{
	size_t n;
	__builtin_memcpy(&n, (const uint8_t *)p - 8, 8);
	return n;
}

/* malloc_usable_size of the allocator whose malloc is m (its sizes tell
 * which releases cover whole pages): the next one when it comes from the
 * same object as m, else none (an allocator without it) */
static size_t (*usable_of(void *m))(void *)
{
	Dl_info x, y;
	void *u;
	if (!dlsym)
		return malloc_usable_size; /* a static link: libc's */
	u = dlsym(RTLD_NEXT, "malloc_usable_size");
	if (!u || !m || !dladdr || !dladdr(u, &x) || !dladdr(m, &y) || x.dli_fbase != y.dli_fbase)
		return NULL;
	return (size_t (*)(void *))u;
}

/* valgrind's RUNNING_ON_VALGRIND client request (valgrind.h, amd64): a
 * no-op sequence natively, which valgrind answers */
static unsigned long on_valgrind(void)
{
	volatile unsigned long req[6] = {0x1001, 0, 0, 0, 0, 0};
	unsigned long r = 0;
	__asm__ volatile("rolq $3, %%rdi; rolq $13, %%rdi\n\trolq $61, %%rdi; rolq $51, %%rdi\n\txchgq %%rbx, %%rbx"
			 : "=d"(r)
			 : "a"(&req[0]), "0"(r)
			 : "cc", "memory");
	return r;
}

/* Resolve the next functions (on each thread that finds them unresolved:
 * no thread waits for another). */
static void resolve(void)
{
	struct athread *a = &vrt_at;
	int e = errno;
	if (a->flags & AT_RESOLVE)
		return;
	a->flags |= AT_RESOLVE;
	runtime_text();
	for (int i = 0; i < N_COUNT; i++) {
		void *p = dlsym ? dlsym(RTLD_NEXT, nx_names[i]) : NULL;
		if (!p)
			p = fallback_of(i);
		STORER(&nx[i], p);
	}
	STORER(&nx_usable, usable_of(nx[N_MALLOC]));
	STORE(&glibc_sizes, nx[N_MALLOC] == (void *)__libc_malloc && !on_valgrind());
	STORE(&nx_done, 1);
	a->flags &= ~AT_RESOLVE;
	errno = e;
}

/* a C++ function the first resolution did not find (libstdc++ loaded later) */
static void *nx_cxx(int i)
{
	void *p = LOADA(&nx[i]);
	if (!p && dlsym && !(vrt_at.flags & AT_RESOLVE)) {
		vrt_at.flags |= AT_RESOLVE;
		p = dlsym(RTLD_NEXT, nx_names[i]);
		vrt_at.flags &= ~AT_RESOLVE;
		if (p)
			STORER(&nx[i], p);
	}
	return p;
}

/* ------------------------------------------------------------------ */
/* recording                                                           */

/* Whether a call (returning to ra) is the program's to record; with the
 * thread's depth 0. */
static uint64_t ld_lo, ld_hi; /* the dynamic loader's code */

static __attribute__((noinline)) int should_record_flags(struct athread *a, uint64_t ra)
{
	if (a->flags & (AT_RUNTIME | AT_RESOLVE | AT_PROBE))
		return 0;
	a->flags &= ~AT_GODTV;
	return ra - ld_lo >= ld_hi - ld_lo; /* (the loader's allocation for the Go runtime's thread) */
}

static inline int should_record(struct athread *a, uint64_t ra)
{
	if (UNLIKELY(a->flags & (AT_RUNTIME | AT_RESOLVE | AT_PROBE | AT_GODTV)) && !should_record_flags(a, ra))
		return 0;
	if (LOAD(&aoff) || (vpt_t.flags & (VTF_INBATCH | VTF_RUNTIME | VTF_INIT)))
		return 0;
	if (UNLIKELY(is_runtime(ra))) {
		a->flags |= AT_RUNTIME;
		return 0;
	}
	return 1;
}

/* The seq counter. Its lock xadd was most of the interposed functions'
 * own cost (40% of malloc's, 93% of calloc's samples in allocbench: a full
 * barrier on every call). While one thread alone takes seqs (a
 * single-threaded program, or the main thread before it starts others)
 * it increments the counter without the lock prefix: one instruction, so
 * a signal handler on the thread cannot split it. The first other thread
 * that wants a seq makes the counter shared: it marks it SWITCHING, runs
 * membarrier(2) (a full barrier on every CPU running the process: the
 * owner then either sees the mark, or has made its solo_busy visible),
 * waits until the owner is out of its increment and marks it SHARED; from
 * then on every thread takes seqs with lock xadd. Every thread that finds
 * the counter SOLO or SWITCHING does the barrier and the wait itself (a
 * signal handler may have interrupted the thread that switches). Without
 * membarrier's expedited command (an old kernel, a sandbox) it is SHARED
 * from the first seq. */
#ifndef MEMBARRIER_CMD_QUERY
#define MEMBARRIER_CMD_QUERY 0
#define MEMBARRIER_CMD_PRIVATE_EXPEDITED (1 << 3)
#define MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED (1 << 4)
#endif
enum { SEQ_UNSET, SEQ_SOLO, SEQ_SWITCHING, SEQ_SHARED };
static uint32_t seq_mode;  /* SEQ_* */
static uint32_t solo_busy; /* the owner is inside its increment (its signal handlers nest) */

static int membarrier_ready(void)
{
	long q = sc3(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	if (q < 0 || !(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return 0;
	return sc3(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* The counter becomes shared (see above); returns when no increment
 * without the lock can be in flight. */
static __attribute__((noinline)) void seq_share(void)
{
	uint32_t m = SEQ_SOLO;
	CAS(&seq_mode, &m, SEQ_SWITCHING);
	if (LOAD(&seq_mode) == SEQ_SHARED)
		return;
	if (sc3(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
		/* (not registered: a fork child, should a kernel not keep it) */
		sc3(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
		sc3(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	}
	/* the owner leaves its increment within a few instructions once it
	 * runs; a second at most (an owner that never comes back, a handler
	 * that longjmp'ed out of the increment, must not hang the program) */
	for (int i = 0; LOAD(&solo_busy) && i < 10100; i++) {
		struct timespec ts = {0, 100000};
		if (i < 100)
			sc3(SYS_sched_yield, 0, 0, 0);
		else
			sc3(SYS_nanosleep, &ts, 0, 0);
	}
	STORE(&seq_mode, SEQ_SHARED);
}

/* The counter's first owner: the calling thread, at the process's first
 * seq or in the constructor, whichever comes first: before the Go runtime
 * starts its threads (registering for membarrier with threads running
 * waits for an RCU grace period: 10 ms). */
static void seq_init(struct athread *a)
{
	uint32_t m = SEQ_UNSET, want;
	if (LOAD(&seq_mode) != SEQ_UNSET)
		return;
	want = membarrier_ready() ? SEQ_SOLO : SEQ_SHARED;
	if (CAS(&seq_mode, &m, want) && want == SEQ_SOLO)
		a->flags |= AT_SOLO;
}

static __attribute__((noinline)) uint64_t seq_slow(struct athread *a)
{
	uint32_t m = LOAD(&seq_mode);
	if (m == SEQ_UNSET) {
		seq_init(a);
		m = LOAD(&seq_mode);
		if (a->flags & AT_SOLO)
			return FADD(&aseq, 1) + 1; /* (the next ones without the lock) */
	}
	if (m != SEQ_SHARED)
		seq_share();
	return FADD(&aseq, 1) + 1;
}

static inline __attribute__((always_inline)) uint64_t next_seq(struct athread *a)
{
	if (__builtin_expect(a->flags & AT_SOLO, 1)) {
		volatile uint32_t *busy = &solo_busy;
		++*busy;
		BARRIER();
		if (__builtin_expect(__atomic_load_n(&seq_mode, __ATOMIC_RELAXED) == SEQ_SOLO, 1)) {
			uint64_t v = 1;
			__asm__ volatile("xaddq %0, %1" : "+r"(v), "+m"(aseq) : : "memory");
			--*busy;
			return v + 1;
		}
		--*busy;
		a->flags &= ~AT_SOLO;
	}
	return seq_slow(a);
}

/* The compact encoding (FORMAT.md, ALLOCS "Compact records"): a head
 * byte (kind, and which of seq, time, flags/prot/path differ from the
 * default), zigzag LEB128 deltas against the previous record, the site as
 * a slot of a table of recent sites. */
#define CH_SEQ  0x20u /* a seq delta follows (else the previous seq + 1) */
#define CH_TIME 0x40u /* a time delta follows (else the previous time) */
#define CH_EXT  0x80u /* flags, prot and path follow (else 0, 0, none) */
#define CS_NEW  0x80u /* site byte: the site follows, for slot (byte & 0x7f) */

static inline uint8_t *put_uv(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint64_t zigzag(uint64_t d) { return (d << 1) ^ (uint64_t)((int64_t)d >> 63); }
static inline uint64_t unzigzag(uint64_t u) { return (u >> 1) ^ -(u & 1); }
static inline int moves(uint16_t kind) { return kind == AK_REALLOC || kind == AK_REALLOCARRAY || kind == AK_MREMAP; }
/* a site's slot in the table: any choice decodes (the slot is in the
 * record); a hash keeps a few hot sites apart */
static inline uint32_t site_slot(uint64_t site) { return (uint32_t)((site * 0x9E3779B97F4A7C15ull) >> 57); }

static void enc_reset(struct aenc *s)
{
	zero_bytes(s, sizeof *s);
}

/* One compact record at p (room for CREC_MAX(plen) bytes); returns its end. */
static inline __attribute__((always_inline)) uint8_t *enc_record(struct aenc *s, uint8_t *p, uint64_t seq, uint64_t time,
								uint16_t kind, uint64_t addr, uint64_t size, uint64_t old,
								uint64_t site, uint16_t flags, uint32_t prot,
								const char *path, uint32_t plen)
{
	uint8_t *h = p++;
	uint32_t head = kind & 0x1f, slot = site_slot(site);
	if (UNLIKELY(seq != s->seq + 1)) {
		head |= CH_SEQ;
		p = put_uv(p, zigzag(seq - s->seq));
	}
	if (UNLIKELY(time != s->time)) {
		head |= CH_TIME;
		p = put_uv(p, zigzag(time - s->time));
	}
	p = put_uv(p, zigzag(addr - s->addr));
	p = put_uv(p, size);
	if (moves(kind))
		p = put_uv(p, zigzag(old - addr));
	if (__builtin_expect(s->site[slot] == site, 1)) {
		*p++ = (uint8_t)slot;
	} else {
		*p++ = (uint8_t)(CS_NEW | slot);
		p = put_uv(p, site);
		s->site[slot] = site;
	}
	if (UNLIKELY(flags | prot | plen)) {
		head |= CH_EXT;
		p = put_uv(p, flags);
		p = put_uv(p, prot);
		p = put_uv(p, plen);
		copy_bytes(p, path, plen);
		p += plen;
	}
	*h = (uint8_t)head;
	s->seq = seq;
	s->time = time;
	s->addr = addr;
	return p;
}

/* A decoded record; path points into the input. */
struct arec {
	uint64_t seq, time, addr, size, old, site;
	uint16_t kind, flags;
	uint32_t prot, plen;
	const uint8_t *path;
};

static const uint8_t *get_uv(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned sh = 0; sh < 64 && p < end; sh += 7) {
		uint8_t c = *p++;
		x |= (uint64_t)(c & 0x7f) << sh;
		if (!(c & 0x80)) {
			*v = x;
			return p;
		}
	}
	return NULL;
}

/* The compact record at p (before end); its end, or NULL when it is not
 * one (a torn copy: the caller's claim then fails). */
static const uint8_t *dec_record(struct aenc *s, const uint8_t *p, const uint8_t *end, struct arec *r)
{
	uint64_t v, slot;
	uint32_t head;
	if (p >= end)
		return NULL;
	head = *p++;
	r->kind = (uint16_t)(head & 0x1f);
	if (!r->kind)
		return NULL;
	r->seq = s->seq + 1;
	if (head & CH_SEQ) {
		if (!(p = get_uv(p, end, &v)))
			return NULL;
		r->seq = s->seq + unzigzag(v);
	}
	r->time = s->time;
	if (head & CH_TIME) {
		if (!(p = get_uv(p, end, &v)))
			return NULL;
		r->time = s->time + unzigzag(v);
	}
	if (!(p = get_uv(p, end, &v)))
		return NULL;
	r->addr = s->addr + unzigzag(v);
	if (!(p = get_uv(p, end, &r->size)))
		return NULL;
	r->old = 0;
	if (moves(r->kind)) {
		if (!(p = get_uv(p, end, &v)))
			return NULL;
		r->old = r->addr + unzigzag(v);
	}
	if (p >= end)
		return NULL;
	slot = *p++;
	if (slot & CS_NEW) {
		slot &= 0x7f;
		if (!(p = get_uv(p, end, &s->site[slot])))
			return NULL;
	}
	r->site = s->site[slot];
	r->flags = 0;
	r->prot = 0;
	r->plen = 0;
	r->path = NULL;
	if (head & CH_EXT) {
		uint64_t f, pr, n;
		if (!(p = get_uv(p, end, &f)) || !(p = get_uv(p, end, &pr)) || !(p = get_uv(p, end, &n)))
			return NULL;
		if (f > 0xffff || pr > 0xffffffffu || n > REC_PATH || n > (uint64_t)(end - p))
			return NULL;
		r->flags = (uint16_t)f;
		r->prot = (uint32_t)pr;
		r->plen = (uint32_t)n;
		r->path = p;
		p += n;
	}
	s->seq = r->seq;
	s->time = r->time;
	s->addr = r->addr;
	return p;
}

/* An ALLOCS chunk of the compact records recs[0:n) (k of them). A reader
 * before format 1.5 sees 2^32-1 records at offset 32 and rejects the chunk
 * rather than misread it; the count is at 36. */
static void allocs_chunk(uint64_t serial, uint32_t tid, uint32_t flags, uint64_t lost, const uint8_t *recs, uint64_t n,
			 uint32_t k)
{
	uint8_t fix[40];
	struct iovec iov[3];
	put64(fix, serial);
	put32(fix + 8, tid);
	put32(fix + 12, flags | VPTRACE_ALLOCS_COMPACT);
	put64(fix + 16, vpt_now());
	put64(fix + 24, lost);
	put32(fix + 32, ~0u);
	put32(fix + 36, k);
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	iov[2].iov_base = (void *)recs;
	iov[2].iov_len = n;
	vrt_write_chunk(CH_ALLOCS, iov, 3);
}

/* Re-encoding: a chunk's records are encoded from a zeroed state, so the
 * records of a buffer from an offset other than its start (what remains
 * after a stealer took a part, or the part a stealer takes) are decoded
 * from the buffer's start and encoded again. The work space: */
struct rework {
	struct aenc dec, enc;
	uint8_t out[];
};

/* The compact records of d[0:n) from offset from on: decodes from the
 * start; with w, encodes those from from on again into w->out (cap bytes)
 * and writes them as chunks (a chunk whenever out fills; the last one with
 * flags, written even empty when force). Returns the end of the last whole
 * record, or 0 when from is not a record's start (a torn copy). */
static uint64_t rework(const uint8_t *d, uint64_t n, uint64_t from, struct rework *w, uint64_t cap, uint64_t serial,
		       uint32_t tid, uint32_t flags, uint64_t lost, int emit, int force)
{
	const uint8_t *p = d, *end = d + n, *q;
	uint64_t o = 0;
	uint32_t k = 0;
	struct arec r;
	int at_from = from == 0;
	enc_reset(&w->dec);
	enc_reset(&w->enc);
	while (p < end && (q = dec_record(&w->dec, p, end, &r)) != NULL) {
		if ((uint64_t)(p - d) == from)
			at_from = 1;
		if ((uint64_t)(p - d) >= from && emit) {
			if (o + CREC_MAX(r.plen) > cap) {
				allocs_chunk(serial, tid, 0, lost, w->out, o, k);
				enc_reset(&w->enc);
				o = 0;
				k = 0;
			}
			o = (uint64_t)(enc_record(&w->enc, w->out + o, r.seq, r.time, r.kind, r.addr, r.size, r.old, r.site,
						  r.flags, r.prot, (const char *)r.path, r.plen) - w->out);
			k++;
		}
		p = q;
	}
	if ((uint64_t)(p - d) == from)
		at_from = 1;
	if (!at_from)
		return 0;
	if (emit && (k || force))
		allocs_chunk(serial, tid, flags, lost, w->out, o, k);
	return (uint64_t)(p - d);
}

/* Whether chunks can be written now: the trace file is open, or a fork
 * child's is to be created by the first chunk; a runtime not initialised
 * yet is (after the constructor: configuration needs the environment).
 * Sets aoff when tracing is off. */
static int can_write(void)
{
	int st = LOAD(&vrt_init_state);
	if (st == ST_NONE && LOAD(&aready) && !(vpt_t.flags & VTF_INIT)) {
		vrt_alloc_enter();
		st = vrt_core_init();
		vrt_alloc_leave();
	}
	if (st == ST_OFF) {
		STORE(&aoff, 1);
		return 0;
	}
	if (st != ST_READY)
		return 0;
	return LOAD(&vrt_trace_fd) >= 0 || LOAD(&vrt_child_open) == 1;
}

static uint64_t claim_close(struct abuf *b)
{
	uint64_t old = LOAD(&b->claim);
	while (!CAS(&b->claim, &old, (old & ~0xffffffffull) | VPT_CLAIM_CLOSED))
		;
	return old;
}

static void claim_reopen(struct abuf *b, uint64_t old)
{
	STORE(&b->claim, ((old >> 32) + 1) << 32);
}

/* The owner writes its buffer's unconsumed records (flags: FINAL) and
 * resets it; with tracking off they are dropped. Returns 0 when they
 * cannot be written yet (kept). With AT_APPEND set. */
static int flush_own(struct abuf *b, uint32_t flags)
{
	int e = errno, w = can_write();
	uint64_t old, used = LOAD(&b->used);
	if (!w && !LOAD(&aoff)) {
		errno = e;
		return 0;
	}
	if (w && LOAD(&vrt_clock_pid) != vpt_pid)
		vrt_clock_bump(); /* no clock thread (yet, or VPTRACE_CLOCK_US=0) */
	old = claim_close(b);
	if (w && ((uint32_t)old < used || (flags && b->lost))) {
		if ((uint32_t)old == 0)
			allocs_chunk(b->serial, b->tid, flags, b->lost, b->data, used, b->nrec);
		else /* the rest after a stealer's part, encoded again in the scratch space */
			rework(b->data, used, (uint32_t)old, (struct rework *)(void *)((uint8_t *)b + ABUF_BYTES),
			       ABUF_BYTES - sizeof(struct rework), b->serial, b->tid, flags, b->lost, 1, 1);
	}
	b->nrec = 0;
	enc_reset(&b->enc);
	STORE(&b->used, 0);
	claim_reopen(b, old);
	errno = e;
	return 1;
}

/* Take the written, unconsumed records of a buffer another thread owns
 * (or one of a thread that no longer runs) and write them. */
static void steal(struct abuf *b)
{
	/* the buffer's records (all of them: the part taken is decoded from
	 * the start) and the re-encoding's space; the stealers' (steal_lock) */
	static uint8_t copy[ABUF_CAP];
	static uint8_t space[sizeof(struct rework) + ABUF_CAP] __attribute__((aligned(64)));
	struct rework *w = (struct rework *)(void *)space;
	for (int tries = 0; tries < 100; tries++) {
		uint64_t c = LOAD(&b->claim), u, whole, serial, lost;
		uint32_t from = (uint32_t)c, tid;
		if (c & VPT_CLAIM_CLOSED)
			return;
		u = LOADA(&b->used);
		if (u <= from || u > ABUF_CAP)
			return;
		copy_bytes(copy, b->data, u);
		whole = rework(copy, u, from, w, 0, 0, 0, 0, 0, 0, 0);
		serial = LOAD(&b->serial);
		tid = LOAD(&b->tid);
		lost = LOAD(&b->lost);
		if (whole <= from || !CAS(&b->claim, &c, (c & ~0xffffffffull) | whole))
			continue;
		rework(copy, whole, from, w, ABUF_CAP, serial, tid, 0, lost, 1, 0);
		return;
	}
}

/* every thread's buffer but the caller's (steal's copy buffer is shared:
 * a caller that finds it taken by this thread, a signal handler
 * interrupting a flush, leaves) */
static void steal_all(void)
{
	struct abuf *mine = vrt_at.buf;
	uint32_t z = 0, me = sys_gettid();
	while (!CAS(&steal_lock, &z, me)) {
		if (z == me)
			return;
		z = 0;
		sc3(SYS_sched_yield, 0, 0, 0);
	}
	for (struct abuf *b = LOADA(&abufs); b; b = b->next)
		if (b != mine && LOAD(&b->state) == AB_OWNED)
			steal(b);
	STORE(&steal_lock, 0);
}

/* A buffer for the thread: a free one from the list, else a new mapping.
 * The thread gets its key (rt_threads.c) so that its exit flushes it. */
static struct abuf *buf_get(struct athread *a)
{
	struct abuf *b;
	for (b = LOADA(&abufs); b; b = b->next) {
		uint32_t f = AB_FREE;
		if (LOAD(&b->state) == AB_FREE && CAS(&b->state, &f, AB_OWNED))
			break;
	}
	if (!b) {
		long m = sc6(SYS_mmap, 0, ABUF_MAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m < 0 && m > -4096)
			return NULL;
		b = (struct abuf *)m;
		b->state = AB_OWNED;
		struct abuf *head = LOAD(&abufs);
		do
			b->next = head;
		while (!CAS(&abufs, &head, b));
	}
	STORE(&b->tid, sys_gettid());
	STORE(&b->serial, 0);
	STORE(&b->lost, a->lost);
	a->lost = 0;
	a->buf = b;
	if (LOAD(&aready) && !(vpt_t.flags & VTF_KEYED)) {
		int e = errno;
		vpt_t.flags |= VTF_INBATCH;
		a->depth++;
		vrt_thread_key(&vpt_t);
		a->depth--;
		vpt_t.flags &= ~VTF_INBATCH;
		errno = e;
	}
	return b;
}

static void lost_one(struct athread *a)
{
	if (a->buf)
		FADD(&a->buf->lost, 1);
	else
		a->lost++;
}

/* One record of the calling thread. */
static void record(struct athread *a, uint64_t seq, uint16_t kind, uint64_t addr, uint64_t size, uint64_t old,
		   uint64_t site, uint16_t flags, uint32_t prot, const char *path, uint32_t plen)
{
	struct abuf *b;
	uint64_t used, n = CREC_MAX(plen), t = LOAD(&vpt_hot.clock);
	if (a->flags & AT_APPEND) {
		lost_one(a); /* a signal handler interrupted the thread's own appending */
		return;
	}
	a->flags |= AT_APPEND;
	if (UNLIKELY(a->flags & AT_EXITED)) {
		/* after the thread's exit flush (a later TLS destructor): a chunk of its own */
		uint8_t one[CREC_MAX(REC_PATH)];
		struct aenc s;
		enc_reset(&s);
		n = (uint64_t)(enc_record(&s, one, seq, t, kind, addr, size, old, site, flags, prot, path, plen) - one);
		if (can_write())
			allocs_chunk((vpt_t.flags & VTF_SETUP) ? vpt_t.serial : 0, sys_gettid(), VPTRACE_ALLOCS_FINAL, a->lost, one, n, 1);
		goto out;
	}
	b = a->buf;
	if (UNLIKELY(!b) && !(b = buf_get(a))) {
		a->lost++;
		goto out;
	}
	used = b->used;
	if (UNLIKELY(used + n > ABUF_CAP)) {
		if (!flush_own(b, 0)) {
			FADD(&b->lost, 1); /* full, and the file cannot take it yet */
			goto out;
		}
		used = 0;
	}
	n = (uint64_t)(enc_record(&b->enc, b->data + used, seq, t, kind, addr, size, old, site, flags, prot, path, plen) -
		       (b->data + used));
	if (UNLIKELY(b->serial != vpt_t.serial) && (vpt_t.flags & VTF_SETUP))
		STORE(&b->serial, vpt_t.serial);
	b->nrec++;
	STORER(&b->used, used + n);
	if (UNLIKELY(LOAD(&afinal)))
		flush_own(b, 0); /* after the exit flush: written through */
out:
	a->flags &= ~AT_APPEND;
}

/* One record without a path: appended inline when nothing is special
 * (the thread has a buffer with room and is not appending already, no
 * exit flush ran, its serial is known to the buffer), else by record. */

static inline __attribute__((always_inline)) void record_blk(struct athread *a, uint64_t seq, uint16_t kind, uint64_t addr,
							    uint64_t size, uint64_t old, uint64_t site)
{
	struct abuf *b = a->buf;
	if (__builtin_expect(b != NULL && !(a->flags & (AT_APPEND | AT_EXITED)), 1)) {
		/* (the flag before reading used: a signal handler's record
		 * in between would be written over) */
		a->flags |= AT_APPEND;
		BARRIER();
		uint64_t used = b->used;
		if (__builtin_expect(used + CREC_BLK <= ABUF_CAP && !LOAD(&afinal) &&
					     (b->serial == vpt_t.serial || !(vpt_t.flags & VTF_SETUP)),
				     1)) {
			uint8_t *e = enc_record(&b->enc, b->data + used, seq, LOAD(&vpt_hot.clock), kind, addr, size, old,
						site, 0, 0, NULL, 0);
			b->nrec++;
			STORER(&b->used, (uint64_t)(e - b->data));
			BARRIER();
			a->flags &= ~AT_APPEND;
			return;
		}
		BARRIER();
		a->flags &= ~AT_APPEND;
	}
	record(a, seq, kind, addr, size, old, site, 0, 0, NULL, 0);
}

/* Releases: a block of size bytes at addr is released. When it covers a
 * whole page and the trace runs, the page cache epoch moves on (threads
 * record their pages again, now for the next owner) and the aggregator is
 * asked to cut the intervals there; at most once per clock tick. */
#define CUTS 256
static uint64_t cut_ring[CUTS];
static uint64_t cut_head;
static uint64_t last_cut = ~0ull;

static void released(uint64_t addr, uint64_t size)
{
	uint64_t first = (addr + 4095) & ~4095ull, c, l;
	if (size < 4096 || first + 4096 > addr + size || LOAD(&vrt_init_state) != ST_READY)
		return;
	c = LOAD(&vpt_hot.clock);
	l = LOAD(&last_cut);
	if (c == l || !CAS(&last_cut, &l, c))
		return;
	vrt_epoch_bump();
	STORE(&cut_ring[FADD(&cut_head, 1) % CUTS], c);
}

/* For the Go consumer: the cut times since *tail (at most max, the
 * latest), in order; *tail moves on. */
uint32_t vpt_cuts_take(uint64_t *tail, uint64_t *out, uint32_t max)
{
	uint64_t h = LOAD(&cut_head), t = *tail;
	uint32_t n = 0;
	if (h - t > CUTS)
		t = h - CUTS;
	if (h - t > max)
		t = h - max;
	for (; t < h; t++)
		out[n++] = LOAD(&cut_ring[t % CUTS]);
	*tail = h;
	return n;
}

/* A released block's size, when it matters: the trace runs and some
 * instrumented object records events. glibc's from its chunk header
 * (the size before the block, less the header; an mmap'd chunk's less
 * two words: at most 8 bytes short), without a call (not under valgrind,
 * whose blocks have no such header); another allocator's from its
 * malloc_usable_size. */
static inline size_t usable(void *p)
{
	if (LOAD(&vrt_init_state) != ST_READY || !LOAD(&vpt_nobjs))
		return 0;
	if (LOAD(&glibc_sizes)) {
		size_t h;
		__builtin_memcpy(&h, (const char *)p - 8, 8);
		return (h & ~(size_t)7) - 16;
	}
	size_t (*u)(void *) = LOADA(&nx_usable);
	return u ? u(p) : 0;
}

/* ------------------------------------------------------------------ */
/* the malloc family                                                   */

/* Entry of an interposed function: resolved, and whether to pass the
 * call through (nested, off, the runtime's). */
#define ENTER(a)                                    \
	struct athread *a = &vrt_at;                \
	if (UNLIKELY(!LOAD(&nx_done)))              \
		resolve()

static inline int pass(struct athread *a)
{
	return a->depth != 0 || (a->flags & AT_RESOLVE) || LOAD(&aoff);
}

INTERPOSE void *malloc(size_t n)
{
	ENTER(a);
	if (UNLIKELY(a->flags & AT_RESOLVE))
		return arena_alloc(n, 16);
	if (UNLIKELY(a->flags & AT_PROBE))
		STORE(&probe_hit, 1);
	uint64_t ra = RA();
	if (pass(a) || !should_record(a, ra))
		return NX(N_MALLOC, malloc_fn)(n);
	a->depth++;
	void *p = NX(N_MALLOC, malloc_fn)(n);
	a->depth--;
	if (p)
		record_blk(a, next_seq(a), AK_MALLOC, (uint64_t)(uintptr_t)p, n, 0, ra);
	return p;
}

INTERPOSE void free(void *p)
{
	if (!p || in_arena(p))
		return;
	ENTER(a);
	uint64_t ra = RA();
	if (pass(a) || !should_record(a, ra)) {
		NX(N_FREE, free_fn)(p);
		return;
	}
	size_t sz = usable(p);
	uint64_t seq = next_seq(a);
	a->depth++;
	NX(N_FREE, free_fn)(p);
	a->depth--;
	record_blk(a, seq, AK_FREE, (uint64_t)(uintptr_t)p, 0, 0, ra);
	if (sz >= 4096)
		released((uint64_t)(uintptr_t)p, sz);
}

INTERPOSE void *calloc(size_t n, size_t size)
{
	ENTER(a);
	if (UNLIKELY(a->flags & AT_RESOLVE)) {
		if (size && n > SIZE_MAX / size)
			return NULL;
		return arena_alloc(n * size, 16); /* (static: zeroed) */
	}
	uint64_t ra = RA();
	if (pass(a) || !should_record(a, ra))
		return NX(N_CALLOC, calloc_fn)(n, size);
	a->depth++;
	void *p = NX(N_CALLOC, calloc_fn)(n, size);
	a->depth--;
	if (p)
		record_blk(a, next_seq(a), AK_CALLOC, (uint64_t)(uintptr_t)p, (uint64_t)n * size, 0, ra);
	return p;
}

/* realloc of an arena block: a new block (the arena's while resolving) */
static void *arena_realloc(struct athread *a, void *p, size_t n)
{
	size_t old = arena_size(p);
	void *q = (a->flags & AT_RESOLVE) ? arena_alloc(n, 16) : NX(N_MALLOC, malloc_fn)(n);
	if (q)
		copy_bytes(q, p, old < n ? old : n);
	return q;
}

static void *realloc_common(struct athread *a, void *p, size_t n, uint16_t kind, uint64_t ra, int array, size_t m)
{
	void *q;
	if (pass(a) || !should_record(a, ra)) {
		if (array)
			return NX(N_REALLOCARRAY, reallocarray_fn) ? NX(N_REALLOCARRAY, reallocarray_fn)(p, m, n) : NULL;
		return NX(N_REALLOC, realloc_fn)(p, n);
	}
	size_t oldsz = p ? usable(p) : 0;
	uint64_t seq = next_seq(a);
	a->depth++;
	q = array ? NX(N_REALLOCARRAY, reallocarray_fn)(p, m, n) : NX(N_REALLOC, realloc_fn)(p, n);
	a->depth--;
	uint64_t bytes = array ? (uint64_t)m * n : n;
	if (q) {
		record_blk(a, seq, kind, (uint64_t)(uintptr_t)q, bytes, (uint64_t)(uintptr_t)p, ra);
		if (p && q != p && oldsz >= 4096)
			released((uint64_t)(uintptr_t)p, oldsz);
	} else if (p && bytes == 0) {
		/* realloc(p, 0) that freed p (glibc) */
		record_blk(a, seq, kind, 0, 0, (uint64_t)(uintptr_t)p, ra);
		if (oldsz >= 4096)
			released((uint64_t)(uintptr_t)p, oldsz);
	}
	return q;
}

INTERPOSE void *realloc(void *p, size_t n)
{
	ENTER(a);
	if (UNLIKELY(a->flags & AT_PROBE))
		STORE(&probe_hit, 1);
	if (UNLIKELY(p && in_arena(p)))
		return arena_realloc(a, p, n);
	if (UNLIKELY(a->flags & AT_RESOLVE) && !p)
		return arena_alloc(n, 16);
	return realloc_common(a, p, n, AK_REALLOC, RA(), 0, 0);
}

/* reallocarray: libc's when there is a next one, else realloc with the
 * overflow check */
static void *reallocarray_fallback(void *p, size_t m, size_t n)
{
	if (n && m > SIZE_MAX / n) {
		errno = ENOMEM;
		return NULL;
	}
	return NX(N_REALLOC, realloc_fn)(p, m * n);
}

INTERPOSE void *reallocarray(void *p, size_t m, size_t n)
{
	ENTER(a);
	if (UNLIKELY(!LOAD(&nx[N_REALLOCARRAY])))
		STORE(&nx[N_REALLOCARRAY], (void *)reallocarray_fallback);
	if (UNLIKELY(p && in_arena(p))) {
		if (n && m > SIZE_MAX / n) {
			errno = ENOMEM;
			return NULL;
		}
		return arena_realloc(a, p, m * n);
	}
	if (UNLIKELY(a->flags & AT_RESOLVE) && !p) {
		if (n && m > SIZE_MAX / n) {
			errno = ENOMEM;
			return NULL;
		}
		return arena_alloc(m * n, 16);
	}
	return realloc_common(a, p, n, AK_REALLOCARRAY, RA(), 1, m);
}

static void *aligned_common(struct athread *a, int which, uint16_t kind, size_t align, size_t n, uint64_t ra)
{
	void *p;
	if (UNLIKELY(a->flags & AT_RESOLVE))
		return arena_alloc(which == N_VALLOC || which == N_PVALLOC ? (n + 4095) & ~(size_t)4095 : n,
				   which == N_VALLOC || which == N_PVALLOC ? 4096 : align);
	int rec = !pass(a) && should_record(a, ra);
	if (rec)
		a->depth++;
	if (which == N_VALLOC || which == N_PVALLOC)
		p = NX(which, malloc_fn)(n);
	else
		p = NX(which, memalign_fn)(align, n);
	if (!rec)
		return p;
	a->depth--;
	if (p)
		record_blk(a, next_seq(a), kind, (uint64_t)(uintptr_t)p, n, 0, ra);
	return p;
}

INTERPOSE void *aligned_alloc(size_t align, size_t n)
{
	ENTER(a);
	return aligned_common(a, N_ALIGNED_ALLOC, AK_ALIGNED_ALLOC, align, n, RA());
}

INTERPOSE void *memalign(size_t align, size_t n)
{
	ENTER(a);
	return aligned_common(a, N_MEMALIGN, AK_MEMALIGN, align, n, RA());
}

INTERPOSE void *valloc(size_t n)
{
	ENTER(a);
	return aligned_common(a, N_VALLOC, AK_VALLOC, 4096, n, RA());
}

INTERPOSE void *pvalloc(size_t n)
{
	ENTER(a);
	return aligned_common(a, N_PVALLOC, AK_PVALLOC, 4096, n, RA());
}

/* posix_memalign: the next one, else memalign with its checks */
static int posix_memalign_fallback(void **out, size_t align, size_t n)
{
	void *p;
	if (align % sizeof(void *) || (align & (align - 1)) || align == 0)
		return EINVAL;
	p = NX(N_MEMALIGN, memalign_fn)(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

INTERPOSE int posix_memalign(void **out, size_t align, size_t n)
{
	ENTER(a);
	posix_memalign_fn f = NX(N_POSIX_MEMALIGN, posix_memalign_fn);
	if (UNLIKELY(!f))
		f = posix_memalign_fallback;
	if (UNLIKELY(a->flags & AT_RESOLVE)) {
		void *p = arena_alloc(n, align);
		if (!p)
			return ENOMEM;
		*out = p;
		return 0;
	}
	uint64_t ra = RA();
	if (pass(a) || !should_record(a, ra))
		return f(out, align, n);
	a->depth++;
	int r = f(out, align, n);
	a->depth--;
	if (r == 0)
		record_blk(a, next_seq(a), AK_POSIX_MEMALIGN, (uint64_t)(uintptr_t)*out, n, 0, ra);
	return r;
}

/* strdup, strndup: the next ones, else on the next malloc */
static char *dup_fallback(const char *s, size_t n)
{
	char *d = NX(N_MALLOC, malloc_fn)(n + 1);
	if (d) {
		copy_bytes(d, s, n);
		d[n] = 0;
	}
	return d;
}

static size_t bounded_len(const char *s, size_t max)
{
	size_t n = 0;
	while (n < max && s[n])
		n++;
	return n;
}

INTERPOSE char *strdup(const char *s)
{
	ENTER(a);
	size_t len = cstrlen(s);
	strdup_fn f = NX(N_STRDUP, strdup_fn);
	if (UNLIKELY(a->flags & AT_RESOLVE)) {
		char *d = arena_alloc(len + 1, 16);
		if (d)
			copy_bytes(d, s, len + 1);
		return d;
	}
	uint64_t ra = RA();
	int rec = !pass(a) && should_record(a, ra);
	char *d;
	if (rec)
		a->depth++;
	d = f ? f(s) : dup_fallback(s, len);
	if (!rec)
		return d;
	a->depth--;
	if (d)
		record_blk(a, next_seq(a), AK_STRDUP, (uint64_t)(uintptr_t)d, len + 1, 0, ra);
	return d;
}

INTERPOSE char *strndup(const char *s, size_t max)
{
	ENTER(a);
	size_t len = bounded_len(s, max);
	strndup_fn f = NX(N_STRNDUP, strndup_fn);
	if (UNLIKELY(a->flags & AT_RESOLVE)) {
		char *d = arena_alloc(len + 1, 16);
		if (d) {
			copy_bytes(d, s, len);
			d[len] = 0;
		}
		return d;
	}
	uint64_t ra = RA();
	int rec = !pass(a) && should_record(a, ra);
	char *d;
	if (rec)
		a->depth++;
	d = f ? f(s, max) : dup_fallback(s, len);
	if (!rec)
		return d;
	a->depth--;
	if (d)
		record_blk(a, next_seq(a), AK_STRNDUP, (uint64_t)(uintptr_t)d, len + 1, 0, ra);
	return d;
}

/* ------------------------------------------------------------------ */
/* mmap, munmap, mremap                                                */

static void *mmap_common(void *addr, size_t len, int prot, int flags, int fd, off_t off, uint64_t ra)
{
	ENTER(a);
	void *r;
	if (pass(a) || !should_record(a, ra))
		return NX(N_MMAP, mmap_fn)(addr, len, prot, flags, fd, off);
	int fixed = flags & MAP_FIXED;
	uint64_t seq = fixed ? next_seq(a) : 0; /* (MAP_FIXED releases what was there) */
	a->depth++;
	r = NX(N_MMAP, mmap_fn)(addr, len, prot, flags, fd, off);
	a->depth--;
	if (r == MAP_FAILED)
		return r;
	char path[REC_PATH];
	uint32_t plen = 0;
	uint16_t rf = 0;
	int e = errno;
	if (!(flags & MAP_ANONYMOUS) && fd >= 0) {
		char proc[32] = "/proc/self/fd/";
		vrt_utoa((uint64_t)fd, proc + 14);
		long n = sc3(SYS_readlink, proc, path, sizeof path);
		plen = n > 0 ? (uint32_t)n : 0;
		rf |= RF_FILE;
	}
	if ((flags & MAP_TYPE) != MAP_PRIVATE)
		rf |= RF_SHARED;
	if (fixed)
		rf |= RF_FIXED;
	record(a, fixed ? seq : next_seq(a), AK_MMAP, (uint64_t)(uintptr_t)r, len, 0, ra, rf, (uint32_t)prot, path, plen);
	if (fixed)
		released((uint64_t)(uintptr_t)r, len);
	errno = e;
	return r;
}

INTERPOSE void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap_common(addr, len, prot, flags, fd, off, RA());
}

INTERPOSE void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap_common(addr, len, prot, flags, fd, off, RA());
}

INTERPOSE int munmap(void *addr, size_t len)
{
	ENTER(a);
	uint64_t ra = RA();
	if (pass(a) || !should_record(a, ra))
		return NX(N_MUNMAP, munmap_fn)(addr, len);
	uint64_t seq = next_seq(a);
	a->depth++;
	int r = NX(N_MUNMAP, munmap_fn)(addr, len);
	a->depth--;
	if (r == 0) {
		record_blk(a, seq, AK_MUNMAP, (uint64_t)(uintptr_t)addr, len, 0, ra);
		released((uint64_t)(uintptr_t)addr, len);
	}
	return r;
}

INTERPOSE void *mremap(void *old, size_t oldlen, size_t len, int flags, ...)
{
	ENTER(a);
	va_list ap;
	void *na = NULL, *r;
	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		na = va_arg(ap, void *);
		va_end(ap);
	}
	uint64_t ra = RA();
	if (pass(a) || !should_record(a, ra))
		return NX(N_MREMAP, mremap_fn)(old, oldlen, len, flags, na);
	uint64_t seq = next_seq(a);
	a->depth++;
	r = NX(N_MREMAP, mremap_fn)(old, oldlen, len, flags, na);
	a->depth--;
	if (r == MAP_FAILED)
		return r;
	record(a, seq, AK_MREMAP, (uint64_t)(uintptr_t)r, len, (uint64_t)(uintptr_t)old, ra,
	       (flags & MREMAP_FIXED) ? RF_FIXED : 0, 0, NULL, 0);
	if (r != old && !(flags & MREMAP_DONTUNMAP))
		released((uint64_t)(uintptr_t)old, oldlen);
	else if (len < oldlen)
		released((uint64_t)(uintptr_t)old + len, oldlen - len);
	return r;
}

/* ------------------------------------------------------------------ */
/* C++ operators new and delete                                        */

/* What operator new does when libstdc++'s cannot be found (a program
 * whose libstdc++ is in a dlopen'ed plugin's local scope): malloc, the
 * new handler, bad_alloc. */
static void *new_fallback(size_t n, size_t align, int nothrow)
{
	for (;;) {
		void *p = align ? NX(N_MEMALIGN, memalign_fn)(align, n ? n : 1) : NX(N_MALLOC, malloc_fn)(n ? n : 1);
		if (p || nothrow)
			return p;
		void (*(*get)(void))(void) = dlsym ? (void (*(*)(void))(void))dlsym(RTLD_DEFAULT, "_ZSt15get_new_handlerv") : NULL;
		void (*h)(void) = get ? get() : NULL;
		if (!h) {
			void (*thr)(void) = dlsym ? (void (*)(void))dlsym(RTLD_DEFAULT, "_ZSt17__throw_bad_allocv") : NULL;
			if (thr)
				thr();
			const char *m[] = {"vptrace: operator new: out of memory\n", NULL};
			char buf[64];
			vrt_say(buf, sizeof buf, m);
			sc3(SYS_kill, sys_getpid(), SIGABRT, 0);
			sc3(SYS_exit_group, 127, 0, 0);
		}
		h();
	}
}

static const char nothrow_arg; /* std::nothrow is an empty object: its address is all */

/* operator new (size, align: 0 for the plain ones): the next nothrow one
 * with the depth raised (nothing it calls is recorded); if it fails, the
 * next throwing one (the new handler, bad_alloc) outside the depth, so
 * that an exception cannot leave it raised. */
static void *new_common(int nt, int th, uint16_t kind, size_t n, size_t align, int nothrow, uint64_t ra)
{
	ENTER(a);
	void *p;
	int rec = !pass(a) && should_record(a, ra);
	if (!rec) {
		if (nothrow) {
			void *f = nx_cxx(nt);
			if (!f)
				return new_fallback(n, align, 1);
			return align ? ((new_al_nt_fn)f)(n, align, &nothrow_arg) : ((new_nt_fn)f)(n, &nothrow_arg);
		}
		void *f = nx_cxx(th);
		if (!f)
			return new_fallback(n, align, 0);
		return align ? ((new_al_fn)f)(n, align) : ((new_fn)f)(n);
	}
	void *f = nx_cxx(nt);
	a->depth++;
	if (f)
		p = align ? ((new_al_nt_fn)f)(n, align, &nothrow_arg) : ((new_nt_fn)f)(n, &nothrow_arg);
	else
		p = new_fallback(n, align, 1);
	a->depth--;
	if (!p && !nothrow) {
		void *g = nx_cxx(th);
		p = g ? (align ? ((new_al_fn)g)(n, align) : ((new_fn)g)(n)) : new_fallback(n, align, 0);
	}
	if (p)
		record_blk(a, next_seq(a), kind, (uint64_t)(uintptr_t)p, n, 0, ra);
	return p;
}

INTERPOSE void *_Znwm(size_t n) { return new_common(N_NEW_NT, N_NEW, AK_NEW, n, 0, 0, RA()); }
INTERPOSE void *_Znam(size_t n) { return new_common(N_NEWA_NT, N_NEWA, AK_NEW_ARRAY, n, 0, 0, RA()); }
INTERPOSE void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt)
{
	(void)nt;
	return new_common(N_NEW_NT, N_NEW, AK_NEW, n, 0, 1, RA());
}
INTERPOSE void *_ZnamRKSt9nothrow_t(size_t n, const void *nt)
{
	(void)nt;
	return new_common(N_NEWA_NT, N_NEWA, AK_NEW_ARRAY, n, 0, 1, RA());
}
INTERPOSE void *_ZnwmSt11align_val_t(size_t n, size_t al) { return new_common(N_NEW_AL_NT, N_NEW_AL, AK_NEW, n, al, 0, RA()); }
INTERPOSE void *_ZnamSt11align_val_t(size_t n, size_t al) { return new_common(N_NEWA_AL_NT, N_NEWA_AL, AK_NEW_ARRAY, n, al, 0, RA()); }
INTERPOSE void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt)
{
	(void)nt;
	return new_common(N_NEW_AL_NT, N_NEW_AL, AK_NEW, n, al, 1, RA());
}
INTERPOSE void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt)
{
	(void)nt;
	return new_common(N_NEWA_AL_NT, N_NEWA_AL, AK_NEW_ARRAY, n, al, 1, RA());
}

/* operator delete: the next one of the same signature (else the plain
 * one, else free); size and align as the caller gave them (0: none) */
enum { DS_PLAIN, DS_SIZED, DS_ALIGNED, DS_SIZED_ALIGNED, DS_NOTHROW, DS_ALIGNED_NOTHROW };

static void del_call(int i, int plain, int shape, void *p, size_t size, size_t align)
{
	void *f = nx_cxx(i);
	if (!f) {
		f = nx_cxx(plain);
		shape = DS_PLAIN;
	}
	if (!f) {
		NX(N_FREE, free_fn)(p);
		return;
	}
	switch (shape) {
	case DS_PLAIN: ((del_fn)f)(p); break;
	case DS_SIZED: ((del_sz_fn)f)(p, size); break;
	case DS_ALIGNED: ((del_sz_fn)f)(p, align); break;
	case DS_SIZED_ALIGNED: ((del_sz_al_fn)f)(p, size, align); break;
	case DS_NOTHROW: ((del_nt_fn)f)(p, &nothrow_arg); break;
	case DS_ALIGNED_NOTHROW: ((del_al_nt_fn)f)(p, align, &nothrow_arg); break;
	}
}

static void del_common(int i, int plain, int shape, uint16_t kind, void *p, size_t size, size_t align, uint64_t ra)
{
	if (!p) {
		del_call(i, plain, shape, p, size, align);
		return;
	}
	ENTER(a);
	if (pass(a) || !should_record(a, ra)) {
		del_call(i, plain, shape, p, size, align);
		return;
	}
	size_t sz = usable(p);
	uint64_t seq = next_seq(a);
	a->depth++;
	del_call(i, plain, shape, p, size, align);
	a->depth--;
	record_blk(a, seq, kind, (uint64_t)(uintptr_t)p, 0, 0, ra);
	if (sz >= 4096)
		released((uint64_t)(uintptr_t)p, sz);
}

INTERPOSE void _ZdlPv(void *p) { del_common(N_DEL, N_DEL, DS_PLAIN, AK_DELETE, p, 0, 0, RA()); }
INTERPOSE void _ZdaPv(void *p) { del_common(N_DELA, N_DELA, DS_PLAIN, AK_DELETE_ARRAY, p, 0, 0, RA()); }
INTERPOSE void _ZdlPvm(void *p, size_t n) { del_common(N_DEL_SZ, N_DEL, DS_SIZED, AK_DELETE, p, n, 0, RA()); }
INTERPOSE void _ZdaPvm(void *p, size_t n) { del_common(N_DELA_SZ, N_DELA, DS_SIZED, AK_DELETE_ARRAY, p, n, 0, RA()); }
INTERPOSE void _ZdlPvSt11align_val_t(void *p, size_t al) { del_common(N_DEL_AL, N_DEL, DS_ALIGNED, AK_DELETE, p, 0, al, RA()); }
INTERPOSE void _ZdaPvSt11align_val_t(void *p, size_t al) { del_common(N_DELA_AL, N_DELA, DS_ALIGNED, AK_DELETE_ARRAY, p, 0, al, RA()); }
INTERPOSE void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t al)
{
	del_common(N_DEL_SZ_AL, N_DEL, DS_SIZED_ALIGNED, AK_DELETE, p, n, al, RA());
}
INTERPOSE void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t al)
{
	del_common(N_DELA_SZ_AL, N_DELA, DS_SIZED_ALIGNED, AK_DELETE_ARRAY, p, n, al, RA());
}
INTERPOSE void _ZdlPvRKSt9nothrow_t(void *p, const void *nt)
{
	(void)nt;
	del_common(N_DEL_NT, N_DEL, DS_NOTHROW, AK_DELETE, p, 0, 0, RA());
}
INTERPOSE void _ZdaPvRKSt9nothrow_t(void *p, const void *nt)
{
	(void)nt;
	del_common(N_DELA_NT, N_DELA, DS_NOTHROW, AK_DELETE_ARRAY, p, 0, 0, RA());
}
INTERPOSE void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt)
{
	(void)nt;
	del_common(N_DEL_AL_NT, N_DEL, DS_ALIGNED_NOTHROW, AK_DELETE, p, 0, al, RA());
}
INTERPOSE void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt)
{
	(void)nt;
	del_common(N_DELA_AL_NT, N_DELA, DS_ALIGNED_NOTHROW, AK_DELETE_ARRAY, p, 0, al, RA());
}

/* ------------------------------------------------------------------ */
/* hooks for the rest of the runtime                                   */

HIDDEN void vrt_alloc_enter(void) { vrt_at.depth++; }
HIDDEN void vrt_alloc_leave(void) { vrt_at.depth--; }
HIDDEN int vrt_alloc_inside(void) { return vrt_at.depth != 0 || (vrt_at.flags & AT_APPEND); }
HIDDEN int vrt_alloc_in_effect(void) { return LOAD(&aeffect); }

/* Every thread's pending records to the file: the caller's own (unless it
 * is appending: a signal handler), then the others'. final: the exit
 * flush; records made after it are written as they come. */
HIDDEN void vrt_alloc_flush_all(int final)
{
	struct athread *a = &vrt_at;
	if (final)
		STORE(&afinal, 1);
	if (LOAD(&aoff) || !can_write())
		return;
	if (a->buf && !(a->flags & AT_APPEND)) {
		a->flags |= AT_APPEND;
		flush_own(a->buf, 0);
		a->flags &= ~AT_APPEND;
	}
	steal_all();
}

HIDDEN int vrt_alloc_pending(void)
{
	for (struct abuf *b = LOADA(&abufs); b; b = b->next)
		if (LOAD(&b->state) == AB_OWNED && LOAD(&b->used) > (uint32_t)LOAD(&b->claim))
			return 1;
	return 0;
}

/* The calling thread exits: its records (FINAL), its buffer back to the list. */
HIDDEN void vrt_alloc_thread_exit(void)
{
	struct athread *a = &vrt_at;
	struct abuf *b = a->buf;
	if (a->flags & AT_APPEND)
		return;
	a->flags |= AT_APPEND | AT_EXITED;
	if (b) {
		flush_own(b, VPTRACE_ALLOCS_FINAL);
		a->lost = 0;
		a->buf = NULL;
		STORE(&b->lost, 0);
		STORE(&b->serial, 0);
		STORE(&b->state, AB_FREE);
	}
	a->flags &= ~AT_APPEND;
}

/* The trace file is open: its first mappings, the note when tracking is
 * off, the records made before. */
HIDDEN void vrt_alloc_file_opened(void)
{
	vrt_maps_chunk(MAPS_START);
	if (!LOAD(&aeffect))
		vrt_note_chunk(VPTRACE_NOTE_WARNING, sys_gettid(), 0,
			       "allocation tracking is off: the program's calls to malloc do not reach the runtime's "
			       "(a static link, or the program or a library loaded before libvptrace defines malloc)");
	if (LOAD(&aoff) || LOAD(&vrt_init_state) != ST_READY)
		return; /* (the runtime's first file: vrt_core_init writes them when it is ready) */
	vrt_alloc_flush_all(0);
}

/* The clock thread, every interval: records to the file (a crash loses
 * at most an interval's), and a MAPS chunk if objects came or went. */
HIDDEN void vrt_alloc_interval(void)
{
	vrt_alloc_flush_all(0);
	vrt_maps_check();
}

/* A fork child: the records in the buffers are the parent's (its file
 * gets them); the forking thread keeps its buffer, emptied, the others'
 * go back to the list. */
HIDDEN void vrt_alloc_child(void)
{
	struct athread *a = &vrt_at;
	for (struct abuf *b = LOADA(&abufs); b; b = b->next) {
		uint64_t old = LOAD(&b->claim) & ~(uint64_t)VPT_CLAIM_CLOSED;
		STORE(&b->used, 0);
		b->nrec = 0;
		enc_reset(&b->enc);
		STORE(&b->lost, 0);
		STORE(&b->serial, 0);
		claim_reopen(b, old);
		if (b == a->buf)
			STORE(&b->tid, sys_gettid());
		else
			STORE(&b->state, AB_FREE);
	}
	a->lost = 0;
	a->flags &= ~AT_APPEND;
	if (!(a->flags & AT_SOLO))
		STORE(&solo_busy, 0); /* (the owner, another thread, is not in the child) */
	STORE(&afinal, 0);
	STORE(&steal_lock, 0);
	vrt_maps_child();
}

static void atfork_child(void)
{
	/* the runtime's own child fixup first, when its handler is not
	 * registered (it runs later otherwise): chunks must go to the
	 * child's file */
	if (LOAD(&vrt_init_state) == ST_READY && !LOAD(&vrt_atfork_registered) && sys_getpid() != vpt_pid) {
		vpt_t.flags |= VTF_INBATCH;
		vrt_child_fixup(0);
		vpt_t.flags &= ~VTF_INBATCH;
	}
	vrt_alloc_child();
}

/* Whether the program's calls to malloc reach the runtime's: libc's
 * (asprintf allocates its result with malloc, through libc's PLT: the
 * lookup every object's calls get). Not a call from here: libvptrace.so
 * binds its own references to itself (-Bsymbolic). */
static int probe(void)
{
	struct athread *a = &vrt_at;
	char *s = NULL;
	int hit;
	STORE(&probe_hit, 0);
	a->flags |= AT_PROBE;
	if (asprintf(&s, "%d", 12345) < 0)
		s = NULL;
	a->flags &= ~AT_PROBE;
	hit = LOAD(&probe_hit);
	if (s) {
		/* freed by the free that matches the malloc that made it */
		void (*f)(void *) = hit || !dlsym ? NX(N_FREE, free_fn) : (void (*)(void *))dlsym(RTLD_DEFAULT, "free");
		if (f)
			f(s);
	}
	return hit;
}

#ifndef VPT_SPLIT
/* the dynamic loader's executable segment, from its ELF header at
 * AT_BASE; 0 when there is none (a static program) */
static int loader_text(void)
{
	uint64_t base = getauxval(AT_BASE), lo, hi;
	if (!base)
		return 0;
	text_span((const ElfW(Ehdr) *)(uintptr_t)base, &lo, &hi);
	if (lo >= hi)
		return 0;
	ld_lo = lo;
	ld_hi = hi;
	return 1;
}
#endif

static int env_off(const char *name)
{
	static const char *const offs[] = {"0", "off", "no", "false", "disable", "disabled", NULL};
	const char *s = getenv(name);
	if (!s)
		return 0;
	for (const char *const *v = offs; *v; v++) {
		const char *x = s, *y = *v;
		while (*x && *y && (*x | 0x20) == *y)
			x++, y++;
		if (!*x && !*y)
			return 1;
	}
	return 0;
}

/* Configuration (VPTRACE=off, VPTRACE_ALLOCS=0: nothing recorded), the
 * probe, the fork handler. Before this, the records of the dynamic
 * loader's and libc's start-up are kept (nothing can be decided yet). */
__attribute__((constructor(101))) static void alloc_init(void)
{
	struct athread *a = &vrt_at;
	if (!LOAD(&nx_done))
		resolve();
	a->depth++;
	if (env_off("VPTRACE") || env_off("VPTRACE_ALLOCS"))
		STORE(&aoff, 1);
	else if (!probe())
		STORE(&aeffect, 0), STORE(&aoff, 1);
	if (!LOAD(&aoff))
		seq_init(a); /* (before the Go runtime's threads: see seq_init) */
	if (LOAD(&aoff)) {
		for (struct abuf *b = LOADA(&abufs); b; b = b->next) {
			STORE(&b->used, 0);
			b->nrec = 0;
			enc_reset(&b->enc);
		}
	}
	pthread_atfork(NULL, NULL, atfork_child);
	a->depth--;
	STORE(&aready, 1);
	/* In a libvptrace.so with its Go half linked in (not VPT_SPLIT, whose
	 * Go half is loaded later, by a runtime thread) the Go runtime's
	 * constructor runs next (the .init_array after this one's priority):
	 * it creates the Go runtime's
	 * first thread, and the dynamic loader allocates that thread's TLS
	 * vector (calloc, from ld.so) on this thread. The main thread's next
	 * allocator call, if it comes from the loader, is that one. */
#ifndef VPT_SPLIT
	if (!rt_archive && !LOAD(&aoff) && loader_text())
		a->flags |= AT_GODTV;
#endif
}

/*
 * oracle.h: the drivers' side of the vptrace accuracy workloads.
 *
 * A workload is a kernel translation unit (<name>_kern.c, the only code
 * hijack instruments) and a driver (<name>_drv.c, never instrumented). The
 * driver allocates the data, runs the kernels on its threads and, knowing
 * what each kernel does, computes per thread the exact set of pages the
 * kernel code touched: the oracle. It never looks at the trace.
 *
 * The oracle file (path in $VPTRACE_ORACLE; nothing is written when it is
 * unset) is text, one record per line, addresses in 0x hex:
 *
 *   vptrace-oracle 1
 *   workload NAME
 *   thread NAME TID                   a driver thread; TID is gettid()
 *   region NAME BASE LEN              an allocation, for naming pages in reports
 *   need THREAD PAGE COUNT KIND       pages PAGE .. PAGE+COUNT-1 (4 KiB) were touched by
 *                                     the thread's kernel code; KIND: r, w or rw (what the
 *                                     code did; rw also for mixed or unknown)
 *   stack THREAD PAGE COUNT KIND      like need, for stack memory: required only when the
 *                                     rewriter was told to trace stack accesses (usestack)
 *   allow THREAD PAGE COUNT           pages the thread may have touched (the oracle cannot
 *                                     tell), e.g. its stack with usestack, or a PDES pool
 *   note TEXT                         anything else worth printing on a failure
 *
 * Everything here is static: include it from the driver only.
 */
#ifndef VPT_ORACLE_H
#define VPT_ORACLE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ORC_PAGE 4096u
#define ORC_R 1u
#define ORC_W 2u
#define ORC_RW 3u
#define ORC_STACK 4u  /* required only with usestack */
#define ORC_ALLOW 8u  /* may be touched */

typedef struct {
	uint64_t *key; /* page number + 1; 0 = empty */
	uint8_t *kind;
	size_t cap, n;
} orc_set;

typedef struct {
	char name[40];
	int tid;
	orc_set pages;
} orc_thr;

#define ORC_MAXTHR 256
#define ORC_MAXREG 1024

static struct {
	const char *workload;
	orc_thr *thr[ORC_MAXTHR];
	int nthr;
	struct {
		char name[48];
		uintptr_t base;
		size_t len;
	} reg[ORC_MAXREG];
	int nreg;
	char *notes;
	size_t nnotes;
} orc;

static __attribute__((unused)) void orc_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "driver: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static __attribute__((unused)) void *orc_xmalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p)
		orc_die("out of memory (%zu bytes)", n);
	return p;
}

static __attribute__((unused)) int orc_enabled(void)
{
	static int on = -1;
	if (on < 0) {
		const char *p = getenv("VPTRACE_ORACLE");
		on = p && *p;
	}
	return on;
}

static __attribute__((unused)) int orc_gettid(void) { return (int)syscall(SYS_gettid); }

static __attribute__((unused)) void orc_workload(const char *name) { orc.workload = name; }

/* orc_thread registers a driver thread by name and kernel TID. */
static __attribute__((unused)) orc_thr *orc_thread(const char *name, int tid)
{
	if (orc.nthr == ORC_MAXTHR)
		orc_die("too many oracle threads");
	orc_thr *t = orc_xmalloc(sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", name);
	t->tid = tid;
	orc.thr[orc.nthr++] = t;
	return t;
}

static __attribute__((unused)) void orc_region(const char *name, const void *base, size_t len)
{
	if (orc.nreg == ORC_MAXREG)
		orc_die("too many oracle regions");
	snprintf(orc.reg[orc.nreg].name, sizeof orc.reg[orc.nreg].name, "%s", name);
	orc.reg[orc.nreg].base = (uintptr_t)base;
	orc.reg[orc.nreg].len = len;
	orc.nreg++;
}

static __attribute__((unused)) void orc_note(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n >= (int)sizeof buf)
		n = sizeof buf - 1;
	orc.notes = realloc(orc.notes, orc.nnotes + n + 7);
	if (!orc.notes)
		orc_die("out of memory");
	memcpy(orc.notes + orc.nnotes, "note ", 5);
	memcpy(orc.notes + orc.nnotes + 5, buf, n);
	orc.nnotes += 5 + n;
	orc.notes[orc.nnotes++] = '\n';
	orc.notes[orc.nnotes] = 0;
}

static __attribute__((unused)) inline uint64_t orc_hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static __attribute__((unused)) void orc_set_add(orc_set *s, uint64_t page, unsigned kind)
{
	if (2 * (s->n + 1) > s->cap) {
		orc_set old = *s;
		s->cap = old.cap ? 2 * old.cap : 1024;
		s->key = orc_xmalloc(s->cap * sizeof *s->key);
		s->kind = orc_xmalloc(s->cap);
		s->n = 0;
		for (size_t i = 0; i < old.cap; i++)
			if (old.key[i])
				orc_set_add(s, old.key[i] - 1, old.kind[i]);
		free(old.key);
		free(old.kind);
	}
	size_t m = s->cap - 1, i = orc_hash(page) & m;
	while (s->key[i] && s->key[i] != page + 1)
		i = (i + 1) & m;
	if (!s->key[i]) {
		s->key[i] = page + 1;
		s->n++;
	}
	s->kind[i] |= (uint8_t)kind;
}

/* orc_touch records that the thread's kernel code accessed the bytes
 * [p, p+len) with kind ORC_R, ORC_W or both (| ORC_STACK for stack
 * memory; ORC_ALLOW alone: may have accessed). len 0 touches nothing. */
static __attribute__((unused)) void orc_touch(orc_thr *t, const void *p, size_t len, unsigned kind)
{
	if (!orc_enabled() || len == 0)
		return;
	uint64_t a = (uintptr_t)p, first = a / ORC_PAGE, last = (a + len - 1) / ORC_PAGE;
	for (uint64_t pg = first; pg <= last; pg++)
		orc_set_add(&t->pages, pg, kind);
}

static __attribute__((unused)) void orc_allow(orc_thr *t, const void *p, size_t len) { orc_touch(t, p, len, ORC_ALLOW); }

/* orc_stack_self returns the calling thread's stack range. */
static __attribute__((unused)) void orc_stack_self(uintptr_t *lo, uintptr_t *hi)
{
	pthread_attr_t a;
	void *addr = 0;
	size_t size = 0;
	*lo = *hi = 0;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return;
	if (pthread_attr_getstack(&a, &addr, &size) == 0) {
		*lo = (uintptr_t)addr;
		*hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&a);
}

/* A thread's identity and stack, filled in by the thread itself. */
typedef struct {
	int tid;
	uintptr_t stk_lo, stk_hi;
} orc_self;

static __attribute__((unused)) void orc_self_init(orc_self *s)
{
	s->tid = orc_gettid();
	orc_stack_self(&s->stk_lo, &s->stk_hi);
}

/* The read-only data segments (.rodata and friends) of the executable
 * and of the libraries loaded with it: the compiler's constant pools
 * (vector masks, floating-point constants, jump tables) live there, in the
 * object of the kernel that reads them (the program's, or a shared
 * library's when a kernel is built into one), and kernels read them
 * without the driver knowing where. Every thread may touch them. */
static int orc_rodata_named;

struct orc_rodata_arg {
	orc_thr *t;
	int obj;  /* objects seen: 0 is the executable */
	int name; /* name the regions (the first call) */
};

static int orc_rodata_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct orc_rodata_arg *ra = arg;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && !(ph->p_flags & (PF_W | PF_X))) {
			uintptr_t a = info->dlpi_addr + ph->p_vaddr;
			orc_allow(ra->t, (void *)a, ph->p_memsz);
			if (ra->name) {
				char rn[32];
				if (ra->obj == 0)
					snprintf(rn, sizeof rn, "exe.readonly%d", i);
				else
					snprintf(rn, sizeof rn, "lib%d.readonly%d", ra->obj, i);
				orc_region(rn, (void *)a, ph->p_memsz);
			}
		}
	}
	ra->obj++;
	return 0;
}

static __attribute__((unused)) void orc_allow_rodata(orc_thr *t)
{
	struct orc_rodata_arg ra = {t, 0, !orc_rodata_named};
	dl_iterate_phdr(orc_rodata_cb, &ra);
	orc_rodata_named = 1;
}

/* orc_thread_self registers a thread from its orc_self and allows its
 * stack (the kernels' frames, traced with usestack). */
static __attribute__((unused)) orc_thr *orc_thread_self(const char *name, const orc_self *s)
{
	orc_thr *t = orc_thread(name, s->tid);
	if (s->stk_hi > s->stk_lo) {
		char rn[48];
		snprintf(rn, sizeof rn, "stack:%s", name);
		orc_region(rn, (void *)s->stk_lo, s->stk_hi - s->stk_lo);
		orc_allow(t, (void *)s->stk_lo, s->stk_hi - s->stk_lo);
	}
	orc_allow_rodata(t);
	return t;
}

static __attribute__((unused)) int orc_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static __attribute__((unused)) const char *orc_kind(unsigned k)
{
	switch (k & ORC_RW) {
	case ORC_R:
		return "r";
	case ORC_W:
		return "w";
	default:
		return "rw";
	}
}

/* orc_write writes the oracle file ($VPTRACE_ORACLE). */
static __attribute__((unused)) void orc_write(void)
{
	if (!orc_enabled())
		return;
	const char *path = getenv("VPTRACE_ORACLE");
	FILE *f = fopen(path, "w");
	if (!f)
		orc_die("cannot create oracle file %s", path);
	fprintf(f, "vptrace-oracle 1\nworkload %s\n", orc.workload ? orc.workload : "?");
	for (int i = 0; i < orc.nthr; i++)
		fprintf(f, "thread %s %d\n", orc.thr[i]->name, orc.thr[i]->tid);
	for (int i = 0; i < orc.nreg; i++)
		fprintf(f, "region %s %#lx %#zx\n", orc.reg[i].name, (unsigned long)orc.reg[i].base, orc.reg[i].len);
	for (int i = 0; i < orc.nthr; i++) {
		orc_thr *t = orc.thr[i];
		orc_set *s = &t->pages;
		/* (page << 8 | kind), sorted */
		uint64_t *v = orc_xmalloc((s->n + 1) * sizeof *v);
		size_t n = 0;
		for (size_t j = 0; j < s->cap; j++)
			if (s->key[j])
				v[n++] = (s->key[j] - 1) << 8 | s->kind[j];
		qsort(v, n, sizeof *v, orc_cmp_u64);
		for (size_t j = 0; j < n;) {
			uint64_t pg = v[j] >> 8;
			unsigned k = v[j] & 0xff;
			size_t e = j + 1;
			while (e < n && (v[e] >> 8) == pg + (e - j) && (v[e] & 0xff) == k)
				e++;
			const char *what = (k & ORC_RW) ? ((k & ORC_STACK) ? "stack" : "need") : "allow";
			if (k & ORC_RW)
				fprintf(f, "%s %s %#lx %zu %s\n", what, t->name, (unsigned long)(pg * ORC_PAGE), e - j, orc_kind(k));
			else
				fprintf(f, "%s %s %#lx %zu\n", what, t->name, (unsigned long)(pg * ORC_PAGE), e - j);
			j = e;
		}
		free(v);
	}
	if (orc.notes)
		fputs(orc.notes, f);
	if (fclose(f) != 0)
		orc_die("writing oracle file %s failed", path);
}

/* ---- allocation helpers ---- */

/* orc_map returns len bytes of fresh zeroed memory starting `skew` bytes
 * after a page boundary (so that arrays need not start on a page), with an
 * inaccessible guard page after it, and names it as a region. */
static __attribute__((unused)) void *orc_map(const char *name, size_t len, size_t skew)
{
	size_t span = (skew + len + ORC_PAGE - 1) / ORC_PAGE * ORC_PAGE;
	char *p = mmap(0, span + ORC_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		orc_die("mmap %zu bytes for %s failed", span, name);
	if (mprotect(p + span, ORC_PAGE, PROT_NONE) != 0)
		orc_die("mprotect guard for %s failed", name);
	orc_region(name, p + skew, len);
	return p + skew;
}

/* A small deterministic PRNG (splitmix64) for placements and data. */
static __attribute__((unused)) inline uint64_t orc_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* orc_scale parses argv[1] as a positive size factor (default 1). */
static __attribute__((unused)) long orc_scale(int argc, char **argv)
{
	if (argc < 2)
		return 1;
	long s = atol(argv[1]);
	if (s <= 0)
		orc_die("usage: %s [SCALE]", argv[0]);
	return s;
}

static __attribute__((unused)) void orc_check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "driver: wrong result: %s\n", what);
		printf("FAIL %s\n", what);
		exit(1);
	}
}

#endif

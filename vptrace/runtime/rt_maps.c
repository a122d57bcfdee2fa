//go:build !vptgohalf

/*
 * rt_maps.c: the process's mappings (MAPS chunks: /proc/self/maps
 * snapshots) and a thread's stack and TLS blocks (the THREAD chunk's
 * ranges); FORMAT.md, format 1.3 (the vptrace runtime's C half:
 * rt_state.c, rt.h).
 *
 * Snapshots are read with raw system calls into mappings of the
 * runtime's own (no malloc, no stdio), one at a time: when the file is
 * opened (START), when the dynamic loader's counts of objects loaded and
 * unloaded (dl_iterate_phdr's dlpi_adds, dlpi_subs) changed since the
 * last one (DLOPEN, DLCLOSE: checked every interval by the clock thread,
 * when an instrumented object registers and at vptrace_flush), and at
 * exit (EXIT). dlopen itself is not interposed: the loader searches a
 * library by the RUNPATH of the object calling dlopen, which would be the
 * runtime's.
 */
#define _GNU_SOURCE
#define VPT_RT_C
#include "rt.h"

#include <link.h>
#include <sys/resource.h>

static uint32_t maps_lock; /* the tid snapshotting, or 0 */
static char *mbuf;         /* /proc/self/maps as read */
static size_t mcap;
static uint8_t *obuf;      /* the chunk's entries */
static size_t ocap;
static uint64_t dl_adds, dl_subs;
static int dl_known;

/* Take the snapshot lock; 0 when this thread holds it (a signal handler
 * that interrupted a snapshot). */
static int maps_enter(void)
{
	uint32_t z = 0, me = sys_gettid();
	while (!CAS(&maps_lock, &z, me)) {
		if (z == me)
			return 0;
		z = 0;
		sc3(SYS_sched_yield, 0, 0, 0);
	}
	return 1;
}

static void maps_leave(void)
{
	STORE(&maps_lock, 0);
}

/* grow a buffer of ours to at least n bytes (a fresh mapping) */
static int grow(void **p, size_t *cap, size_t n)
{
	size_t want = *cap ? *cap : 64 << 10;
	long m;
	while (want < n)
		want *= 2;
	if (want == *cap)
		return 1;
	m = sc6(SYS_mmap, 0, (long)want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m < 0 && m > -4096)
		return 0;
	if (*p)
		sc3(SYS_munmap, *p, *cap, 0);
	*p = (void *)m;
	*cap = want;
	return 1;
}

/* /proc/self/maps into mbuf; its length, or 0. With the lock. */
static size_t read_maps(void)
{
	for (;;) {
		size_t n = 0;
		long fd;
		if (!mbuf && !grow((void **)&mbuf, &mcap, 64 << 10))
			return 0;
		fd = sc3(SYS_open, "/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
		if (fd < 0)
			return 0;
		while (n < mcap) {
			long r = sc3(SYS_read, fd, mbuf + n, mcap - n);
			if (r == -EINTR)
				continue;
			if (r <= 0)
				break;
			n += (size_t)r;
		}
		sc3(SYS_close, fd, 0, 0);
		if (n < mcap)
			return n;
		if (!grow((void **)&mbuf, &mcap, mcap * 2))
			return 0;
	}
}

static uint64_t hex(const char **s, const char *end)
{
	uint64_t v = 0;
	for (; *s < end; (*s)++) {
		char c = **s;
		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else
			break;
	}
	return v;
}

static void skip_field(const char **s, const char *end)
{
	while (*s < end && **s != ' ')
		(*s)++;
	while (*s < end && **s == ' ')
		(*s)++;
}

struct mapping {
	uint64_t start, end, offset;
	uint32_t prot;
	const char *path;
	uint32_t plen;
};

/* one line: "start-end rwxp offset dev inode   path"; 0 at the end */
static int next_mapping(const char **s, const char *end, struct mapping *m)
{
	const char *line = *s, *eol = line;
	while (eol < end && *eol != '\n')
		eol++;
	if (line >= end)
		return 0;
	*s = eol < end ? eol + 1 : eol;
	m->start = hex(&line, eol);
	if (line < eol && *line == '-')
		line++;
	m->end = hex(&line, eol);
	while (line < eol && *line == ' ')
		line++;
	m->prot = 0;
	if (eol - line >= 4) {
		m->prot |= line[0] == 'r' ? 1u : 0u;
		m->prot |= line[1] == 'w' ? 2u : 0u;
		m->prot |= line[2] == 'x' ? 4u : 0u;
		m->prot |= line[3] == 's' ? 8u : 0u;
	}
	skip_field(&line, eol);
	m->offset = hex(&line, eol);
	skip_field(&line, eol); /* offset */
	skip_field(&line, eol); /* dev */
	skip_field(&line, eol); /* inode */
	m->path = line;
	m->plen = (uint32_t)(eol - line);
	return 1;
}

static int counts_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	uint64_t *c = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
		c[2] = 1;
	}
	return 1; /* the first object tells */
}

/* the loader's counts of objects loaded and unloaded; 0 if unknown */
static int dl_counts(uint64_t *adds, uint64_t *subs)
{
	uint64_t c[3] = {0, 0, 0};
	dl_iterate_phdr(counts_cb, c);
	*adds = c[0];
	*subs = c[1];
	return (int)c[2];
}

static void snapshot(uint32_t why)
{
	size_t n = read_maps(), off = 16;
	const char *s = mbuf, *end = mbuf + n;
	struct mapping m;
	uint32_t count = 0;
	struct iovec iov[2];
	if (n == 0 || !grow((void **)&obuf, &ocap, 2 * n + 64))
		return;
	while (next_mapping(&s, end, &m)) {
		put64(obuf + off, m.start);
		put64(obuf + off + 8, m.end);
		put64(obuf + off + 16, m.offset);
		put32(obuf + off + 24, m.prot);
		put32(obuf + off + 28, 0);
		put32(obuf + off + 32, m.plen);
		copy_bytes(obuf + off + 36, m.path, m.plen);
		off += 36 + m.plen;
		count++;
	}
	put64(obuf, vpt_now());
	put32(obuf + 8, why);
	put32(obuf + 12, count);
	iov[1].iov_base = obuf;
	iov[1].iov_len = off;
	vrt_write_chunk(CH_MAPS, iov, 2);
}

/* A fork child: a snapshot another thread was taking is not going on. */
HIDDEN void vrt_maps_child(void)
{
	STORE(&maps_lock, 0);
}

/* A MAPS chunk: the mappings now, and why. */
HIDDEN void vrt_maps_chunk(uint32_t why)
{
	uint64_t adds, subs;
	if (!maps_enter())
		return;
	if (dl_counts(&adds, &subs)) {
		dl_adds = adds;
		dl_subs = subs;
		dl_known = 1;
	}
	snapshot(why);
	maps_leave();
}

/* A MAPS chunk if objects were loaded or unloaded since the last one. */
HIDDEN void vrt_maps_check(void)
{
	uint64_t adds, subs;
	if (LOAD(&vrt_trace_fd) < 0 || !maps_enter())
		return;
	if (dl_counts(&adds, &subs) && dl_known && (adds != dl_adds || subs != dl_subs)) {
		uint32_t why = adds != dl_adds ? MAPS_DLOPEN : MAPS_DLCLOSE;
		dl_adds = adds;
		dl_subs = subs;
		snapshot(why);
	}
	maps_leave();
}

/* ------------------------------------------------------------------ */
/* a thread's stack and TLS blocks (the THREAD chunk)                   */

/* The stack from /proc/self/maps: the main thread's "[stack]" down to its
 * limit (RLIMIT_STACK, as far as the mapping below allows, as glibc's
 * pthread_getattr_np says), another thread's the mapping holding its
 * stack pointer; nothing on an alternate signal stack. */
static void stack_from_maps(uint64_t *lo, uint64_t *hi)
{
	stack_t ss;
	struct rlimit rl;
	uint64_t sp = (uint64_t)(uintptr_t)&ss, below = 0;
	struct mapping m;
	if (sc3(SYS_sigaltstack, 0, &ss, 0) == 0 && (ss.ss_flags & SS_ONSTACK))
		return;
	if (!maps_enter())
		return;
	size_t n = read_maps();
	const char *s = mbuf, *end = mbuf + n;
	while (next_mapping(&s, end, &m)) {
		if (sp >= m.start && sp < m.end) {
			*lo = m.start;
			*hi = m.end;
			int main_stack = m.plen == 7 && __builtin_memcmp(m.path, "[stack]", 7) == 0;
			if (main_stack && sc6(SYS_prlimit64, 0, RLIMIT_STACK, 0, (long)&rl, 0, 0) == 0 &&
			    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < m.end) {
				uint64_t l = (m.end - rl.rlim_cur) & ~4095ull;
				*lo = l > below ? l : below;
				if (*lo > m.start)
					*lo = m.start;
			}
			break;
		}
		below = m.end;
	}
	maps_leave();
}

struct tls_acc {
	uint64_t *out;
	uint32_t n, cap;
};

static int tls_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct tls_acc *acc = arg;
	(void)size;
	if (!info->dlpi_tls_data || acc->n >= acc->cap)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type != PT_TLS || info->dlpi_phdr[i].p_memsz == 0)
			continue;
		acc->out[2 * acc->n] = (uint64_t)(uintptr_t)info->dlpi_tls_data;
		acc->out[2 * acc->n + 1] = (uint64_t)(uintptr_t)info->dlpi_tls_data + info->dlpi_phdr[i].p_memsz;
		acc->n++;
		break;
	}
	return 0;
}

/* The calling thread's stack and TLS blocks (up to cap lo,hi pairs in
 * tls; returns how many), for its THREAD chunk, with VTF_INBATCH set (its
 * first event). pthread_getattr_np allocates: it is asked only where an
 * allocator cannot be interrupted on this thread (the runtime's malloc is
 * the program's, and this thread is in no allocator call: a first event
 * in a custom allocator, or in a signal handler interrupting malloc, reads
 * /proc/self/maps instead). dl_iterate_phdr takes the loader's recursive
 * lock and allocates nothing. */
HIDDEN uint32_t vrt_thread_ranges(uint64_t *stack_lo, uint64_t *stack_hi, uint64_t *tls, uint32_t cap)
{
	struct tls_acc acc = {tls, 0, cap};
	*stack_lo = *stack_hi = 0;
	if (vrt_alloc_in_effect() && !vrt_alloc_inside() && vpt_t.depth <= 1) {
		pthread_attr_t at;
		void *addr;
		size_t size;
		int e = errno;
		vrt_alloc_enter();
		if (pthread_getattr_np(pthread_self(), &at) == 0) {
			if (pthread_attr_getstack(&at, &addr, &size) == 0) {
				*stack_lo = (uint64_t)(uintptr_t)addr;
				*stack_hi = (uint64_t)(uintptr_t)addr + size;
			}
			pthread_attr_destroy(&at);
		}
		vrt_alloc_leave();
		errno = e;
	}
	if (*stack_hi == 0)
		stack_from_maps(stack_lo, stack_hi);
	dl_iterate_phdr(tls_cb, &acc);
	return acc.n;
}

//go:build !vptgohalf

/*
 * rt_init.c: initialisation: configuration, the trace file, the clock thread
 * (the vptrace runtime's C half: rt_state.c, rt.h).
 */
#define _GNU_SOURCE
#define VPT_RT_C
#include "rt.h"

#include <link.h>

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

HIDDEN void vrt_utoa(uint64_t v, char *buf)
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

/* expand %p (pid) and %% of vrt_out_pattern into vrt_out_path */
HIDDEN void vrt_expand_path(uint32_t pid)
{
	size_t len = 0;
	char num[24];
	vrt_utoa(pid, num);
	vrt_out_path[0] = 0;
	vrt_out_hasp = 0;
	for (const char *p = vrt_out_pattern; *p; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			append(vrt_out_path, sizeof vrt_out_path, &len, num);
			vrt_out_hasp = 1;
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			append(vrt_out_path, sizeof vrt_out_path, &len, "%");
			p++;
		} else {
			char c[2] = {*p, 0};
			append(vrt_out_path, sizeof vrt_out_path, &len, c);
		}
	}
}

/* The k-th name vrt_open_trace tries for vrt_out_path P (see vptrace.h): k = 0
 * is P; then, with STEM.EXT = P (EXT ".vpt" or nothing), STEM.PID.EXT
 * (k = 1, when P has no %p), and STEM.N.EXT (with %p) or STEM.PID.N.EXT
 * (without) for N = k >= 2. 0 when k = 1 does not apply. */
static int trace_name(int k, uint32_t pid, char *buf, size_t cap)
{
	size_t len = 0, plen = cstrlen(vrt_out_path), stem = plen;
	char num[24];
	if (k == 0) {
		append(buf, cap, &len, vrt_out_path);
		return 1;
	}
	if (k == 1 && vrt_out_hasp)
		return 0;
	if (plen >= 4 && vrt_out_path[plen - 4] == '.' && vrt_out_path[plen - 3] == 'v' && vrt_out_path[plen - 2] == 'p' && vrt_out_path[plen - 1] == 't')
		stem = plen - 4;
	buf[0] = 0;
	for (size_t i = 0; i < stem && len + 1 < cap; i++)
		buf[len++] = vrt_out_path[i];
	buf[len] = 0;
	if (!vrt_out_hasp) {
		vrt_utoa(pid, num);
		append(buf, cap, &len, ".");
		append(buf, cap, &len, num);
	}
	if (k >= 2) {
		vrt_utoa((uint64_t)k, num);
		append(buf, cap, &len, ".");
		append(buf, cap, &len, num);
	}
	append(buf, cap, &len, vrt_out_path + stem);
	return 1;
}

/* errno's description, for messages: "No space left on device (ENOSPC)" */
HIDDEN void vrt_errno_text(int e, char *buf, size_t cap)
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
	vrt_utoa((uint64_t)e, num);
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
HIDDEN void vrt_say(char *buf, size_t cap, const char *const *parts)
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
	put32(b + 12, vrt_crc32c(vrt_crc32c(0, b + 4, 8), b + 16, 16));
}

static char asked_path[4096]; /* vrt_out_path before create_trace moved it */

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
 * vrt_out_path becomes the one created, and a name other than the first
 * (taken) is said once on stderr, and in a note in the trace. With %p in
 * VPTRACE_OUT (a file per process, as for a test suite) a taken name is
 * expected: pids wrap in a long suite, and an exec keeps its pid. Then the
 * next name is taken silently, but for the note: a line on stderr would
 * change what the suite's tests compare. An existing path that is not a regular
 * file (/dev/null, a fifo) is written into: there is nothing there to
 * overwrite. A fork child takes a device its parent writes to, not a fifo
 * (one process per stream). Returns the fd, or -errno. */
static long create_trace(int child)
{
	static char try[4096], msg[8400];
	struct stat st;
	int first = child && !vrt_out_hasp ? 1 : 0;
	long fd;
	make_parents(vrt_out_path);
	if (sc3(SYS_stat, vrt_out_path, &st, 0) == 0 && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (!first || S_ISCHR(st.st_mode))
			return sc3(SYS_open, vrt_out_path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY, 0);
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
			if (!vrt_out_hasp)
				vrt_say(msg, sizeof msg, m);
		}
		copy_bytes(vrt_out_path, try, cstrlen(try) + 1); /* (what a message names) */
		return fd;
	}
	return -EEXIST;
}

/* Create vrt_out_path (create_trace) and write the file magic, the HEADER
 * and the STATUS chunk (vrt_write_failed rewrites it in place). A file whose
 * header could not be written is removed: tracing is off. */
HIDDEN int vrt_open_trace(int child)
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
		const char *m[] = {"vptrace: cannot create trace file ", vrt_out_path, ": ", why, "; tracing is off (set VPTRACE_OUT)\n", NULL};
		vrt_errno_text((int)-fd, why, sizeof why);
		vrt_say(msg, sizeof msg, m);
		return -1;
	}
	vrt_trace_regular = sc3(SYS_fstat, fd, &st, 0) == 0 && S_ISREG(st.st_mode);
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
	put32(h + off + 16, vrt_header_flags);
	put32(h + off + 20, (uint32_t)vrt_cfg_clock_us * 1000u);
	put64(h + off + 24, vrt_start_unix);
	put64(h + off + 32, vrt_start_mono);
	put64(h + off + 40, vrt_open_ns);
	put32(h + off + 48, vrt_cfg_buf_cap);
	put32(h + off + 52, (uint32_t)vrt_cfg_interval_ms);
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
	put32(h + 20, vrt_crc32c(vrt_crc32c(0, h + 12, 8), h + 24, off - 24));
	vrt_status_off = off;
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
		const char *m[] = {"vptrace: cannot write trace file ", vrt_out_path, ": ", why, "; tracing is off\n", NULL};
		vrt_errno_text(r < 0 ? (int)-r : ENOSPC, why, sizeof why);
		vrt_say(msg, sizeof msg, m);
		if (vrt_trace_regular)
			sc3(SYS_unlink, vrt_out_path, 0, 0); /* ours (O_EXCL), and of no use */
		sc3(SYS_close, fd, 0, 0);
		return -1;
	}
	STORE(&vrt_trace_fd, (int)fd);
	if (asked_path[0]) {
		const char *m[] = {asked_path, " exists: this trace is written to ", vrt_out_path, NULL};
		join(msg, sizeof msg, m);
		vrt_note_chunk(VPTRACE_NOTE_WARNING, sys_gettid(), 0, msg);
	}
	vrt_alloc_file_opened(); /* MAPS START (rt_alloc.c) */
	return 0;
}

/* A write to the trace failed (err: errno): the trace is incomplete. Said
 * once, on stderr (the only place sure to be seen) and in the file: its
 * STATUS chunk is rewritten in place, through a descriptor without
 * O_APPEND (pwrite on an O_APPEND one appends), which needs no new space
 * on a full file system. The END chunk carries it too, if one can still
 * be written. Async-signal-safe (raw system calls, once). */
HIDDEN void vrt_write_failed(int err)
{
	static char msg[8400], why[128], proc[64];
	const char *m[] = {"vptrace: cannot write trace file ", vrt_out_path, ": ", why, "; the trace is incomplete\n", NULL};
	uint8_t st[32];
	struct stat a, b;
	size_t len = 0;
	char num[24];
	long fd;
	int none = 0;
	if (err <= 0 || !CAS(&vrt_write_errno, &none, err))
		return;
	vrt_errno_text(err, why, sizeof why);
	vrt_say(msg, sizeof msg, m);
	if (!vrt_trace_regular)
		return;
	vrt_utoa((uint64_t)LOAD(&vrt_trace_fd), num);
	append(proc, sizeof proc, &len, "/proc/self/fd/");
	append(proc, sizeof proc, &len, num);
	fd = sc3(SYS_open, proc, O_WRONLY | O_CLOEXEC, 0);
	if (fd < 0) {
		/* no /proc: the path, if it still is our file */
		fd = sc3(SYS_open, vrt_out_path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0);
		if (fd >= 0 && (sc3(SYS_fstat, fd, &a, 0) != 0 || sc3(SYS_fstat, LOAD(&vrt_trace_fd), &b, 0) != 0 ||
				a.st_dev != b.st_dev || a.st_ino != b.st_ino)) {
			sc3(SYS_close, fd, 0, 0);
			fd = -1;
		}
	}
	if (fd < 0)
		return;
	status_chunk(st, VPTRACE_STATUS_WRITE_ERROR, (uint32_t)err);
	sc6(SYS_pwrite64, fd, (long)st, sizeof st, (long)vrt_status_off, 0, 0);
	sc3(SYS_close, fd, 0, 0);
}

/* for the Go consumer: its writes failed */
void vpt_write_failed(int err)
{
	vrt_write_failed(err);
}

int vpt_write_errno(void)
{
	return LOAD(&vrt_write_errno);
}

static void read_config(void)
{
	static const char *const off[] = {"off", "0", "no", "false", "disable", "disabled", NULL};
	static const char *const stopped[] = {"stopped", "stop", "0", "no", "off", NULL};
	static const char *const yes[] = {"1", "yes", "true", "on", NULL};
	static const char *const zero[] = {"0", NULL}; /* (as the Go aggregator reads VPTRACE_COMPRESS) */
	const char *out = getenv("VPTRACE_OUT");
	size_t len = 0;
	int kb;

	if (env_is("VPTRACE", off)) {
		STORE(&vpt_hot.active, 0);
		STORE(&vrt_init_state, ST_OFF);
		return;
	}
	vrt_cfg_interval_ms = env_int("VPTRACE_INTERVAL_MS", 100, 1, 3600000);
	vrt_cfg_clock_us = env_int("VPTRACE_CLOCK_US", 1000, 0, 1000000);
	kb = env_int("VPTRACE_BUFKB", 64, 4, 65536);
	vrt_cfg_buf_bytes = ((size_t)kb * 1024 + 4095) & ~(size_t)4095;
	vrt_cfg_buf_cap = (uint32_t)((vrt_cfg_buf_bytes - VPT_BUF_HDR) / VPT_EV_SIZE);
	vrt_cfg_max_bytes = (uint64_t)env_int("VPTRACE_MAXMB", 1024, 1, 1 << 20) << 20;
	vrt_cfg_backlog = (uint32_t)env_int("VPTRACE_BACKLOG", 256, 1, 1 << 20);
	vrt_cfg_backlog_wait_ms = env_int("VPTRACE_BACKLOG_WAIT_MS", 1000, 0, 600000);
	vrt_cfg_compress = !env_is("VPTRACE_COMPRESS", zero);
	vrt_cfg_exit_timeout_ms = env_int("VPTRACE_EXIT_TIMEOUT_MS", 5000, 0, 600000);
	if (env_is("VPTRACE_RAW", yes)) {
		vrt_mode = MODE_C;
		vrt_header_flags |= VPTRACE_HDR_RAW;
	}
	if (env_is("VPTRACE_START", stopped)) {
		STORE(&vpt_hot.active, 0);
		vrt_header_flags |= VPTRACE_HDR_STOPPED;
	}
	if (!out || !*out)
		out = "vptrace.%p.vpt";
	if (out[0] != '/') {
		static char cwd[2048];
		long r = sc3(SYS_getcwd, cwd, sizeof cwd, 0);
		if (r > 0) {
			append(vrt_out_pattern, sizeof vrt_out_pattern, &len, cwd);
			if (len && vrt_out_pattern[len - 1] != '/')
				append(vrt_out_pattern, sizeof vrt_out_pattern, &len, "/");
		}
	}
	append(vrt_out_pattern, sizeof vrt_out_pattern, &len, out);
}

static void *clock_main(void *arg);

/* The static TLS of the objects loaded so far: the sum of their PT_TLS
 * segments, each rounded to its alignment (an estimate of glibc's static
 * TLS block, which it puts in every thread's stack). */
static int add_tls(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_TLS)
			*(size_t *)data += ph->p_memsz + (ph->p_align ? ph->p_align : 1);
	}
	return 0;
}

static size_t static_tls_size(void)
{
	size_t n = 4096; /* (and the TCB, the surplus glibc reserves) */
	dl_iterate_phdr(add_tls, &n);
	return (n + 4095) & ~(size_t)4095;
}

/* Parts of the initialisation that are not async-signal-safe: run from
 * normal contexts (vpt_register, the C API, the Go consumer, fork child). */
HIDDEN void vrt_late_init(void)
{
	static int atfork_done;
	int pid = (int)LOAD(&vpt_pid);
	if (LOAD(&vrt_init_state) != ST_READY || LOAD(&vrt_late_done_pid) == pid)
		return;
	if (vpt_t.flags & VTF_INBATCH)
		return;
	STORE(&vrt_late_done_pid, pid);
	vrt_alloc_enter(); /* (what libc allocates here is the runtime's) */
	if (!XCHG(&atfork_done, 1) && pthread_atfork(NULL, NULL, vrt_atfork_child) == 0)
		STORE(&vrt_atfork_registered, 1);
	if (vrt_cfg_clock_us > 0) {
		pthread_t th;
		pthread_attr_t a;
		sigset_t all, old;
		int err;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&a, 64 * 1024);
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		err = pthread_create(&th, &a, clock_main, NULL);
		if (err == EINVAL) {
			/* glibc puts the static TLS in the thread's stack: a
			 * program with more than 64 KB of it (instrumented
			 * objects' slot arrays: 260 KB in zstd) needs more */
			pthread_attr_setstacksize(&a, 64 * 1024 + static_tls_size());
			err = pthread_create(&th, &a, clock_main, NULL);
		}
		if (err == 0)
			STORE(&vrt_clock_pid, (uint32_t)pid);
		else
			vrt_warn_once(W_CLOCK, (uint64_t)err,
				      "the clock thread could not be started (value: errno): event times move only when "
				      "buffers are handed over, and a page is recorded once per thread, not once per interval");
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&a);
	}
#ifdef VPT_SPLIT
	if (LOAD(&vrt_clock_pid) != (uint32_t)pid)
		vrt_go_load(); /* no clock thread to load it when needed */
#endif
	vrt_alloc_leave();
}

/* Core initialisation: configuration, trace file. Async-signal-safe enough
 * (getenv, raw system calls). Returns the state. */
HIDDEN int vrt_core_init(void)
{
	int st = LOAD(&vrt_init_state), exp = ST_NONE;
	if (st == ST_READY || st == ST_OFF)
		return st;
	if (!CAS(&vrt_init_state, &exp, ST_BUSY)) {
		/* another thread initialises; wait unless it is us (re-entered) */
		if (vpt_t.flags & VTF_INIT)
			return ST_BUSY;
		while ((st = LOAD(&vrt_init_state)) == ST_BUSY)
			sc3(SYS_sched_yield, 0, 0, 0);
		return st;
	}
	vpt_t.flags |= VTF_INIT;
	vrt_start_mono = clock_ns(CLOCK_MONOTONIC);
	vrt_start_unix = clock_ns(CLOCK_REALTIME);
	vpt_pid = sys_getpid();
	vpt_ppid = (uint32_t)sc3(SYS_getppid, 0, 0, 0);
	read_config();
	if (LOAD(&vrt_init_state) == ST_OFF) {
		vpt_t.flags &= ~VTF_INIT;
		return ST_OFF;
	}
	vrt_expand_path(vpt_pid);
	if (vrt_open_trace(0) < 0) {
		STORE(&vpt_hot.active, 0);
		STORE(&vrt_init_state, ST_OFF);
		vpt_t.flags &= ~VTF_INIT;
		return ST_OFF;
	}
	STORE(&vrt_init_state, ST_READY);
	vrt_dump_objects();
	vpt_t.flags &= ~VTF_INIT;
	vrt_alloc_flush_all(0); /* allocations recorded before the file was open */
	return ST_READY;
}

HIDDEN int vrt_init_normal(void)
{
	int st = vrt_core_init();
	if (st == ST_READY)
		vrt_late_init();
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
	uint64_t interval = (uint64_t)vrt_cfg_interval_ms * 1000000ull, next = LOAD(&vpt_hot.clock) + interval;
	(void)arg;
	vpt_t.flags |= VTF_RUNTIME | VTF_INBATCH;
	sc6(SYS_prctl, PR_SET_NAME, (long)"vptrace-clock", 0, 0, 0, 0);
	for (;;) {
		struct timespec ts = {vrt_cfg_clock_us / 1000000, (long)(vrt_cfg_clock_us % 1000000) * 1000L};
		sc3(SYS_nanosleep, &ts, 0, 0);
		if (LOAD(&vpt_pid) != pid)
			return NULL; /* (never: a fork child has no copy of this thread) */
		int interval_end = 0;
		vrt_clock_bump();
		if (LOAD(&vpt_hot.clock) >= next) {
			vrt_epoch_bump();
			next = LOAD(&vpt_hot.clock) + interval;
			vrt_alloc_interval(); /* allocation records, MAPS after a dlopen (rt_alloc.c) */
			interval_end = 1;
		}
#ifdef VPT_SPLIT
		vrt_go_tick(interval_end);
#else
		(void)interval_end;
#endif
	}
}

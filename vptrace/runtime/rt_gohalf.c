//go:build !vptgohalf

/*
 * rt_gohalf.c: loading the aggregator, the Go half, when a process first
 * needs it (libvptrace.so only; the vptrace runtime's C half: rt_state.c,
 * rt.h).
 *
 * libvptrace.a links the Go half in: its runtime starts with the program.
 * libvptrace.so is the C half alone, built with -DVPT_SPLIT; the Go half is
 * libvptrace-go.so in the same directory (build.sh). Starting a Go runtime
 * costs a process about 3 ms of CPU (mapping and relocating 2 MB, its
 * threads, its heap): more than a short process (a test suite's, a
 * configure probe's) runs for. Such a process never needs an aggregator:
 * what its threads recorded is in their buffers at exit, and the exit
 * flush writes it raw (rt_exit.c), as it does when the aggregator has not
 * started yet. So the clock thread loads the Go half when one of two
 * things happens first: the buffers threads handed over hold a full
 * buffer's events (the queue would grow and be written raw, 24 bytes an
 * event; an exiting thread hands its partly filled buffer over), or an
 * interval ends with events recorded (the aggregates are streamed to the
 * file every interval: a crash then loses at most one). Without a clock
 * thread (VPTRACE_CLOCK_US=0) the Go half is loaded at once. It starts as
 * in libvptrace.a (its init starts the consumer, vpt_go_started), so the
 * protocol with the exit path is the same: an exit that came first locks
 * it out.
 *
 * A fork child never loads it (it writes raw: vrt_child_fixup). When it
 * cannot be loaded the process goes on in C only (VPTRACE_RAW=1): the
 * trace is complete, only bigger, and stderr and a warning note say why.
 */
#define _GNU_SOURCE
#define VPT_RT_C
#include "rt.h"

#ifdef VPT_SPLIT
#include <dlfcn.h>
#include <link.h>

#define GOHALF_NAME "libvptrace-go.so"

/* the Go half's path: beside this library, made absolute at start-up (a
 * relative LD_LIBRARY_PATH entry names it relative to a working directory
 * the program may leave) */
static char go_path[PATH_MAX];
static uint32_t go_load_state; /* 0 not tried, 1 loading or loaded, 2 failed */

extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

/* dl_iterate_phdr's callback: this library's name (as the loader found it)
 * into *data (a const char **); dladdr would search its symbols too. */
static int own_name(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_phdr[i].p_offset == 0 &&
		    info->dlpi_addr + info->dlpi_phdr[i].p_vaddr == (ElfW(Addr))(uintptr_t)&__ehdr_start) {
			*(const char **)data = info->dlpi_name;
			return 1;
		}
	return 0;
}

__attribute__((constructor(102))) static void go_path_init(void)
{
	const char *name = NULL;
	size_t n, dir;
	dl_iterate_phdr(own_name, &name);
	if (!name || !*name)
		return;
	n = __builtin_strlen(name);
	for (dir = n; dir > 0 && name[dir - 1] != '/'; dir--)
		;
	if (name[0] != '/') {
		if (!getcwd(go_path, sizeof go_path - 2))
			return;
		n = __builtin_strlen(go_path);
		go_path[n++] = '/';
	} else {
		n = 0;
	}
	if (n + dir + sizeof GOHALF_NAME > sizeof go_path) {
		go_path[0] = 0;
		return;
	}
	__builtin_memcpy(go_path + n, name, dir);
	__builtin_memcpy(go_path + n + dir, GOHALF_NAME, sizeof GOHALF_NAME);
}

/* Load the Go half (once a process, not in a fork child, not in C-only
 * mode). From a normal context that may allocate: the clock thread, or
 * vrt_late_init without one. */
HIDDEN void vrt_go_load(void)
{
	static char msg[PATH_MAX + 512];
	uint32_t st = 0;
	const char *err;
	if (LOAD(&vrt_mode) != MODE_GO || LOAD(&vrt_go_alive) != GO_NONE || sys_getpid() != LOAD(&vpt_pid) ||
	    LOAD(&go_load_state) || !CAS(&go_load_state, &st, 1))
		return;
	vrt_alloc_enter(); /* (what the loader allocates is the runtime's) */
	err = "cannot find the directory of libvptrace.so";
	if (go_path[0]) {
		/* The Go half's constructor tells vpt_go_half_loaded where its
		 * code is, then starts the Go runtime, whose init starts the
		 * consumer; this returns before the consumer runs. */
		err = dlopen(go_path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) ? NULL : dlerror();
	}
	vrt_alloc_leave();
	if (err) {
		const char *m[] = {"vptrace: cannot load the aggregator (", err,
				   "): events are written raw (as VPTRACE_RAW=1 does; the trace is complete, only bigger)\n",
				   NULL};
		STORE(&go_load_state, 2);
		STORE(&vrt_mode, MODE_C);
		vrt_warn_once(W_GOLOAD, 0, "the aggregator (libvptrace-go.so) could not be loaded: events written raw");
		vrt_say(msg, sizeof msg, m);
	}
}

/* From the clock thread on every tick: whether the Go half is needed now
 * (see the top of this file). interval_end: an interval just ended. */
HIDDEN void vrt_go_tick(int interval_end)
{
	if (LOAD(&go_load_state) || LOAD(&vrt_go_alive) != GO_NONE)
		return;
	if (LOAD(&vrt_handed_events) >= vrt_cfg_buf_cap || (interval_end && LOAD(&vpt_nbufs)))
		vrt_go_load();
}
#endif

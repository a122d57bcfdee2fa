//go:build vptgohalf

/*
 * gohalf.c: the Go half's side of its loading (libvptrace-go.so only; see
 * rt_gohalf.c in the C half). Its constructor runs before the Go
 * runtime's (priority 101: the prioritised .init_array entries come
 * first), which starts the Go runtime's first thread: the C half learns
 * where this library's code is first, so that what the Go runtime
 * allocates through libc is known to be the runtime's, not the program's.
 */
#define _GNU_SOURCE
#include "rt.h"

#include <link.h>

extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

__attribute__((constructor(101))) static void gohalf_init(void)
{
	vpt_go_half_loaded(&__ehdr_start);
}

/*
 * vptrace.h: the runtime of hijack's vptrace preset (bin/libvptrace.so,
 * and bin/libvptrace.a for static programs).
 *
 * Link rewritten objects with the runtime: programs and shared libraries
 * depend on the shared runtime, so that a process has one runtime however
 * many of its components are instrumented:
 *     cc main.o foo.inst.o -Lbin -lvptrace -Wl,-rpath,$PWD/bin -o app
 *     cc -shared foo.inst.o -Lbin -lvptrace -Wl,-rpath,$PWD/bin -o libfoo.so
 * (hijack cc adds these); a -static program links the archive instead:
 *     cc -static main.o foo.inst.o bin/libvptrace.a -lpthread -o app
 * and run:
 *     VPTRACE_OUT=app.vpt ./app
 *     hijack report app.vpt
 *
 * Nothing needs to be called: instrumented objects register themselves
 * (vpt_register, from a constructor hijack emits) and tracing starts at the
 * first event. The functions below are optional controls. Objects of the
 * blockcount preset register too (vpt_blocks_register): their per-thread
 * block counts go to the same trace file (hijack report --blocks).
 *
 * Environment (read once, at the first registration or event):
 *   VPTRACE_OUT=PATH        trace file; "%p" is replaced by the process id
 *                           (default "vptrace.%p.vpt" in the current
 *                           directory). A relative PATH is taken relative to
 *                           the directory at start-up. Its directories are
 *                           created if missing (as mkdir -p: mode 0777 less
 *                           the umask): VPTRACE_OUT=/tmp/traces/%p.vpt puts
 *                           the files of every process of a test suite in
 *                           one directory. Never an existing file: see
 *                           "Trace file names" below.
 *   VPTRACE=off             disable tracing: no file, events are discarded
 *                           (also 0, no, false).
 *   VPTRACE_START=stopped   start stopped: nothing is recorded until
 *                           vptrace_start().
 *   VPTRACE_INTERVAL_MS=N   how often aggregates are streamed to the file
 *                           (default 100): a crash loses at most about this
 *                           much. Also how long a thread's recent-page cache
 *                           remembers: a page in use is recorded again in
 *                           each interval.
 *   VPTRACE_BUFKB=N         per-thread event buffer, KiB (default 64: 2725
 *                           events of 24 bytes).
 *   VPTRACE_MAXMB=N         limit on buffer memory, MiB (default 1024);
 *                           past it, threads write their buffers themselves.
 *   VPTRACE_BACKLOG=N       buffers waiting for the aggregator before threads
 *                           wait for it (default 256: 16 MiB of events).
 *   VPTRACE_BACKLOG_WAIT_MS=N  how long a thread waits then before it writes
 *                           its buffer itself, raw (default 1000; 0: never
 *                           wait). A burst the aggregator cannot follow
 *                           slows the program down to its pace instead of
 *                           filling the trace with raw events (24 bytes an
 *                           event against about 1 aggregated).
 *   VPTRACE_CLOCK_US=N      resolution of event times, microseconds (default
 *                           1000; a runtime thread updates the clock). 0: no
 *                           clock thread, times advance at buffer hand-offs.
 *   VPTRACE_RAW=1           never aggregate: threads write raw events (large
 *                           files; for debugging and cross-checking).
 *   VPTRACE_EXIT_TIMEOUT_MS=N  how long exit and vptrace_flush wait for the
 *                           aggregator before writing raw events (5000); what
 *                           it held then is missing at exit (END flag LOST,
 *                           said on stderr) and late after vptrace_flush (1).
 *   VPTRACE_COMPRESS=0      write the aggregates as AGG chunks, not compressed
 *                           (AGGC in DEFLATE chunks, format 1.4: readers
 *                           before 1.4 see no aggregated events in those),
 *                           and the other large chunks (OBJECT, RAW, ALLOCS,
 *                           MAPS, BLOCKS, COUNTS) as they are, not in
 *                           DEFLATE chunks.
 *   VPTRACE_ALLOCS=0        do not record allocations (also off, no, false):
 *                           the allocator functions below pass every call
 *                           straight through (to measure what recording costs).
 *
 * Trace file names. Every process image writes a file of its own, and the
 * runtime never opens an existing one (it creates its file with O_EXCL):
 * another process's trace is never truncated, overwritten or mixed into.
 * When PATH (STEM.vpt, or STEM when it does not end in .vpt) is taken, the
 * trace goes to the first free one of STEM.PID.vpt, STEM.PID.2.vpt,
 * STEM.PID.3.vpt, ... (STEM.2.vpt, STEM.3.vpt, ... when PATH has %p: the
 * pid is in it already), and the runtime says once on stderr
 *     vptrace: PATH exists; writing this trace to NEWPATH
 * That happens to a program that execs (itself, or another traced program:
 * the same pid and VPTRACE_OUT), to processes that share a fixed
 * VPTRACE_OUT (a make check), and to a second `VPTRACE_OUT=app.vpt ./app`
 * (remove the old file first, or put %p in PATH). With %p in PATH the
 * stderr line is left out (an exec, or a pid reused in a long test suite,
 * is expected there, and a suite may compare the program's stderr): the
 * trace itself records the name it was asked for in a note. A fork child writes
 * STEM.CHILDPID.vpt (with %p: PATH for its pid) without a message. A PATH
 * that exists and is not a regular file (/dev/null, a fifo) is written
 * into as it is; a fork child shares a device with its parent, not a fifo.
 *
 * Exec and _exit. The runtime defines the exec functions (execve, execv,
 * execvp, execvpe, execl, execle, execlp, fexecve, execveat) and _exit and
 * _Exit, weakly (libc.a's strong _exit wins in a static link): before an
 * exec replaces the image, everything it recorded goes to its file, which
 * ends with an END flagged EXEC (if the exec fails, tracing goes on in the
 * same file); _exit flushes as exit does. Events other threads record
 * after that flush are lost with the image. posix_spawn, system and popen
 * need nothing: the program they start is another process.
 *
 * Allocations. The runtime also defines, weakly, malloc, calloc, realloc,
 * reallocarray, free, aligned_alloc, posix_memalign, memalign, valloc,
 * pvalloc, every C++ operator new and delete, mmap, mmap64, munmap, mremap,
 * strdup and strndup: in a program that links libvptrace.so before libc
 * (hijack cc does) the program's calls reach them, and each records the call
 * (kind, address, size, the caller's return address, the thread, the time)
 * before or after calling the next definition (libc's, or an allocator
 * library linked after the runtime); the runtime's own allocations and
 * those of its Go part are not recorded. The trace gets them as ALLOCS
 * chunks, with MAPS chunks (the process's mappings at start, after
 * dlopen/dlclose, at exit) and each thread's stack and TLS ranges, so that
 * hijack report can name what each page held. A -static program keeps
 * libc.a's malloc: tracking is off there, and the trace says so in a note.
 * See vptrace/FORMAT.md, chunks 12 and 13.
 *
 * Write errors (a full disk; /dev/full) are said once on stderr, with the
 * path and the errno, and marked in the file where it can be (FORMAT.md,
 * STATUS; the END); the program goes on.
 *
 * The runtime is async-signal-safe on the event path, works before main,
 * during exit and in fork children, and never calls into Go from an
 * application thread. See vptrace/ABI.md and vptrace/FORMAT.md.
 */
#ifndef VPTRACE_H
#define VPTRACE_H

#ifndef __ASSEMBLER__
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#endif

#define VPTRACE_ABI_VERSION 1

/* ---- control API ------------------------------------------------------- */

#ifndef __ASSEMBLER__
/* Start recording (the default at start-up unless VPTRACE_START=stopped). */
void vptrace_start(void);
/* Stop recording: events are discarded (each costs a call and a compare)
 * until vptrace_start(). A site whose page did not change while stopped is
 * recorded again only when its page changes (the slots keep their value). */
void vptrace_stop(void);
/* Nonzero while recording. */
int vptrace_active(void);
/* Write everything every thread recorded so far to the trace file; returns
 * when it is there (0), or -1 when tracing is off. 1: the aggregator did
 * not answer within VPTRACE_EXIT_TIMEOUT_MS: the events in the threads'
 * buffers are in the file, those it had taken reach it when it goes on
 * (or, if the process ends first, the END counts them as lost). Not
 * async-signal-safe. */
int vptrace_flush(void);
/* Add a note (a phase marker) with the current time to the trace. */
void vptrace_note(const char *text);
/* Path of this process's trace file, or NULL when tracing is off. */
const char *vptrace_path(void);
#endif

/* ---- ABI with instrumented code (emitted by hijack) ------------------------ */

/* The layouts and constants below are vptrace/abi (Go), the single source:
 * a test there (TestCLayout) compiles this header and compares every
 * offset, size and constant with it. The constants are usable from
 * assembly too (the runtime's stubs.S). */
#define VPT_OBJ_MAGIC 0x31545056u /* "VPT1" */
#define VPT_MAX_SITES (1u << 24)  /* nsites is below */
#define VPT_MAX_STRS  (1u << 28)  /* nstrs is below */
#define VPT_MAX_SLOTS (2u << 24)  /* nslots is below: two slots a site at most */

#ifndef __ASSEMBLER__
struct vpt_object {        /* 64 bytes, in section .vptrace */
	uint32_t magic;        /* VPT_OBJ_MAGIC */
	uint32_t version;      /* VPTRACE_ABI_VERSION */
	uint32_t nsites;
	uint32_t flags;        /* VPT_FLAG_* */
	int32_t sites_rel;     /* sites[0] - &sites_rel */
	int32_t strs_rel;      /* string table - &strs_rel */
	uint32_t name;         /* object file name (offset in strs) */
	uint32_t nstrs;        /* bytes in strs */
	uint64_t id;           /* FNV-1a of the original object */
	uint64_t reserved;     /* with VPT_FLAG_SLOTS_TPOFF: TPOFF of __vpt_slots_<id> */
	/* with VPT_FLAG_PACKED (else absent: 48-byte descriptors are valid):
	 * the site records and strings as a raw DEFLATE stream */
	int32_t packed_rel;    /* the stream - &packed_rel */
	uint32_t packed_len;   /* its length in bytes */
	/* with VPT_FLAG_SLOTS (else absent: 56-byte descriptors are valid) */
	uint32_t nslots;       /* last-page slots: nsites <= nslots < VPT_MAX_SLOTS */
	int32_t epoch_rel;     /* with VPT_FLAG_EPOCH: the object's epoch word minus the address of this field; else 0 */
};
#endif

/* vpt_object.flags */
#define VPT_FLAG_IE          1 /* the slots (with VPT_FLAG_INDIRECT: their word) are initial-exec TLS, else local-exec */
#define VPT_FLAG_SLOTS_TPOFF 2 /* reserved holds the slots' TPOFF: a fork child zeroes them */
#define VPT_FLAG_INDIRECT    4 /* tls indirect: the TLS word points to this thread's slot array (vpt_slots) */
#define VPT_FLAG_PACKED      8 /* packed_rel, packed_len: the sites and strings DEFLATE-compressed by hijack */
#define VPT_FLAG_SLOTS      16 /* nslots: the object's slots, its sites' own and second ones (else nsites) */
#define VPT_FLAG_EPOCH      32 /* epoch_rel: the object's epoch word, which the runtime keeps at the cache epoch */
#define VPT_FLAG_KINDS      64 /* nsites kind bytes follow the packed table (VPT_FLAG_PACKED), else the strings */

#ifndef __ASSEMBLER__
struct vpt_site {          /* 32 bytes */
	uint32_t func;         /* function name (offset in strs) */
	uint32_t insn_off;     /* instruction offset in the original function */
	uint32_t sym;          /* variable name (offset in strs) or VPT_NOSYM */
	int32_t sym_off;
	uint8_t kind;          /* VPT_KIND_* */
	uint8_t seg;           /* VPT_SEG_* */
	uint16_t size;         /* access size; rep string operations: element size */
	uint32_t covers;
	uint32_t block;        /* block index; VPT_KIND_RANGE: the step (VPT_KIND_DYN_STEP: register
	                          and multiplier, rt.h); VPT_KIND_VEC: the vector descriptor (rt.h) */
	uint32_t score;
};
#endif

#define VPT_NOSYM 0xffffffffu /* vpt_site.sym: no variable */

/* vpt_site.kind */
#define VPT_KIND_READ     0x01 /* (both: read-modify-write) */
#define VPT_KIND_WRITE    0x02
#define VPT_KIND_EXACT    0x04 /* exact mode: every event recorded */
#define VPT_KIND_DYN_STEP 0x08 /* with VPT_KIND_RANGE: the step is a register (vpt_range_dyn) */
#define VPT_KIND_REP_SRC  0x10 /* rep string source range, from rsi (vpt_rep) */
#define VPT_KIND_REP_DEST 0x20 /* rep string destination range, from rdi */
#define VPT_KIND_RANGE    0x40 /* a sweep, recorded per loop run (vpt_range) */
#define VPT_KIND_VEC      0x80 /* vector elements (vpt_vec) */

/* vpt_site.seg */
#define VPT_SEG_UNKNOWN 0 /* a pointer in a register */
#define VPT_SEG_GLOBAL  1
#define VPT_SEG_STACK   2
#define VPT_SEG_TLS     3

#ifndef __ASSEMBLER__
/* Called by the constructor hijack emits into every instrumented object.
 * Plain C, idempotent, safe before main and from concurrent dlopen. */
void vpt_register(const struct vpt_object *obj);
/* Optional, from a destructor of an object that can be dlclose'd: the
 * runtime forgets the descriptor (it would otherwise read it again in a
 * fork child). Events already recorded keep their names. */
void vpt_unregister(const struct vpt_object *obj);

/* Slow-path entry points: called by instrumented code with a special
 * convention (register <reg> = page+1; the return address points at a
 * `nopl site(%rip)`, 0f 1f 05 disp32, whose operand is the site record;
 * the caller stepped 128 bytes below its red zone; everything is
 * preserved). vpt_rep: before a rep string instruction, nothing in
 * registers; it records every page of the instruction's range (rsi or rdi
 * by the site's kind bit 4/5, rcx elements of the site's size, DF for the
 * direction). vpt_range: at a loop exit, with the first and then the last
 * address of a sweep pushed; it records every page between them (the
 * caller pops them). Not callable from C. */
void vpt_slow_rax(void);
void vpt_slow_rcx(void);
void vpt_slow_rdx(void);
void vpt_slow_rbx(void);
void vpt_slow_rbp(void);
void vpt_slow_rsi(void);
void vpt_slow_rdi(void);
void vpt_slow_r8(void);
void vpt_slow_r9(void);
void vpt_slow_r10(void);
void vpt_slow_r11(void);
void vpt_slow_r12(void);
void vpt_slow_r13(void);
void vpt_slow_r14(void);
void vpt_slow_r15(void);
void vpt_rep(void);
void vpt_range(void);
#endif

/* ---- ABI with blockcount objects (ABI.md "blockcount") --------------------- */

/* An object of the blockcount preset carries a section .blockcount
 * (SHF_ALLOC|SHF_WRITE, align 8): a struct vpt_blocks, nblocks struct
 * vpt_block, a string table. Each thread counts the executions of its
 * blocks in a static TLS array of nblocks+1 uint64_t at thread pointer +
 * tpoff: word 0 is set to 1 once the thread is registered with the
 * runtime (vpt_blocks_thread), word 1+k counts block k. */
#define VPT_BLOCKS_MAGIC   0x43424a48u /* "HJBC" */
#define VPT_BLOCKS_VERSION 1
#define VPT_MAX_BLOCKS     (1u << 24)  /* nblocks is below; nstrs below VPT_MAX_STRS */

#ifndef __ASSEMBLER__
struct vpt_blocks {        /* 48 bytes, in section .blockcount */
	uint32_t magic;        /* VPT_BLOCKS_MAGIC */
	uint16_t version;      /* VPT_BLOCKS_VERSION */
	uint16_t flags;        /* 0 */
	uint32_t nblocks;
	uint32_t nstrs;        /* bytes in strs */
	int64_t tpoff;         /* the counters - thread pointer: R_X86_64_TPOFF64 (executables),
	                          or stored by the constructor; 0: not known yet */
	int32_t blocks_rel;    /* blocks[0] - &blocks_rel */
	int32_t strs_rel;      /* string table - &strs_rel */
	uint32_t name;         /* object file name (offset in strs) */
	uint32_t reserved;     /* 0 */
	uint64_t id;           /* FNV-1a of the original object */
};

struct vpt_block {         /* 16 bytes */
	uint32_t func;         /* function name (offset in strs) */
	uint32_t off;          /* the block's first instruction from the function start (original object) */
	uint32_t score;        /* static loop score * 1e6 */
	uint16_t loop_depth;
	uint16_t insns;        /* instructions in the block (at most 65535) */
};

/* From the constructor and the destructor (priority 0) hijack emits into
 * every blockcount object. Plain C, idempotent. vpt_blocks_unregister
 * writes every thread's counts of the object to the trace before it goes. */
void vpt_blocks_register(const struct vpt_blocks *blocks);
void vpt_blocks_unregister(const struct vpt_blocks *blocks);
/* Called by instrumented code when the thread's word 0 is 0, with the
 * special convention of the vpt_slow_* stubs (`call *vpt_blocks_thread@
 * GOTPCREL(%rip); nopl desc(%rip)`, red zone stepped over, everything
 * preserved): registers the thread's counters and sets word 0. Not
 * callable from C. */
void vpt_blocks_thread(void);
#endif

/* ---- trace file constants (vptrace/FORMAT.md) ------------------------------ */

/* HEADER flags */
#define VPTRACE_HDR_FORKED  1u  /* this process is a fork child of ppid */
#define VPTRACE_HDR_RAW     2u  /* VPTRACE_RAW: events are not aggregated */
#define VPTRACE_HDR_STOPPED 4u  /* started stopped */

/* NOTE kinds */
#define VPTRACE_NOTE_TEXT    1u  /* vptrace_note() */
#define VPTRACE_NOTE_START   2u
#define VPTRACE_NOTE_STOP    3u
#define VPTRACE_NOTE_WARNING 4u
#define VPTRACE_NOTE_FORK    5u  /* value: parent pid */
#define VPTRACE_NOTE_EXEC    6u  /* the image is about to exec; text: the program (1.1) */
#define VPTRACE_NOTE_EXEC_FAILED 7u /* value: errno; tracing goes on, the EXEC end is void (1.1) */

/* END flags */
#define VPTRACE_END_CLEAN    1u  /* written at normal process exit */
#define VPTRACE_END_FALLBACK 2u  /* the aggregator did not answer in time; events written raw */
#define VPTRACE_END_EXEC     4u  /* written before an exec (1.1) */
#define VPTRACE_END_WRITE_ERROR 8u /* some chunks could not be written; errno at offset 36 (1.1) */
#define VPTRACE_END_LOST     16u /* the aggregator stopped answering holding events it never wrote: count at offset 40 (1.6) */

/* STATUS flags (chunk 9, right after the HEADER, rewritten in place) */
#define VPTRACE_STATUS_WRITE_ERROR 1u /* a write failed: chunks are missing */

/* ALLOCS flags (chunk 12, 1.3) */
#define VPTRACE_ALLOCS_FINAL 1u /* the thread's last records: it exited */
#define VPTRACE_ALLOCS_COMPACT 2u /* compact records (1.5; FORMAT.md) */

#ifndef __ASSEMBLER__
#ifdef __cplusplus
}
#endif
#endif
#endif

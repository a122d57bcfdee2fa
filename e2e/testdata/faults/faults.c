/*
 * faults.c: the program of e2e's vptrace fault-injection tests
 * (e2e/vptrace_faults_test.go), rewritten by hijack with the vptrace preset
 * and linked with the runtime. It writes one byte on every page of buffers
 * of its own and prints what it touched, one line per buffer:
 *     R <image> <tid> <address, hex> <pages>
 * (image: the tag the test expects the pages under), then ends the way
 * the mode says:
 *
 *     faults run TAG N        N pages, exit
 *     faults hold N           10 pages flushed (vptrace_flush), N more, "READY",
 *                             then wait for stdin to close (the test kills it)
 *     faults exitbig N        10 pages flushed, N more, "EXITING", exit (the
 *                             test kills it during the exit flush)
 *     faults exec PROG [ARGS] 10 pages, then execv(PROG, ARGS)
 *     faults forkexec PROG    10 pages; a fork child 5 pages, execs PROG;
 *                             the parent 7 more pages after the child ended
 *     faults forkexit         the same, but the child calls _exit
 *     faults threadexit       10 pages; a thread 10 pages, exit() from it
 *     faults global           16 pages of a global array, passed by pointer
 * With FAULTS_HOLD set it prints "READY" before any instrumented access and
 * waits for stdin to close (killed during start-up).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int vptrace_flush(void); /* the runtime's (bin/vptrace.h) */

/* the traced work: a write on each page */
__attribute__((noinline)) void fault_touch(char *p, long pages)
{
	for (long i = 0; i < pages; i++)
		p[i * 4096] = (char)(i + 1);
}

static void touch_print(const char *image, char *p, long pages)
{
	fault_touch(p, pages);
	printf("R %s %ld %lx %ld\n", image, (long)syscall(SYS_gettid), (unsigned long)p, pages);
}

static char *touched(const char *image, long pages)
{
	char *p = aligned_alloc(4096, (size_t)pages * 4096);
	if (!p)
		exit(2);
	touch_print(image, p, pages);
	return p;
}

/* not the heap: the preset cannot tell from fault_touch's accesses */
static char global_table[16 * 4096] __attribute__((aligned(4096)));

/* until the test closes stdin, or kills us */
static void wait_stdin(void)
{
	char c;
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
}

static void *thread_exit(void *arg)
{
	(void)arg;
	touched("thread", 10);
	fflush(stdout);
	exit(0);
}

int main(int argc, char **argv)
{
	if (getenv("FAULTS_HOLD")) {
		puts("READY");
		wait_stdin();
		return 0;
	}
	const char *mode = argc > 1 ? argv[1] : "run";
	long n = argc > 2 ? atol(argv[2]) : 10;
	if (!strcmp(mode, "run")) {
		touched(argv[2], argc > 3 ? atol(argv[3]) : 10);
		return 0;
	}
	if (!strcmp(mode, "hold") || !strcmp(mode, "exitbig")) {
		touched("flushed", 10);
		if (vptrace_flush() != 0)
			return 3;
		touched("later", n);
		puts(!strcmp(mode, "hold") ? "READY" : "EXITING");
		fflush(stdout); /* (exit flushes stdio after the runtime's exit flush) */
		if (!strcmp(mode, "hold"))
			wait_stdin();
		return 0;
	}
	if (!strcmp(mode, "exec") && argc > 2) {
		touched("main", 10);
		fflush(stdout);
		execv(argv[2], argv + 2);
		perror("execv");
		return 4;
	}
	if (!strcmp(mode, "forkexec") || !strcmp(mode, "forkexit")) {
		touched("main", 10);
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			touched("child", 5);
			fflush(stdout);
			if (!strcmp(mode, "forkexec"))
				execl(argv[2], argv[2], (char *)NULL);
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		touched("main", 7);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 5;
	}
	if (!strcmp(mode, "threadexit")) {
		pthread_t th;
		touched("main", 10);
		fflush(stdout);
		pthread_create(&th, NULL, thread_exit, NULL);
		pthread_join(th, NULL); /* exit() in the thread ends us first */
		return 6;
	}
	if (!strcmp(mode, "global")) {
		touch_print("global", global_table, 16);
		return 0;
	}
	fprintf(stderr, "faults: unknown mode %s\n", mode);
	return 2;
}

/* fork.c: the kernels of an instrumented library (libkern_a.so) run by
 * the main thread before a fork, then by the fork child on the same pages
 * (e2e/shlib_test.go, TestShlibFork); never instrumented. The child's
 * trace must hold every page its calls touched, though the forking
 * thread's slots (copied into the child) held them already: the runtime
 * zeroes the child's slot arrays. The child ends with exit (libc's _exit
 * is the one this program binds: the runtime's flushes only where the
 * program links it, ABI.md).
 *
 * Prints the pages of the buffer ("range FIRST LAST", inclusive), the page
 * only kern_a_peek reads ("single PAGE") and the pids ("parent PID child
 * PID"). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define KERN a
#include "kern.h"

#define N (8 * 512) /* longs: 8 pages */

int main(void)
{
	/* p: the kernels' sweeps, which record their ranges whatever the
	 * slots hold; q: one long on a page of its own that only kern_a_peek
	 * reads, one site whose slot holds that page at the fork */
	long *p = mmap(0, (N + 512) * sizeof(long), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 2;
	long *q = p + N;
	q[0] = 42;
	kern_a_fill(p, N, 1);
	long s = kern_a_sum(p, p, p, p, N) + kern_a_peek(q);
	fflush(stdout);
	pid_t c = fork();
	if (c < 0)
		return 2;
	if (c == 0) {
		/* the same pages, the same values */
		kern_a_fill(p, N, 1);
		exit(kern_a_sum(p, p, p, p, N) + kern_a_peek(q) == s ? 0 : 1);
	}
	int st;
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "child failed: status %#x\n", st);
		return 1;
	}
	printf("range %#lx %#lx single %#lx\nparent %d child %d\n", (unsigned long)p >> 12, ((unsigned long)p + N * sizeof(long) - 1) >> 12,
	       (unsigned long)q >> 12, (int)getpid(), (int)c);
	return 0;
}

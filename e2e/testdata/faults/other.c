/* other.c: a second traced program for e2e's vptrace fault-injection tests,
 * which faults.c execs: 8 pages, printed as faults.c prints them. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((noinline)) void other_touch(char *p, long pages)
{
	for (long i = 0; i < pages; i++)
		p[i * 4096] = (char)i;
}

int main(void)
{
	char *p = aligned_alloc(4096, 8 * 4096);
	other_touch(p, 8);
	printf("R other %ld %lx 8\n", (long)syscall(SYS_gettid), (unsigned long)p);
	return 0;
}

/* Frames for the gdb backtrace test: main (main.c) -> walk -> descend ->
 * inspect -> crash_here, each noinline and doing work after its call so
 * that no frame becomes a tail call at -O2. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "deep.h"

volatile int sink;

__attribute__((noinline)) int crash_here(struct node *n, int mode)
{
	sink += n->value;
	if (mode == MODE_SEGV) {
		volatile int *bad = (volatile int *)(uintptr_t)n->poison;
		*bad = 42; /* SIGSEGV */
	} else if (mode == MODE_ABORT) {
		abort();
	}
	return n->value * 2 + sink % 3;
}

__attribute__((noinline)) int inspect(struct node *n, int mode)
{
	char buf[64];
	snprintf(buf, sizeof buf, "node %d", n->value);
	int r = crash_here(n, mode);
	sink += (int)strlen(buf);
	return r + 1;
}

__attribute__((noinline)) int descend(struct node *n, int mode)
{
	if (n->next)
		return descend(n->next, mode) + 1 + (sink & 1);
	int r = inspect(n, mode);
	sink ^= r;
	return r;
}

__attribute__((noinline)) int walk(struct node *head, int mode)
{
	int total = 0;
	for (struct node *p = head; p; p = p->next)
		total += p->value;
	int r = descend(head->next->next, mode);
	sink += total;
	return r + total;
}

/* gdb backtrace test program: `prog ok|segv|abort`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "deep.h"

__attribute__((noinline)) static int run(int mode)
{
	struct node nodes[4];
	for (int i = 0; i < 4; i++) {
		nodes[i].value = (i + 1) * 10;
		nodes[i].poison = 0x10 + (uintptr_t)i; /* an unmapped address */
		nodes[i].next = i < 3 ? &nodes[i + 1] : NULL;
	}
	int r = walk(&nodes[0], mode);
	printf("result %d\n", r);
	return r;
}

int main(int argc, char **argv)
{
	int mode = MODE_OK;
	if (argc > 1 && strcmp(argv[1], "segv") == 0)
		mode = MODE_SEGV;
	if (argc > 1 && strcmp(argv[1], "abort") == 0)
		mode = MODE_ABORT;
	setvbuf(stdout, NULL, _IONBF, 0);
	return run(mode) > 0 ? 0 : 1;
}

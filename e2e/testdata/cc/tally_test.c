/* The test program of hijack cc's build-system tests: exits 0 when the
   library computes what it must. */
#include <stdio.h>
#include "tally.h"

int main(void)
{
	static const char *const words[] = {"hijack", "rewrites", "every", "object", "42"};
	int a = tally("hello, world"), b = tally_each(words, 5, tally);
	if (a != 17 || b != 9662214) {
		printf("tally: got %d %d, want 17 9662214\n", a, b);
		return 1;
	}
	puts("tally: ok");
	return 0;
}

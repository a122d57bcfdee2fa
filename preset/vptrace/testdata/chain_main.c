/* Driver for chain.s: three calls, each returning *q (35) */
#include <stdio.h>

long chain(long *p, long *q);

int main(void) {
	static long a = 7, b = 35;
	long s = 0;
	for (int i = 0; i < 3; i++)
		s += chain(&a, &b);
	printf("%ld\n", s);
	return 0;
}

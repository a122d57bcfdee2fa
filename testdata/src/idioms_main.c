#include <stdio.h>
long sum_loop(long n);
long count_locked(long *p, int single);
long table_lookup(long i);
long far_branches(long x);
long fall_into(long x);
int main(void) {
	long c = 0, s = 0;
	for (long i = 0; i < 20; i++) {
		s += sum_loop(i) + table_lookup(i) * 3 + far_branches(i - 5) + fall_into(i - 3) * 5;
		count_locked(&c, (int)(i & 1));
	}
	printf("%ld %ld %ld %ld\n", s, c, sum_loop(0), far_branches(0));
	return 0;
}

/* Driver for sweepspill.S: sw_fill writes the first KiB of page 1 of a
 * 6-page mapping and reads two longs on page 3 and two on page 4; prints
 * what it returned against the same sum in C, the pages it touched
 * ("page 0x... KINDS") and the mapping's extent ("span ADDR PAGES"). */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

long sw_fill(long *tab, const long *a, const long *b);

int main(void)
{
	char *m = mmap(0, 6 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	long *tab = (long *)(m + 4096), *a = (long *)(m + 3 * 4096), *b = (long *)(m + 4 * 4096);
	a[0] = 100, a[1] = 200, b[0] = 300, b[1] = 400;
	long got = sw_fill(tab, a, b);
	/* the loop leaves rax = 0x400; tab[1] = 8 */
	long want = 0x400 + (1 + 100) + (2 + 200) + (3 + 300) + (4 + 400) + 5 + 6 + 7 + 8 + 9 + 10 + 11 +
		    (long)(uintptr_t)a + (long)(uintptr_t)b + 8;
	printf("sw %ld %ld\n", got, want);
	printf("page %p RW\n", (void *)tab); /* written, and tab[1] read */
	printf("page %p R\n", (void *)a);
	printf("page %p R\n", (void *)b);
	printf("span %p 6\n", (void *)m);
	return 0;
}

/* Driver for symbase.c: reads of every entry of the two tables (written
 * first), and two reads in the char array that cross pages, at bytes
 * 4089-4096 and 8185-8192: its third page is touched only by the second
 * one's last byte, its fourth not at all. Prints every page of the arrays
 * it touched with its kinds ("page 0x... R", "RW") and their extent
 * ("span ADDR PAGES" each). */
#include <stdint.h>
#include <stdio.h>

void fill(void);
uint64_t sum_table(const uint16_t *idx, long n);
uint64_t sum_bytes(const uint16_t *idx, long n);
uint64_t sum_either(const uint16_t *idx, long n, int which);
uint64_t sum_joined(const uint16_t *idx, long n, int which);
static int notes;
void note_table(void) { notes += 1; }
void note_other(void) { notes += 2; }
const void *addr_table(void);
const void *addr_other(void);
const void *addr_bytes(void);

static void pages(const void *p, long from, long to, const char *kinds)
{
	for (uintptr_t q = ((uintptr_t)p + from) >> 12; q <= ((uintptr_t)p + to - 1) >> 12; q++)
		printf("page 0x%lx %s\n", (unsigned long)(q << 12), kinds);
}

int main(void)
{
	static uint16_t idx[2048];
	for (int i = 0; i < 2048; i++)
		idx[i] = (uint16_t)(i * 1237 % 2048);
	static const uint16_t crossing[] = {511, 1023};
	fill();
	uint64_t s = sum_table(idx, 2048) + sum_either(idx, 2048, 1) + sum_either(idx, 2048, 0) + sum_bytes(crossing, 2);
	s += sum_joined(idx, 2048, 1) + sum_joined(idx, 2048, 0);
	printf("sum %016llx notes %d\n", (unsigned long long)s, notes);
	pages(addr_table(), 0, 8 * 2048, "RW");
	pages(addr_other(), 0, 8 * 2048, "RW");
	pages(addr_bytes(), 4089, 8193, "R");
	printf("span 0x%lx 4\nspan 0x%lx 4\nspan 0x%lx 4\n", (unsigned long)(uintptr_t)addr_table(),
	       (unsigned long)(uintptr_t)addr_other(), (unsigned long)(uintptr_t)addr_bytes());
	return 0;
}

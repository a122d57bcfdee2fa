/* Driver for straddle.c: reads and writes across page boundaries (and
 * next to them), twice in a row on the same address (the second finds
 * the first page in the slot, and must still record the second page of
 * a new pair), then a gather over offsets that cross, then a walk in
 * steps of 7 bytes over three pages, then 2 bytes every 3 over a ring
 * a little over two pages, twice round. Prints every page
 * touched with its kinds ("page 0x... R", "W", "RW") and the buffer's
 * extent ("span ADDR PAGES"). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

long get8(const char *p);
void put4(char *p, int v);
long gather(const char *base, const unsigned *off, long n);
void walk8(const char *p, long n);
long wrap2(const char *p, unsigned i, unsigned n, long steps);
long field(const char *base, const unsigned *off, long n, long key);
long field2(const char *base, const unsigned *off, long n);

static long sunk;

void sink(long v) { sunk += v; }

#define PAGES 96
static unsigned char kinds[PAGES];

static void touch(char *buf, char *p, int n, unsigned char k)
{
	for (uintptr_t q = (uintptr_t)p >> 12; q <= ((uintptr_t)p + n - 1) >> 12; q++)
		kinds[q - ((uintptr_t)buf >> 12)] |= k;
}

int main(void)
{
	char *buf = aligned_alloc(4096, PAGES * 4096);
	long s = 0;
	for (long i = 0; i < PAGES * 4096L; i++)
		buf[i] = (char)i;
	/* pages 0-15: reads crossing at 4089..4095, each twice */
	for (int k = 0; k < 8; k++) {
		char *p = buf + (2 * k) * 4096 + 4089 + k;
		s += get8(p) + get8(p);
		touch(buf, p, 8, 1);
	}
	/* the same first page, a new second one: 16 and 17, then 17 and 18 */
	s += get8(buf + 16 * 4096 + 4094);
	touch(buf, buf + 16 * 4096 + 4094, 8, 1);
	s += get8(buf + 17 * 4096 + 4094);
	touch(buf, buf + 17 * 4096 + 4094, 8, 1);
	/* pages 20-35: writes crossing at 4093..4095 */
	for (int k = 0; k < 8; k++) {
		char *p = buf + (20 + 2 * k) * 4096 + 4093 + k % 3;
		put4(p, k);
		put4(p, k + 1);
		touch(buf, p, 4, 2);
	}
	/* pages 40-63: a gather whose every other offset crosses */
	unsigned off[24];
	for (int k = 0; k < 24; k++)
		off[k] = (40 + k) * 4096 + (k % 2 ? 4090 : 100);
	s += gather((char *)buf, off, 24);
	for (int k = 0; k < 24; k++)
		touch(buf, buf + off[k], 8, 1);
	/* pages 36-38: 8 bytes every 7, from 5 bytes into 36 to the end of 38 */
	long steps = (3 * 4096 - 5 - 8) / 7 + 1;
	walk8(buf + 36 * 4096 + 5, steps);
	s += sunk;
	touch(buf, buf + 36 * 4096 + 5, 7 * (steps - 1) + 8, 1);
	/* pages 64-66: 2 bytes at every third position of a ring of 8194
	 * positions from 64's start (3 and 8194 coprime: each position
	 * twice; the reads at 4095 and 8191 cross), starting 1 in */
	unsigned ring = 2 * 4096 + 2;
	s += wrap2(buf + 64 * 4096, 1, ring, 2 * ring);
	touch(buf, buf + 64 * 4096, ring + 1, 1);
	/* pages 68-81: records whose value is on the key's page, crosses
	 * into the next, or is all on the next; whose key crosses; and
	 * records whose key does not match, their value not read (on a
	 * page nothing else touches). Each twice. */
	static const unsigned at[][2] = {
		{68, 4000}, {68, 4080}, {69, 4084}, {71, 4088}, {73, 4092}, {75, 4095},
		{77, 4088}, /* no match: 78 untouched */
		{79, 4000}, /* no match, on the page */
		{80, 4090}, /* a match crossing into 81 */
	};
	unsigned foff[2 * 9];
	long want = 0x5a5a5a5a5a5a5a5aL;
	for (int k = 0; k < 9; k++) {
		foff[k] = foff[k + 9] = at[k][0] * 4096 + at[k][1];
		long key = (k == 6 || k == 7) ? 0 : want;
		__builtin_memcpy(buf + foff[k], &key, 8);
	}
	s += field((char *)buf, foff, 18, want);
	for (int k = 0; k < 9; k++) {
		touch(buf, buf + foff[k], 8, 1);
		if (k != 6 && k != 7)
			touch(buf, buf + foff[k] + 8, 8, 1);
	}
	/* pages 82-95: values, then keys below them where the values are
	 * not zero: keys on the values' page, across into it, or all on
	 * the page before; values that cross; zero values whose key (on a
	 * page nothing else touches) is not read. Each twice. */
	static const unsigned at2[][2] = {
		{82, 4000}, {82, 4080}, {83, 4084}, {85, 4088}, {87, 4092}, {89, 4095},
		{91, 4088}, /* zero: 91 untouched */
		{93, 4000}, /* zero, on the page */
		{94, 4084}, /* the value crosses into 95 */
	};
	unsigned goff[2 * 9];
	for (int k = 0; k < 9; k++) {
		goff[k] = goff[k + 9] = at2[k][0] * 4096 + at2[k][1];
		long v = (k == 6 || k == 7) ? 0 : k + 1;
		__builtin_memcpy(buf + goff[k] + 8, &v, 8);
	}
	s += field2((char *)buf, goff, 18);
	for (int k = 0; k < 9; k++) {
		touch(buf, buf + goff[k] + 8, 8, 1);
		if (k != 6 && k != 7)
			touch(buf, buf + goff[k], 8, 1);
	}
	printf("sum %ld\nspan 0x%lx %d\n", s, (unsigned long)(uintptr_t)buf, PAGES);
	for (int p = 0; p < PAGES; p++)
		if (kinds[p])
			printf("page 0x%lx %s\n", (unsigned long)(uintptr_t)(buf + p * 4096L),
			       kinds[p] == 3 ? "RW" : kinds[p] == 1 ? "R" : "W");
	return 0;
}

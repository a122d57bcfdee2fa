/* Look-ups in tables of up to two pages by a symbol of the data, in loops:
 * each access lands on either page at random, and the site checks its two
 * slots with one branch instead of a branch per slot, which would be
 * mispredicted about every other time (TestPairSlots): by address where
 * an entry may cross a page boundary (8 bytes at an alignment the code
 * does not show: the slots hold a run of pages, one compare), else by
 * page number (a cmove between two compares). */
#include <stdint.h>

/* Indexed by a byte loaded from memory (movzbl (mem)). */
void hist_bytes(const uint8_t *in, long n, uint64_t *hist)
{
	for (long i = 0; i < n; i++)
		hist[in[i]]++;
}

/* Indexed by the low byte of a loaded word (movzbl %reg). */
uint64_t sum_low(const uint32_t *in, long n, const uint64_t *table)
{
	uint64_t s = 0;
	for (long i = 0; i < n; i++) {
		uint32_t v = in[i];
		s += table[(uint8_t)v] ^ v;
	}
	return s;
}

/* Indexed by a loaded byte, entries of one byte: none crosses. */
uint64_t sum_bytes(const uint8_t *in, long n, const uint8_t *table)
{
	uint64_t s = 0;
	for (long i = 0; i < n; i++)
		s += table[in[i]];
	return s;
}

/* Indexed by a byte times 16: entries 128 bytes apart over 8 pages (9
 * where unaligned), whose pages the data picks: the run of pages its two
 * slots hold grows by a page at either end and starts again at a page
 * that does not adjoin it (ABI.md "Runs of pages"). */
void hist_spread(const uint8_t *in, long n, uint64_t *hist)
{
	for (long i = 0; i < n; i++)
		hist[(long)in[i] * 16]++;
}

/* The same spread over a table of bytes (by page number: no entry
 * crosses a page boundary). */
uint64_t sum_spread(const uint8_t *in, long n, const uint8_t *table)
{
	uint64_t s = 0;
	for (long i = 0; i < n; i++)
		s += table[(long)in[i] * 128];
	return s;
}

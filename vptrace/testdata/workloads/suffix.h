/* suffix: suffix comparisons as a block sort makes them (bzip2's mainGtU
 * and its Shell sort of a bucket): compare the suffixes at i1 and i2 byte
 * by byte, eight bytes unrolled before a loop that also compares their
 * 16-bit tags, each step able to decide, the positions wrapping at n.
 *
 * The kernel's code is here, templated by SFX_AT (a read of the block or
 * the tags): the kernel defines it as a plain read, the driver's replay
 * as one that also records the page. */
#include <stdint.h>

#define SFX_OVERSHOOT 16

long sfx_sort(const uint8_t *block, const uint16_t *tag, uint32_t n, uint32_t *idx, long m, int32_t *budget);

#ifdef SFX_AT
/* gt: is the suffix at i1 greater than the one at i2? */
static __attribute__((noinline)) int SFX_GT(uint32_t i1, uint32_t i2, const uint8_t *block, const uint16_t *tag, uint32_t n, int32_t *budget)
{
#define SFX_BYTE()                                                       \
	do {                                                             \
		uint8_t c1 = SFX_AT(block + i1), c2 = SFX_AT(block + i2);    \
		if (c1 != c2)                                            \
			return c1 > c2;                                  \
		i1++;                                                    \
		i2++;                                                    \
	} while (0)
#define SFX_BOTH()                                                       \
	do {                                                             \
		uint8_t c1 = SFX_AT(block + i1), c2 = SFX_AT(block + i2);    \
		if (c1 != c2)                                            \
			return c1 > c2;                                  \
		uint16_t s1 = SFX_AT(tag + i1), s2 = SFX_AT(tag + i2);      \
		if (s1 != s2)                                            \
			return s1 > s2;                                  \
		i1++;                                                    \
		i2++;                                                    \
	} while (0)
	SFX_BYTE(); SFX_BYTE(); SFX_BYTE(); SFX_BYTE();
	SFX_BYTE(); SFX_BYTE(); SFX_BYTE(); SFX_BYTE();
	int32_t k = (int32_t)n + 8;
	do {
		SFX_BOTH(); SFX_BOTH(); SFX_BOTH(); SFX_BOTH();
		SFX_BOTH(); SFX_BOTH(); SFX_BOTH(); SFX_BOTH();
		if (i1 >= n)
			i1 -= n;
		if (i2 >= n)
			i2 -= n;
		k -= 8;
		(*budget)--;
	} while (k >= 0);
	return 0;
#undef SFX_BYTE
#undef SFX_BOTH
}

/* sort: Shell sort of the m positions in idx by their suffixes. Reads
 * run up to 15 past a position below n before it wraps: block and tag
 * have n + SFX_OVERSHOOT entries, the first ones repeated (bzip2 keeps
 * such an overshoot too). */
long SFX_SORT(const uint8_t *block, const uint16_t *tag, uint32_t n, uint32_t *idx, long m, int32_t *budget)
{
	static const long incs[] = {1, 4, 13, 40, 121, 364, 1093, 3280, 9841, 29524, 88573, 265720};
	int hp = 0;
	long moved = 0;
	while (hp + 1 < (int)(sizeof incs / sizeof incs[0]) && incs[hp + 1] < m)
		hp++;
	for (; hp >= 0; hp--) {
		long h = incs[hp];
		for (long i = h; i < m; i++) {
			uint32_t v = idx[i];
			long j = i;
			while (j >= h && SFX_GT(idx[j - h], v, block, tag, n, budget)) {
				idx[j] = idx[j - h];
				j -= h;
				moved++;
			}
			idx[j] = v;
		}
	}
	return moved;
}
#endif

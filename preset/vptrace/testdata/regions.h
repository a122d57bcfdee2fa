/* The body of gt_run (regions.c), included twice: plain (AT reads) and in
 * the driver, where AT also records the page it reads. */
#ifndef AT
#define AT(p) (*(p))
#endif

/* gt_run compares the runs of blk at i1 and i2 as a suffix sort does:
 * eight bytes one by one, each able to decide, then bytes and their
 * 16-bit tags four at a time, wrapping at n, until one differs or the
 * budget of rounds is spent. */
int GT_RUN(unsigned i1, unsigned i2, const unsigned char *blk, const unsigned short *tag, unsigned n, int *budget)
{
#define BYTE()                                                   \
	do {                                                     \
		unsigned char c1 = AT(blk + i1), c2 = AT(blk + i2);  \
		if (c1 != c2)                                    \
			return c1 > c2;                          \
		i1++;                                            \
		i2++;                                            \
	} while (0)
#define BOTH()                                                   \
	do {                                                     \
		unsigned char c1 = AT(blk + i1), c2 = AT(blk + i2);  \
		if (c1 != c2)                                    \
			return c1 > c2;                          \
		unsigned short s1 = AT(tag + i1), s2 = AT(tag + i2); \
		if (s1 != s2)                                    \
			return s1 > s2;                          \
		i1++;                                            \
		i2++;                                            \
	} while (0)
	BYTE(); BYTE(); BYTE(); BYTE(); BYTE(); BYTE(); BYTE(); BYTE();
	int k = (int)n + 4;
	do {
		BOTH(); BOTH(); BOTH(); BOTH();
		if (i1 >= n)
			i1 -= n;
		if (i2 >= n)
			i2 -= n;
		k -= 4;
		(*budget)--;
	} while (k >= 0 && *budget > 0);
	return 0;
#undef BYTE
#undef BOTH
}

/* For TestSecondSlotFold: a function without loops whose sites (each with
 * a second last-page slot: ABI.md "Second slots") run with every general
 * register holding a value used later, so that the cache probe after a
 * miss of both slots pushes registers of its own; the driver calls it on
 * three pages in turn, so that both slots miss at every call. Built twice:
 * instrumented as starved, and into the driver as a reference (STARVED
 * names it). */
#ifndef STARVED
#define STARVED starved
#endif

__attribute__((noinline, noipa)) long STARVED(const long *p, long *q, const long *r, long a, long b, long c)
{
	long x0 = a * 3 + b, x1 = b * 5 + c, x2 = c * 7 + a, x3 = a ^ (b << 1), x4 = b ^ (c << 2);
	long x5 = c ^ (a << 3), x6 = a + b + c, x7 = a - b, x8 = b - c, x9 = c - a, x10 = a * b;
	long v0 = p[x0 & 511];
	x0 += v0 * x10;
	long v1 = r[x1 & 511];
	x1 ^= v1 + x9;
	q[x2 & 511] += x0 ^ x1;
	x2 += x3 * v1;
	long v2 = p[(x3 + x4) & 511];
	x3 -= v2 ^ x8;
	long v3 = r[(x5 + x6) & 511];
	x4 += v3 * x7;
	q[(x7 ^ x8) & 511] ^= x3 + x4;
	x5 ^= x2 + v0;
	long v4 = p[(x9 + x10) & 511] + r[(x0 ^ x5) & 511];
	return x0 + 3 * x1 + 5 * x2 + 7 * x3 + 11 * x4 + 13 * x5 + 17 * x6 + 19 * x7 + 23 * x8 + 29 * x9 + 31 * x10 + v4;
}

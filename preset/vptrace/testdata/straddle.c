/* Accesses that may cross a page boundary, outside loops, in a loop
 * whose index comes from memory (no sweep), in a loop that steps its
 * position but calls out (no sweep either) and in one whose position
 * wraps (no sweep): when the bytes cross, both
 * pages are recorded through the stub, the first only where the site's
 * slot lacks it. */
#include <string.h>

long get8(const char *p)
{
	long v;
	memcpy(&v, p, 8);
	return v;
}

void put4(char *p, int v)
{
	memcpy(p, &v, 4);
}

long gather(const char *base, const unsigned *off, long n)
{
	long s = 0;
	for (long i = 0; i < n; i++) {
		long v;
		memcpy(&v, base + off[i], 8);
		s += v;
	}
	return s;
}

/* The position moves by 7 bytes a step, in a register the loop only adds
 * to: the site keeps its page's base in its slot and checks its 8 bytes
 * against it by address (most steps), crossing into the next page every
 * 585th step or so. The call keeps it from being a sweep. */
void sink(long v);

void walk8(const char *p, long n)
{
	for (long i = 0; i < n; i++) {
		long v;
		memcpy(&v, p + 7 * i, 8);
		sink(v);
	}
}

/* The position moves by 3 bytes a step and wraps at n (a conditional
 * move of i - n: compilers compute it in the register that holds the
 * loaded bytes a moment before): still a position its loop steps by
 * constants, so the site checks by address, as walk8's. */
long wrap2(const char *p, unsigned i, unsigned n, long steps)
{
	long s = 0;
	for (long k = 0; k < steps; k++) {
		unsigned short v;
		memcpy(&v, p + i, 2);
		s += v;
		i += 3;
		if (i >= n)
			i -= n;
	}
	return s;
}

/* A record's key, then (where it matches) its value, 8 bytes each, at
 * offsets the data chooses (no alignment the code shows): the value's
 * site compares the page of its last byte with the key's slot first
 * (lastByPartner): where they agree, both of its pages are recorded. */
long field(const char *base, const unsigned *off, long n, long key)
{
	long s = 0;
	for (long i = 0; i < n; i++) {
		const char *p = base + off[i];
		long k, v;
		memcpy(&k, p, 8);
		if (k == key) {
			memcpy(&v, p + 8, 8);
			s += v;
		}
	}
	return s;
}

/* The other way round: a record's value, then (where it is not zero)
 * its key, below it: the key's site compares the page of its first byte
 * with the value's slot first. */
long field2(const char *base, const unsigned *off, long n)
{
	long s = 0;
	for (long i = 0; i < n; i++) {
		const char *p = base + off[i];
		long k, v;
		memcpy(&v, p + 8, 8);
		if (v != 0) {
			memcpy(&k, p, 8);
			s += k;
		}
	}
	return s;
}

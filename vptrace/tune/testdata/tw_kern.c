/* The instrumented part of the tune tests' workload (see tw.h). */
#include "tw.h"

/* One round of a xorshift-multiply hash: a few cycles, registers only. */
#define H1(v) (v = (v ^ (v >> 29)) * 2862933555777941757L + 3037000493L)
#define H4(v) H1(v), H1(v), H1(v), H1(v)
#define H16(v) H4(v), H4(v), H4(v), H4(v)
#define H64(v) H16(v), H16(v), H16(v), H16(v)

/* Hottest: a gather/scatter over a[] through idx[] (no constant stride,
 * so every access goes through the page-change check), rounds times, with
 * much arithmetic per access (in registers: the plain run takes a while
 * while the exact reference's trace stays small). */
long tw_mix(const long *idx, long *a, long n, long rounds)
{
	long s = 0;
	for (long r = 0; r < rounds; r++)
		for (long i = 0; i < n; i++) {
			long j = idx[i];
			long v = a[j];
			H64(v), H64(v);
			a[j] = v;
			s += v;
		}
	return s;
}

/* A simple loop over a table. */
long tw_scan(const long *a, long n)
{
	long s = 0;
	for (long i = 0; i < n; i += 7)
		s += a[i];
	return s;
}

/* Straight-line code: one record (one page) per call. */
void tw_touch(struct rec *r, long key)
{
	r->key = key;
	r->hits++;
	r->val += key * 3;
}

/* sweeps.c: loops whose accesses the vptrace preset summarises as ranges
 * (sweeps) and loops it must check per access, with the exact pages each
 * touches printed by the uninstrumented driver for comparison. */
#include <stddef.h>
#include <string.h>

long fill(long *a, long n) {          /* sweep: a[i], step 8 */
	for (long i = 0; i < n; i++)
		a[i] = i;
	return a[n - 1];
}

long strided(const char *p, long n, long stride) { /* sweep with a register step */
	long s = 0;
	for (long i = 0; i < n; i += stride)
		s += p[i];
	return s;
}

long backwards(const int *a, long n) { /* sweep with a negative step */
	long s = 0;
	for (long i = n - 1; i >= 0; i -= 2)
		s += a[i];
	return s;
}

long chase(long **p, long steps) {    /* pointer chasing: per access */
	long n = 0;
	while (steps-- > 0 && p) {
		p = (long **)*p;
		n++;
	}
	return n;
}

long early_exit(const long *a, long n, long key) { /* a sweep with two exits */
	for (long i = 0; i < n; i++)
		if (a[i] == key)
			return i;
	return -1;
}

/* scatter: random read-modify-writes and a histogram straddling two
 * pages, in a loop that leaves few registers dead (the callee-saved ones
 * it never uses are live): the registers the checks need are saved once
 * around the loop (spill.go), and with tls indirect the slot base is
 * loaded there. */
void scatter(const unsigned *in, long lo, long hi, unsigned *priv, long np, unsigned long *hist, unsigned long *seed) {
	unsigned long s = *seed;
	for (long i = lo; i < hi; i++) {
		unsigned v = in[i];
		s = s * 6364136223846793005UL + 1442695040888963407UL;
		priv[(s >> 33) % (unsigned long)np] += v;
		hist[v & 255]++;
	}
	*seed = s;
}

/* spilled: more arrays than there are registers: gcc -O2 keeps some of
 * the pointers in stack slots and loads them again in every iteration
 * (`mov -0x18(%rsp),%rdi; movslq (%rdi,%rax,4),%rdx`). Such a pointer is
 * loop-invariant still: every access is a sweep. */
long spilled(const int *const *p, long n) {
	const int *a0 = p[0], *a1 = p[1], *a2 = p[2], *a3 = p[3], *a4 = p[4], *a5 = p[5];
	const int *a6 = p[6], *a7 = p[7], *a8 = p[8], *a9 = p[9], *a10 = p[10], *a11 = p[11];
	long s = 0;
	for (long i = 0; i < n; i++) {
		s += (long)a0[i] * 1 + a1[i] * 2 + a2[i] * 3 + a3[i] * 4 + a4[i] * 5 + a5[i] * 6;
		s ^= (long)a6[i] * 7 + a7[i] * 8 + a8[i] * 9 + a9[i] * 10 + a10[i] * 11 + a11[i] * 12;
	}
	return s;
}

/* mismatch: sqlite3StrICmp, case-blind compare through a table (in
 * .data: the test takes pages of .rodata for the compiler's constants):
 * two accesses stepped together in a loop that exits through a taken
 * branch into code where neither pointer is live. Were they sweeps, the
 * exit code of the first must leave the second's registers alone
 * (kit.Edge.Live: the registers live before the jump). */
unsigned char sweeps_lower[256] = {['A'] = 'a', ['B'] = 'b', ['x'] = 'x', ['y'] = 'y', ['X'] = 'x'};
int mismatch(const char *l, const char *r) {
	const unsigned char *a = (const unsigned char *)l, *b = (const unsigned char *)r;
	int c, x;
	for (;;) {
		c = *a;
		x = *b;
		if (c == x) {
			if (c == 0)
				break;
		} else {
			c = (int)sweeps_lower[c] - (int)sweeps_lower[x];
			if (c)
				break;
		}
		a++;
		b++;
	}
	return c;
}

/* wmismatch: mismatch over 32-bit words (the table indexed by their low
 * byte): its loop leaves through taken branches, and as the accesses are
 * words (takenExitSize) both are sweeps whose exit code goes on those
 * paths, the first's leaving the second's registers alone. */
int wmismatch(const int *a, const int *b) {
	int c, x;
	for (;;) {
		c = *a;
		x = *b;
		if (c == x) {
			if (c == 0)
				break;
		} else {
			c = (int)sweeps_lower[c & 255] - (int)sweeps_lower[x & 255];
			if (c)
				break;
		}
		a++;
		b++;
	}
	return c;
}

/* search: the btree workload's node search (keys up to the first one
 * above k, at most n), run over consecutive nodes of keys of one array,
 * the count read from each node: the inner loop leaves through a taken
 * branch at either test. */
struct snode {
	long n;
	long keys[15];
};
long search(const struct snode *nodes, long count, long k) {
	long s = 0;
	for (long i = 0; i < count; i++) {
		const struct snode *x = &nodes[i];
		long j = 0;
		while (j < x->n && k >= x->keys[j])
			j++;
		s += j;
	}
	return s;
}

/* gtu: bzip2's mainGtU, an unrolled compare of two suffixes of a block;
 * at -O2 each step computes its indices afresh from the arguments
 * (`lea 2(%rdi),%edx; movzbl (%rax,%rdx),%edx`), so every i1 access
 * partners the first one, every i2 access the second (partner.go). An
 * index that crosses a page on the way must still record the next page. */
int gtu(unsigned i1, unsigned i2, const unsigned char *block) {
	unsigned char c1, c2;
#define STEP                                \
	c1 = block[i1];                     \
	c2 = block[i2];                     \
	if (c1 != c2)                       \
		return c1 > c2;             \
	i1++;                               \
	i2++;
	STEP STEP STEP STEP STEP STEP STEP STEP
#undef STEP
	return 0;
}

static unsigned load32(const unsigned char *p) {
	unsigned v;
	memcpy(&v, p, sizeof v);
	return v;
}

/* best: a match finder's candidate loop (zstd's): the best length ml
 * changes only where a candidate beats it, in a block that not every
 * iteration runs, so the 4-byte read at ip + ml - 3 keeps its page over
 * the iterations in between: checked by address (steady), its slot
 * written anew when ml moves it to the next page. */
long best(const unsigned char *ip, const unsigned char *base, const unsigned *cand, long n, long *bestpos) {
	long ml = 3, pos = -1;
	for (long i = 0; i < n; i++) {
		const unsigned char *m = base + cand[i];
		if (load32(m + ml - 3) != load32(ip + ml - 3))
			continue;
		long l = 0;
		while (l < 60 && m[l] == ip[l])
			l++;
		if (l > ml) {
			ml = l;
			pos = cand[i];
		}
	}
	*bestpos = pos;
	return ml;
}

/* alternate: the same read through a length that every iteration sets,
 * from data: its page number is compared, not its address. */
long alternate(const unsigned char *p, const unsigned *len, long n) {
	long s = 0, l;
	for (long i = 0; i < n; i++) {
		if (len[i] & 1)
			l = len[i] >> 1;
		else
			l = len[i] >> 3;
		s += load32(p + l);
	}
	return s;
}

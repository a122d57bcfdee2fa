// outofline.c: two loops of look-ups, for TestOutOfLine. lcg's index
// comes from a generator kept in registers: its site's code after a slot
// miss goes out of line. chase's addresses come from the nodes it loads
// (a scattered site): its cache probe stays inline.
struct node {
	struct node *next;
	long v;
};

long lcg(const long *t, unsigned long mask, long n)
{
	unsigned long x = 12345;
	long s = 0;
	for (long i = 0; i < n; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		s += t[(x >> 33) & mask];
	}
	return s;
}

long chase(const struct node *p)
{
	long s = 0;
	while (p) {
		s += p->v;
		p = p->next;
	}
	return s;
}

/* Test input for emit's debug information rewriting: no main, so at -O2
   gcc keeps every function in .text and lists are relative to the unit's
   base address. */
#include <stddef.h>

struct node {
	struct node *next;
	int key, val;
};

static int weight(int k)
{
	int w = 0;
	while (k) {
		w += k & 1;
		k >>= 1;
	}
	return w;
}

int lookup(const struct node *n, int key)
{
	for (; n; n = n->next) {
		if (n->key == key) {
			int w = weight(n->val);
			return n->val * w;
		}
	}
	return -1;
}

int dispatch(int op, int a, int b)
{
	switch (op) {
	case 0:
		return a + b;
	case 1:
		return a - b;
	case 2:
		return a * b;
	case 3:
		return b ? a / b : 0;
	case 4:
		return a << (b & 31);
	case 5:
		return weight(a) + weight(b);
	default:
		return -op;
	}
}

long matrix(const int *m, size_t rows, size_t cols)
{
	long s = 0;
	for (size_t i = 0; i < rows; i++) {
		long row = 0;
		for (size_t j = 0; j < cols; j++) {
			int v = m[i * cols + j];
			if (v < 0) {
				int t = -v;
				row -= weight(t);
			} else {
				row += v;
			}
		}
		s += row * (long)(i + 1);
	}
	return s;
}

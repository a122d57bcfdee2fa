/* stack: kernels with big stack frames; they report where their arrays
 * lie (the oracle's stack pages, required with usestack). */
#include <stdint.h>

void stack_hist(const unsigned char *data, long n, unsigned *out, uintptr_t *where);
long stack_rec(const long *a, int depth, uintptr_t *frames);
long stack_vla(const int *a, int n, uintptr_t *where);

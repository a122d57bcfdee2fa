// workload: globals
// about: the kernel object's own variables: a .bss array filled (two
// about: threads, a half each), a .data array summed, a .rodata table read
// about: through an index array, a static .bss array walked with a stride,
// about: a thread-local (TLS) array; the driver takes their addresses
// test-args: 1
// bench-args: 1 3000
#include "globals.h"

int g_bss[G_BSS_N];
double g_data[G_DATA_N] = {1.0, 2.0, 3.0};
const int g_ro[G_RO_N] = {0, 919, 838, 757, 676, 595, 514, 433, 352, 271, 190, 109, 28, 947, 866, 785, 704, 623, 542, 461, 380, 299, 218, 137, 56, 975, 894, 813, 732, 651, 570, 489, 408, 327, 246, 165, 84, 3, 922, 841, 760, 679, 598, 517, 436, 355, 274, 193, 112, 31, 950, 869, 788, 707, 626, 545, 464, 383, 302, 221, 140, 59, 978, 897};
static long s_bss[G_SBSS_N];
static __thread long t_arr[G_TLS_N];

void globals_fill_bss(long lo, long hi, int v)
{
	for (long i = lo; i < hi; i++)
		g_bss[i] = v ^ (int)i;
}

double globals_sum_data(long lo, long hi)
{
	double s = 0;
	for (long i = lo; i < hi; i++)
		s += g_data[i];
	return s;
}

long globals_lookup_ro(const int *idx, long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += g_ro[idx[i]];
	return s;
}

long globals_tls_work(long n)
{
	for (long i = 0; i < n; i++)
		t_arr[i] = i * 5;
	long s = 0;
	for (long i = n - 1; i >= 0; i -= 3)
		s += t_arr[i];
	return s;
}

void globals_sbss_stride(long start, long n, long stride)
{
	for (long i = 0; i < n; i++)
		s_bss[start + i * stride] += i + 1;
}

long *globals_tls_addr(void) { return t_arr; }
long *globals_sbss_addr(void) { return s_bss; }

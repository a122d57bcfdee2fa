/* sweep: array sweeps, read and write, int, double and byte. */
#include <stddef.h>

long sweep_sum_int(const int *a, long n);
void sweep_fill_int(int *a, long n, int v);
void sweep_inc_int(int *a, long n);
double sweep_sum_double(const double *a, long n);
void sweep_scale_double(double *dst, const double *src, long n, double k);
long sweep_count_byte(const unsigned char *a, long n, unsigned char c);
void sweep_fill_byte(unsigned char *a, long n, unsigned char v);
void sweep_xor_byte(unsigned char *dst, const unsigned char *src, long n);
long sweep_sum12(const int *const *p, long n);
long sweep_sum_back(const long *a, long n);

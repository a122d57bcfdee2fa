/* avx2: AVX2/FMA intrinsics kernels (need an AVX2 CPU at every level). */
#include <stdint.h>

void avx_saxpy(float *y, const float *x, long n, float a);
double avx_dot(const double *x, const double *y, long n);
long avx_gather_sum(const int *base, const int *idx, long n);
void avx_scatter_like(int *base, const int *idx, long n);
long avx_maskload_sum(const int *p, long pairs, long at, int lanes);
void avx_maskstore(int *p, long pairs, long at, int lanes);
void avx_stream_fill(float *p, long n, float v);
float avx_bcast_sum(const float *p, long n);

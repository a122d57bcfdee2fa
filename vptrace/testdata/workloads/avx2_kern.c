// workload: avx2
// about: AVX2/FMA intrinsics (target attribute: AVX2 at every level):
// about: saxpy with FMA memory operands, a double dot product, gathers
// about: (vpgatherdd: one page per index), masked loads and stores whose
// about: masked-off lanes would cross into the next page (not touched),
// about: non-temporal stores, broadcasts from memory
// cpu: avx avx2 fma
// test-args: 1
// bench-args: 8 160
#include <immintrin.h>
#include "avx2.h"

#define AVX __attribute__((target("avx2,fma")))

AVX void avx_saxpy(float *y, const float *x, long n, float a)
{
	__m256 va = _mm256_set1_ps(a);
	long i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
	for (; i < n; i++)
		y[i] += a * x[i];
}

AVX double avx_dot(const double *x, const double *y, long n)
{
	__m256d acc = _mm256_setzero_pd();
	long i = 0;
	for (; i + 4 <= n; i += 4)
		acc = _mm256_fmadd_pd(_mm256_loadu_pd(x + i), _mm256_loadu_pd(y + i), acc);
	double t[4];
	_mm256_storeu_pd(t, acc);
	double s = t[0] + t[1] + t[2] + t[3];
	for (; i < n; i++)
		s += x[i] * y[i];
	return s;
}

AVX long avx_gather_sum(const int *base, const int *idx, long n)
{
	__m256i acc = _mm256_setzero_si256();
	long i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256i vi = _mm256_loadu_si256((const __m256i *)(idx + i));
		acc = _mm256_add_epi32(acc, _mm256_i32gather_epi32(base, vi, 4));
	}
	int t[8];
	_mm256_storeu_si256((__m256i *)t, acc);
	long s = 0;
	for (int k = 0; k < 8; k++)
		s += t[k];
	for (; i < n; i++)
		s += base[idx[i]];
	return s;
}

/* no scatter in AVX2: a gather, an add, scalar stores */
AVX void avx_scatter_like(int *base, const int *idx, long n)
{
	long i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256i vi = _mm256_loadu_si256((const __m256i *)(idx + i));
		__m256i v = _mm256_add_epi32(_mm256_i32gather_epi32(base, vi, 4), _mm256_set1_epi32(1));
		int t[8];
		_mm256_storeu_si256((__m256i *)t, v);
		for (int k = 0; k < 8; k++)
			base[idx[i + k]] = t[k];
	}
	for (; i < n; i++)
		base[idx[i]] += 1;
}

static AVX __m256i lanes_mask(int lanes)
{
	const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), iota);
}

/* masked load of `lanes` ints at byte offset `at` of the first page of
 * each pair (at + 4*lanes <= 4096: the masked-off lanes lie on the next
 * page, which is not accessed) */
AVX long avx_maskload_sum(const int *p, long pairs, long at, int lanes)
{
	__m256i m = lanes_mask(lanes), acc = _mm256_setzero_si256();
	for (long i = 0; i < pairs; i++) {
		const int *q = (const int *)((const char *)p + i * 8192 + at);
		acc = _mm256_add_epi32(acc, _mm256_maskload_epi32(q, m));
	}
	int t[8];
	_mm256_storeu_si256((__m256i *)t, acc);
	long s = 0;
	for (int k = 0; k < 8; k++)
		s += t[k];
	return s;
}

AVX void avx_maskstore(int *p, long pairs, long at, int lanes)
{
	__m256i m = lanes_mask(lanes);
	for (long i = 0; i < pairs; i++) {
		int *q = (int *)((char *)p + i * 8192 + at);
		_mm256_maskstore_epi32(q, m, _mm256_set1_epi32((int)i + 1));
	}
}

AVX void avx_stream_fill(float *p, long n, float v)
{
	__m256 vv = _mm256_set1_ps(v);
	for (long i = 0; i + 8 <= n; i += 8)
		_mm256_stream_ps(p + i, vv);
	_mm_sfence();
}

AVX float avx_bcast_sum(const float *p, long n)
{
	__m256 acc = _mm256_setzero_ps();
	for (long i = 0; i < n; i += 512) /* one broadcast per 2 KiB */
		acc = _mm256_add_ps(acc, _mm256_broadcast_ss(p + i));
	float t[8];
	_mm256_storeu_ps(t, acc);
	return t[0] + t[7];
}

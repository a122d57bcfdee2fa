/* corpus.c: C that makes compilers use many instruction forms: every
 * integer width and operation, division, shifts and rotates by variables,
 * bit-manipulation builtins, flags to registers (setcc, cmov, adc/sbb),
 * 128-bit arithmetic, float/double/long double conversions, atomics,
 * setjmp, alloca, variadic calls, computed goto, jump tables, bit-fields,
 * large struct copies and clears, vectorisable loops (gathers, masked
 * stores, reductions, conversions, FMA), TLS, the stack protector. The
 * test compiles it with gcc and clang at several -O levels and -march
 * settings and checks every instruction is modelled. */
#include <complex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <alloca.h>
#include <x86intrin.h>

typedef unsigned __int128 u128;
typedef __int128 s128;

__thread long tls_counter;
_Atomic long atomic_counter;
long sync_counter;
static jmp_buf env;

#define ARITH(T, name)                                                         \
	T name##_ops(T a, T b, int s) {                                        \
		T r = a + b;                                                   \
		r ^= a - b;                                                    \
		r |= a & ~b;                                                   \
		r += a * b;                                                    \
		if (b) r += a / b + a % b;                                     \
		r += (T)(a << (s & 7)) + (T)(a >> (s & 7));                   \
		r += (a < b) + (a == b) * 3 + (a > b ? a : b);                \
		r -= -a;                                                       \
		return r;                                                      \
	}
ARITH(int8_t, s8)
ARITH(uint8_t, u8)
ARITH(int16_t, s16)
ARITH(uint16_t, u16)
ARITH(int32_t, s32)
ARITH(uint32_t, u32)
ARITH(int64_t, s64)
ARITH(uint64_t, u64)

u128 mul128(uint64_t a, uint64_t b) { return (u128)a * b; }
s128 smul128(int64_t a, int64_t b) { return (s128)a * b; }
u128 add128(u128 a, u128 b) { return a + b; }
u128 sub128(u128 a, u128 b) { return a - b; }
int cmp128(s128 a, s128 b) { return a < b; }
u128 shl128(u128 a, int s) { return a << (s & 127); }
s128 sar128(s128 a, int s) { return a >> (s & 127); }
uint64_t mulhi(uint64_t a, uint64_t b) { return (uint64_t)(((u128)a * b) >> 64); }
uint64_t divmod(uint64_t a, uint64_t b, uint64_t *rem) { *rem = a % b; return a / b; }
int64_t sdivmod(int64_t a, int64_t b, int64_t *rem) { *rem = a % b; return a / b; }
int32_t div7(int32_t a) { return a / 7; }
uint32_t udiv10(uint32_t a) { return a / 10; }

uint32_t rotl32(uint32_t x, int s) { return (x << (s & 31)) | (x >> (-s & 31)); }
uint64_t rotr64(uint64_t x, int s) { return (x >> (s & 63)) | (x << (-s & 63)); }
uint16_t rotl16(uint16_t x) { return (uint16_t)(x << 3 | x >> 13); }
uint64_t shld(uint64_t hi, uint64_t lo, int s) { return (hi << (s & 63)) | (lo >> (64 - (s & 63))); }
int64_t sar(int64_t x, int s) { return x >> s; }
uint64_t shlx(uint64_t x, int s) { return x << s; }

int bits(uint64_t x, uint32_t y, uint16_t z) {
	int r = __builtin_popcountll(x) + __builtin_popcount(y);
	r += x ? __builtin_clzll(x) + __builtin_ctzll(x) : 0;
	r += y ? __builtin_clz(y) + __builtin_ctz(y) : 0;
	r += __builtin_parity(y) + __builtin_ffsll((long long)x) + __builtin_clrsb((int)y);
	r += (int)__builtin_bswap64(x) + (int)__builtin_bswap32(y) + __builtin_bswap16(z);
	r += (int)(x & (x - 1)) + (int)(x & -x) + (int)(x ^ (x - 1)) + (int)(~x & y);
	r += (int)((x >> (y & 63)) & ((1ull << (z & 63)) - 1));
	r += (int)((x >> 5) & 0x1ff);
	r += !!(x & (1ull << (y & 63)));
	return r;
}

uint64_t bitset(uint64_t *set, unsigned i) {
	uint64_t old = set[i / 64];
	set[i / 64] |= 1ull << (i % 64);
	set[(i + 7) / 64] &= ~(1ull << ((i + 7) % 64));
	set[(i + 9) / 64] ^= 1ull << ((i + 9) % 64);
	return old >> (i % 64) & 1;
}

int carries(uint64_t *d, const uint64_t *a, const uint64_t *b, int n) {
	unsigned char c = 0;
	for (int i = 0; i < n; i++) {
		unsigned long long s;
		c = _addcarryx_u64(c, a[i], b[i], &s);
		d[i] = s;
	}
	unsigned char br = 0;
	for (int i = 0; i < n; i++) {
		unsigned long long s;
		br = _subborrow_u64(br, d[i], b[i], &s);
		d[i] = s;
	}
	return c + br;
}

long overflow(long a, long b, int x, int y) {
	long r;
	int s;
	if (__builtin_mul_overflow(a, b, &r)) return -1;
	if (__builtin_add_overflow(x, y, &s)) return -2;
	if (__builtin_sub_overflow(a, b, &r)) return -3;
	return r + s;
}

int conds(int a, int b, unsigned c, unsigned d, long e, long f) {
	int r = 0;
	r += a < b; r += a <= b; r += a > b; r += a >= b; r += a == b; r += a != b;
	r += c < d; r += c <= d; r += c > d; r += c >= d;
	r += e < 0; r += e >= 0; r += (e & 1) != 0;
	r += a < b ? c : d;
	r += c > d ? (int)e : (int)f;
	r += __builtin_parityl(e);
	unsigned char uc = (unsigned char)a;
	short sh = (short)b;
	r += uc > (unsigned char)b ? sh : (short)c;
	return r;
}

double fp(double a, float b, long double c, int i, long l, unsigned u, unsigned long ul) {
	double r = a * b + (double)c;
	r += (double)i + (float)l + (double)u + (double)ul;
	r += (int)a + (long)b + (unsigned)a + (unsigned long)b;
	r += (long)c + (int)(c * c) + (unsigned long)c;
	r += a < b ? a : b;
	r += __builtin_fabs(a) + __builtin_sqrt(a) + __builtin_copysign(a, b);
	long double lc = c * a / (c - 1.0L);
	if (lc > c) r += 1;
	if (a != a) r += 2;
	r += (double)(float)a;
	double complex z = a + b * I;
	z = z * z;
	r += creal(z) + cimag(z);
	return r;
}

long double ld(long double a, long double b, int n) {
	long double r = 0;
	for (int i = 0; i < n; i++)
		r = r * a + b / (i + 1);
	return r > a ? r : a;
}

long atomics(long *p, int *q, long v, short *sp, char *cp, u128 *wp) {
	long r = __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
	r += __atomic_add_fetch(q, 3, __ATOMIC_RELAXED);
	r += __atomic_exchange_n(p, v + 1, __ATOMIC_ACQ_REL);
	long expected = v;
	r += __atomic_compare_exchange_n(p, &expected, v + 2, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	int e2 = 5;
	r += __atomic_compare_exchange_n(q, &e2, 6, 1, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
	r += __atomic_fetch_or(p, 4, __ATOMIC_SEQ_CST);
	r += __atomic_fetch_and(q, 4, __ATOMIC_SEQ_CST);
	r += __atomic_fetch_sub(sp, 1, __ATOMIC_SEQ_CST);
	r += __atomic_fetch_xor(cp, 1, __ATOMIC_SEQ_CST);
	__atomic_or_fetch(p, 8, __ATOMIC_SEQ_CST);
	r += __atomic_test_and_set(cp + 1, __ATOMIC_SEQ_CST);
	u128 ew = 1;
	r += __sync_bool_compare_and_swap(wp, ew, (u128)v);
	r += __sync_fetch_and_add(&sync_counter, 1);
	r += atomic_load(&atomic_counter);
	atomic_store(&atomic_counter, r);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	r += __atomic_fetch_add(p, 1, __ATOMIC_RELAXED) == 0;
	return r + tls_counter++;
}

int sum_va(int n, ...) {
	va_list ap;
	va_start(ap, n);
	int s = 0;
	for (int i = 0; i < n; i++) s += va_arg(ap, int);
	double d = va_arg(ap, double);
	va_end(ap);
	return s + (int)d;
}

int interp(const unsigned char *code, int n) {
	static void *tab[] = {&&op_add, &&op_sub, &&op_mul, &&op_end};
	int acc = 0, pc = 0;
	goto *tab[code[pc] & 3];
op_add: acc += code[++pc]; if (pc >= n) return acc; goto *tab[code[++pc] & 3];
op_sub: acc -= code[++pc]; if (pc >= n) return acc; goto *tab[code[++pc] & 3];
op_mul: acc *= code[++pc]; if (pc >= n) return acc; goto *tab[code[++pc] & 3];
op_end: return acc;
}

int sw(int x) {
	switch (x) {
	case 0: return 11; case 1: return 23; case 2: return 5; case 3: return 78;
	case 4: return 9; case 5: return 1; case 6: return 44; case 7: return 0;
	case 10: return 3; case 12: return 99;
	}
	return -1;
}

struct bf { unsigned a : 3, b : 7, c : 13; int d : 5; unsigned long long e : 40; };
int bitfields(struct bf *p, int v) {
	p->a = v; p->b += v; p->c ^= v; p->d = -v; p->e += v;
	return p->a + p->b + p->c + p->d + (int)p->e;
}

struct big { long v[40]; char name[37]; };
void copies(struct big *dst, const struct big *src, char *buf, int n) {
	*dst = *src;
	struct big tmp;
	memset(&tmp, 0, sizeof tmp);
	tmp.v[3] = n;
	dst[1] = tmp;
	memset(buf, 'x', (unsigned)n);
	memcpy(buf + n, src->name, (unsigned)n & 31);
	memmove(buf + 1, buf, (unsigned)n);
}

int stackstuff(int n, const char *s) {
	char *p = alloca((unsigned)n + 1);
	int vla[n + 1];
	for (int i = 0; i <= n; i++) { p[i] = s[i % 4]; vla[i] = i * p[i]; }
	if (setjmp(env)) return -1;
	return vla[n / 2] + (int)strlen(p);
}
void jump(int v) { longjmp(env, v); }

void vec_add(float *restrict a, const float *restrict b, const float *restrict c, int n) {
	for (int i = 0; i < n; i++) a[i] = b[i] * c[i] + a[i];
}
double vec_dot(const double *a, const double *b, int n) {
	double s = 0;
	for (int i = 0; i < n; i++) s += a[i] * b[i];
	return s;
}
void vec_gather(float *restrict out, const float *restrict in, const int *restrict idx, int n) {
	for (int i = 0; i < n; i++) out[i] = in[idx[i]];
}
void vec_gather64(double *restrict out, const double *restrict in, const long *restrict idx, int n) {
	for (int i = 0; i < n; i++) out[i] = in[idx[i]] * 2.0;
}
void vec_scatter(float *restrict out, const float *restrict in, const int *restrict idx, int n) {
	for (int i = 0; i < n; i++) out[idx[i]] = in[i];
}
void vec_masked(int *restrict a, const int *restrict b, int n) {
	for (int i = 0; i < n; i++) if (b[i] > 0) a[i] = b[i] * 3;
}
int vec_count(const unsigned char *s, int n, unsigned char c) {
	int k = 0;
	for (int i = 0; i < n; i++) k += s[i] == c;
	return k;
}
void vec_conv(double *restrict d, const int *restrict s, float *restrict f, const long *restrict l, int n) {
	for (int i = 0; i < n; i++) { d[i] = s[i]; f[i] = (float)l[i]; }
}
void vec_int(int64_t *restrict d, const int32_t *restrict s, const uint8_t *restrict b, int n) {
	for (int i = 0; i < n; i++) d[i] = (int64_t)s[i] * b[i] + (d[i] >> 3);
}
void vec_minmax(int *restrict a, const int *restrict b, short *restrict c, const short *restrict e, int n) {
	for (int i = 0; i < n; i++) { a[i] = a[i] < b[i] ? b[i] : a[i]; c[i] = (short)(c[i] > e[i] ? e[i] : c[i]); }
}
unsigned vec_hash(const unsigned *p, int n) {
	unsigned h = 2166136261u;
	for (int i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
	return h;
}
void vec_bytes(uint8_t *restrict d, const uint8_t *restrict a, const uint8_t *restrict b, int n) {
	for (int i = 0; i < n; i++) { unsigned s = a[i] + b[i]; d[i] = (uint8_t)(s > 255 ? 255 : s); }
}
double vec_reduce_max(const double *a, int n) {
	double m = a[0];
	for (int i = 1; i < n; i++) m = a[i] > m ? a[i] : m;
	return m;
}
long vec_popcnt(const uint64_t *a, int n) {
	long s = 0;
	for (int i = 0; i < n; i++) s += __builtin_popcountll(a[i]);
	return s;
}
void vec_shift(uint32_t *restrict a, const uint32_t *restrict s, int n) {
	for (int i = 0; i < n; i++) a[i] = (a[i] << (s[i] & 31)) | (a[i] >> (32 - (s[i] & 31)));
}

uint64_t misc(void) {
	__builtin_prefetch(&tls_counter, 0, 3);
	__builtin_prefetch(&tls_counter, 1, 1);
	uint64_t t = __builtin_ia32_rdtsc();
	if (t == 42) __builtin_trap();
	return t + (uint64_t)__builtin_frame_address(0) + (uint64_t)__builtin_return_address(0);
}

int main(void) { return 0; }

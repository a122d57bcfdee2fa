/* many.c: 512 functions with one traced access each, linked into the
 * dlopen'ed plugin with kern.c (e2e/shlib_test.go, TestShlibStaticTLS).
 * Slots in initial-exec TLS (8 bytes a site: 4 KiB) do not fit in the
 * static TLS surplus glibc keeps for dlopen'ed libraries; tls: indirect
 * takes one word. */
#define F(n) long many_##n(const long *p) { return p[n]; }
#define F8(n) F(n##0) F(n##1) F(n##2) F(n##3) F(n##4) F(n##5) F(n##6) F(n##7)
#define F64(n) F8(n##0) F8(n##1) F8(n##2) F8(n##3) F8(n##4) F8(n##5) F8(n##6) F8(n##7)
F64(1) F64(2) F64(3) F64(4) F64(5) F64(6) F64(7) F64(8)

/* Linked into vt by TestBigTLS: 256 KB of static TLS, which glibc puts in
 * every thread's stack (the runtime's clock thread's too). */
__thread char vt_bigtls[256 << 10];
char *vt_bigtls_touch(void) { return vt_bigtls; }

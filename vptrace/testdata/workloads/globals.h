/* globals: arrays in .bss, .data, .rodata and TLS of the kernel object. */
#define G_BSS_N (1 << 18)   /* ints: 1 MiB */
#define G_DATA_N 8192       /* doubles: 64 KiB */
#define G_RO_N 4096         /* ints: 16 KiB */
#define G_TLS_N 3000        /* longs: 24000 bytes */
#define G_SBSS_N 20000      /* longs: 160000 bytes */

extern int g_bss[G_BSS_N];
extern double g_data[G_DATA_N];
extern const int g_ro[G_RO_N];

void globals_fill_bss(long lo, long hi, int v);
double globals_sum_data(long lo, long hi);
long globals_lookup_ro(const int *idx, long n);
long globals_tls_work(long n);
void globals_sbss_stride(long start, long n, long stride);
long *globals_tls_addr(void);
long *globals_sbss_addr(void);

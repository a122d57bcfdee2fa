/* memops: memcpy/memset-like kernels. */
#include <stddef.h>

void mem_copy_loop(unsigned char *d, const unsigned char *s, long n);
void mem_set_loop(unsigned char *d, int c, long n);
void mem_copy_words(long *d, const long *s, long n);
void mem_copy_builtin(void *d, const void *s, size_t n);
void mem_set_builtin(void *d, int c, size_t n);
void mem_rep_movsb(void *d, const void *s, size_t n);
void mem_rep_movsq(void *d, const void *s, size_t nq);
void mem_rep_stosb(void *d, int c, size_t n);
void mem_rep_stosq(void *d, long v, size_t nq);
void mem_rep_movsb_back(void *d, const void *s, size_t n);
long mem_rep_scasb(const void *s, int c, size_t n);
int mem_rep_cmpsb(const void *a, const void *b, size_t n);

struct blob {
	long w[300]; /* 2400 bytes */
};
void mem_copy_struct(struct blob *d, const struct blob *s);

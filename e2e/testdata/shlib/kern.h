/* kern.h: the kernels of kern.c, by component name (-DKERN=a: kern_a_sum,
 * kern_a_fill). */
#ifndef KERN_H
#define KERN_H

#define KERN_CAT2(a, b, c) a##b##_##c
#define KERN_CAT(a, b, c) KERN_CAT2(a, b, c)
#define KERN_FN(f) KERN_CAT(kern_, KERN, f)

typedef long kern_sum_fn(const long *a, const long *b, const long *c, const long *d, long n);
typedef long kern_fill_fn(long *p, long n, long v);
typedef void *kern_helper_fn(void);
typedef long kern_peek_fn(const long *p);

#ifdef KERN
kern_sum_fn KERN_FN(sum);
kern_fill_fn KERN_FN(fill);
kern_helper_fn KERN_FN(helper);
kern_peek_fn KERN_FN(peek);
#endif
long kern_helper(const long *p, long n);

#endif

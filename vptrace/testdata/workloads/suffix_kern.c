// workload: suffix
// about: a block sort's suffix comparisons (bzip2's mainGtU): a Shell sort
// about: of random positions in a 1 MiB block of long equal runs (per
// about: SCALE), each comparison eight bytes in straight-line code that
// about: may return at every byte, then bytes and 16-bit tags in a loop
// about: that wraps at the block's end; few registers to spare; 2 threads
// test-args: 1
// bench-args: 2 6
#define SFX_AT(p) (*(p))
#define SFX_GT sfx_gt
#define SFX_SORT sfx_sort
#include "suffix.h"

/* mt: many threads, private and shared data. */
#include <stdint.h>

void mt_work(const uint32_t *shared, long lo, long hi, uint32_t *priv, long nprivate, uint64_t *hist, uint64_t *seed);

/* unaligned: accesses that straddle a page boundary. Every kernel walks
 * pairs of pages: the access at offset `at` of the first page of each pair
 * crosses into the second, which nothing else touches. */
#include <stdint.h>

typedef unsigned char v16u __attribute__((vector_size(16), aligned(1)));
typedef unsigned char v32u __attribute__((vector_size(32), aligned(1)));

struct __attribute__((packed)) pk {
	char c[4093];
	uint64_t x; /* at 4093: bytes 4093..4100 */
};

uint64_t un_load8(const unsigned char *buf, long pairs, long at);
uint32_t un_load4(const unsigned char *buf, long pairs, long at);
uint16_t un_load2(const unsigned char *buf, long pairs, long at);
uint64_t un_load16(const unsigned char *buf, long pairs, long at);
uint64_t un_load32(const unsigned char *buf, long pairs, long at);
void un_store8(unsigned char *buf, long pairs, long at, uint64_t v);
void un_store16(unsigned char *buf, long pairs, long at);
void un_store32(unsigned char *buf, long pairs, long at);
uint64_t un_packed(const struct pk *p, long pairs);
uint64_t un_load8_one(const unsigned char *p);

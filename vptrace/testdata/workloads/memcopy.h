/* memcopy: records moved around with struct copies and small fixed-size
 * memcpy/memset, as serialisation and message-passing code does. */
#include <stdint.h>

struct rec {
	uint64_t id;
	uint32_t len; /* bytes of body in use */
	uint32_t flags;
	uint8_t body[112];
}; /* 128 bytes */

struct msg {
	uint64_t id;
	uint32_t len;
	uint32_t pad;
}; /* a 16-byte header before len bytes of body, then zeros to 8 bytes */

long mc_gather(struct rec *restrict out, const struct rec *restrict in, const uint32_t *idx, long n);
long mc_pack(uint8_t *restrict buf, const struct rec *restrict in, const uint32_t *idx, long n);
void mc_clear(struct rec *r, long n);

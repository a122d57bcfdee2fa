// workload: memcopy
// about: memcpy/memset-heavy code the compiler expands inline: 128-byte
// about: struct copies gathered from random records of a 4 MiB pool (per
// about: SCALE), messages packed with fixed-size memcpy of 8-byte chunks
// about: and a memset of the padding, record bodies cleared with memset
// test-args: 1
// bench-args: 4 40
#include "memcopy.h"

long mc_gather(struct rec *restrict out, const struct rec *restrict in, const uint32_t *idx, long n)
{
	long bytes = 0;
	for (long i = 0; i < n; i++) {
		out[i] = in[idx[i]];
		bytes += out[i].len;
	}
	return bytes;
}

long mc_pack(uint8_t *restrict buf, const struct rec *restrict in, const uint32_t *idx, long n)
{
	uint8_t *p = buf;
	for (long i = 0; i < n; i++) {
		const struct rec *r = &in[idx[i]];
		struct msg h = {r->id, r->len, 0};
		__builtin_memcpy(p, &h, sizeof h);
		p += sizeof h;
		uint32_t len = r->len, k = 0;
		for (; k + 8 <= len; k += 8)
			__builtin_memcpy(p + k, r->body + k, 8);
		if (k < len) {
			__builtin_memset(p + k, 0, 8);
			for (; k < len; k++)
				p[k] = r->body[k];
		}
		p += (len + 7) & ~7u;
	}
	return p - buf;
}

void mc_clear(struct rec *r, long n)
{
	for (long i = 0; i < n; i++) {
		__builtin_memset(r[i].body, 0, 64);
		r[i].len = 0;
	}
}

// workload: unaligned
// about: page-straddling accesses: 2-, 4- and 8-byte loads (memcpy, packed
// about: struct), 16- and 32-byte vector loads and stores at offsets
// about: 4095, 4094, 4092, 4090, 4080 of one page of each pair, so that the
// about: second page of each pair is touched only by the straddling part
// test-args: 1
// bench-args: 4 1000
#include "unaligned.h"

#define PAIR 8192

uint64_t un_load8(const unsigned char *buf, long pairs, long at)
{
	uint64_t s = 0;
	for (long i = 0; i < pairs; i++) {
		uint64_t v;
		__builtin_memcpy(&v, buf + i * PAIR + at, 8);
		s = s * 3 + v;
	}
	return s;
}

uint32_t un_load4(const unsigned char *buf, long pairs, long at)
{
	uint32_t s = 0;
	for (long i = 0; i < pairs; i++) {
		uint32_t v;
		__builtin_memcpy(&v, buf + i * PAIR + at, 4);
		s = s * 5 + v;
	}
	return s;
}

uint16_t un_load2(const unsigned char *buf, long pairs, long at)
{
	uint16_t s = 0;
	for (long i = 0; i < pairs; i++) {
		uint16_t v;
		__builtin_memcpy(&v, buf + i * PAIR + at, 2);
		s = (uint16_t)(s * 7 + v);
	}
	return s;
}

uint64_t un_load16(const unsigned char *buf, long pairs, long at)
{
	v16u acc = {0};
	for (long i = 0; i < pairs; i++)
		acc ^= *(const v16u *)(buf + i * PAIR + at);
	uint64_t s = 0;
	for (int k = 0; k < 16; k++)
		s = s * 131 + acc[k];
	return s;
}

uint64_t un_load32(const unsigned char *buf, long pairs, long at)
{
	v32u acc = {0};
	for (long i = 0; i < pairs; i++)
		acc += *(const v32u *)(buf + i * PAIR + at);
	uint64_t s = 0;
	for (int k = 0; k < 32; k++)
		s = s * 131 + acc[k];
	return s;
}

void un_store8(unsigned char *buf, long pairs, long at, uint64_t v)
{
	for (long i = 0; i < pairs; i++) {
		uint64_t x = v + (uint64_t)i;
		__builtin_memcpy(buf + i * PAIR + at, &x, 8);
	}
}

void un_store16(unsigned char *buf, long pairs, long at)
{
	v16u v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	for (long i = 0; i < pairs; i++)
		*(v16u *)(buf + i * PAIR + at) = v + (unsigned char)i;
}

void un_store32(unsigned char *buf, long pairs, long at)
{
	v32u v = {0};
	for (int k = 0; k < 32; k++)
		v[k] = (unsigned char)(k * 3);
	for (long i = 0; i < pairs; i++)
		*(v32u *)(buf + i * PAIR + at) = v + (unsigned char)i;
}

uint64_t un_packed(const struct pk *p, long pairs)
{
	uint64_t s = 0;
	for (long i = 0; i < pairs; i++)
		s += ((const struct pk *)((const unsigned char *)p + i * PAIR))->x;
	return s;
}

/* one straddling load, outside any loop */
uint64_t un_load8_one(const unsigned char *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, 8);
	return v;
}

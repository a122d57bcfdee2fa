/* Look-ups in static arrays through a register that holds the array's
 * address (TestSymbolBase): gcc -O2 (PIE, the default) loads it once with
 * `lea table(%rip), %reg` and indexes the array in the loop. The 8-byte
 * entries of an aligned array cannot cross a page: no crossing check. At
 * one byte into a char array they can: the check stays, and the trace has
 * both pages of every crossing access. Through a register that holds one
 * of two arrays, chosen at run time (a cmov; paths that meet), the
 * analysis cannot say which: the check stays too. The arrays start on pages of their own. */
#include <stdint.h>
#include <string.h>

static uint64_t table[2048] __attribute__((aligned(4096)));
static uint64_t other[2048] __attribute__((aligned(4096)));
static char bytes[4 * 4096] __attribute__((aligned(4096)));

void fill(void)
{
	for (long i = 0; i < 2048; i++) {
		table[i] = (uint64_t)i * 0x9e3779b97f4a7c15u;
		other[i] = ~table[i];
	}
}

uint64_t sum_table(const uint16_t *idx, long n)
{
	uint64_t s = 0;
	for (long i = 0; i < n; i++)
		s += table[idx[i] & 2047];
	return s;
}

uint64_t sum_bytes(const uint16_t *idx, long n)
{
	uint64_t s = 0;
	for (long i = 0; i < n; i++) {
		uint64_t v;
		memcpy(&v, bytes + 1 + 8 * (idx[i] & 2047), 8);
		s += v;
	}
	return s;
}

uint64_t sum_either(const uint16_t *idx, long n, int which)
{
	const uint64_t *t = which ? table : other;
	uint64_t s = 0;
	for (long i = 0; i < n; i++)
		s += t[idx[i] & 2047];
	return s;
}

void note_table(void);
void note_other(void);

uint64_t sum_joined(const uint16_t *idx, long n, int which)
{
	const uint64_t *t;
	if (which) {
		note_table();
		t = table;
	} else {
		note_other();
		t = other;
	}
	uint64_t s = 0;
	for (long i = 0; i < n; i++)
		s += t[idx[i] & 2047];
	return s;
}

const void *addr_table(void) { return table; }
const void *addr_other(void) { return other; }
const void *addr_bytes(void) { return bytes; }

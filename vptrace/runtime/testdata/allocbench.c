/*
 * allocbench.c: an allocation-heavy loop for scripts/bench-allocs.sh:
 * N times, free the block in a random one of 4096 slots and allocate
 * another of a random size (16 bytes to 2 KiB, now and then 64 KiB),
 * writing its first bytes; a realloc and a calloc every so often.
 *
 *     allocbench [N]      (default 10000000)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 4096

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	static char *slot[SLOTS];
	uint64_t x = 0x9e3779b97f4a7c15ull, sum = 0;
	for (long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned k = (unsigned)(x % SLOTS);
		size_t size = 16 + (size_t)((x >> 20) % 2033);
		if ((x >> 40) % 1000 == 0)
			size = 64 << 10;
		switch ((x >> 50) % 16) {
		case 0:
			slot[k] = realloc(slot[k], size);
			break;
		case 1:
			free(slot[k]);
			slot[k] = calloc(1, size);
			break;
		default:
			free(slot[k]);
			slot[k] = malloc(size);
		}
		memset(slot[k], (int)i, 16);
		sum += (uintptr_t)slot[k] & 0xff;
	}
	for (int k = 0; k < SLOTS; k++)
		free(slot[k]);
	printf("%llu\n", (unsigned long long)sum);
	return 0;
}

/* Jump-table forms hijack must resolve (issue 10), for cfg's table-driven
   tests (cfg/jumptable_test.go TestJumpTableForms), compiled by gcc and
   clang at -O0 to -O3 and -Os, position-independent or not: every
   indirect jump of these functions is a table dispatch that cfg must
   prove and decode exactly as the table's relocations say; main prints
   what they compute, the same after the clobber preset.

   two_clusters: one sparse switch that gcc splits into two jump tables
   (cases 0-14 and 104-161), both table bases hoisted out of the loop
   into registers, the first dispatch's table loaded first: the table
   address loaded nearest before the first dispatch is the other one's.
   t is live only into the first table's cases, w only into the second's.

   three_tables: three switches in one loop, all table bases hoisted
   (clang -O2 loads them in the opposite order of the dispatches).

   byte_op: a switch over all 256 values of a byte, 255 cases and a
   default (gcc: cmp $0xfe + ja; clang: a 256-entry table bounded by the
   movzbl alone).

   with_calls: a switch in a loop whose cases call a function of another
   object: the table base lives in a callee-saved register across calls.

   nested: a switch inside a case of another.

   shifted: switch (x >> 2) with x a byte: gcc checks x (cmp $0x33) before
   it shifts, so the bound on the index is the check's shifted. */

#include <stdio.h>

unsigned two_clusters(const unsigned char *p, unsigned n)
{
	unsigned acc = 1, alt = 3;
	for (unsigned i = 0; i < n; i++) {
		unsigned op = p[i];
		unsigned t = op * 7 + i, w = (op ^ i) * 13;
		switch (op) {
		case 0: acc ^= t >> 2; acc += alt + 99; break;
		case 2: alt -= 1; acc += alt + 99; break;
		case 4: acc += alt + 99; acc -= t * 3; break;
		case 5: acc -= t * 3; acc ^= 0x1234; break;
		case 7: acc = acc * 5 + t; acc ^= t << 1; break;
		case 9: acc -= t * 3; acc = acc * 5 + t; break;
		case 10: alt += acc >> 3; alt += acc >> 3; break;
		case 11: acc += t << 4; acc ^= t >> 2; break;
		case 12: alt += acc >> 3; acc ^= alt; break;
		case 14: acc ^= t >> 2; acc -= t * 3; break;
		case 104: alt = (alt << 3) ^ w; acc += w; break;
		case 105: acc ^= w >> 2; alt = alt * 3 - w; break;
		case 106: alt ^= acc >> 7; acc = acc * 5 + w; break;
		case 107: acc ^= 0x1234; acc += w << 4; break;
		case 109: alt = alt * 3 - w; acc += w << 4; break;
		case 110: acc += w; acc ^= alt; break;
		case 111: alt = (alt << 3) ^ w; acc ^= w << 1; break;
		case 113: acc ^= w << 1; alt += 11; break;
		case 115: alt += 11; alt = alt * 3 - w; break;
		case 117: acc += alt + 99; alt -= 1; break;
		case 119: acc = acc * 5 + w; acc -= w * 3; break;
		case 122: alt = (alt << 3) ^ w; acc -= w ^ 0x55; break;
		case 123: acc ^= alt; acc ^= alt; break;
		case 124: acc ^= w >> 2; alt ^= acc >> 7; break;
		case 126: acc = acc * 5 + w; acc = acc * 5 + w; break;
		case 127: alt -= 1; acc ^= w >> 2; break;
		case 129: alt -= 1; alt += acc >> 3; break;
		case 132: acc -= w * 3; acc ^= alt; break;
		case 133: alt ^= acc >> 7; acc += w << 4; break;
		case 135: alt -= 1; acc -= w ^ 0x55; break;
		case 137: acc ^= w << 1; alt = (alt << 3) ^ w; break;
		case 142: acc ^= w << 1; alt -= 1; break;
		case 143: acc = acc * 5 + w; acc = acc * 5 + w; break;
		case 144: alt = (alt << 3) ^ w; acc += w; break;
		case 145: acc += w; acc += w << 4; break;
		case 146: acc += alt + 99; alt += acc >> 3; break;
		case 147: acc -= w * 3; alt += acc >> 3; break;
		case 149: alt = (alt << 3) ^ w; alt += acc >> 3; break;
		case 151: acc -= w ^ 0x55; alt = alt * 3 - w; break;
		case 152: alt += acc >> 3; alt ^= acc >> 7; break;
		case 153: alt += acc >> 3; alt = (alt << 3) ^ w; break;
		case 154: acc += w; acc ^= 0x1234; break;
		case 155: acc ^= 0x1234; acc -= w * 3; break;
		case 156: alt = alt * 3 - w; alt ^= acc >> 7; break;
		case 157: acc -= w ^ 0x55; acc ^= 0x1234; break;
		case 160: acc -= w * 3; acc = acc * 9 + 1; break;
		case 161: acc += alt + 99; acc += w << 4; break;
		case 33: case 38: case 41: case 59: case 84: case 171: case 199: case 245: acc += t; break;
		case 82: case 188: case 189: case 230: acc ^= t << 1; break;
		default: acc += 2; break;
		}
	}
	return acc ^ alt;
}

unsigned three_tables(const unsigned char *p, unsigned n)
{
	unsigned acc = 1, alt = 3, cnt = 5;
	for (unsigned i = 0; i < n; i++) {
		unsigned op = p[i];
		unsigned t = op * 7 + i;
		if (op < 20) {
			switch (op) {
			case 0: acc += t; break;
			case 1: acc ^= t << 1; break;
			case 2: acc -= t * 3; break;
			case 3: acc = acc * 5 + t; break;
			case 4: acc ^= t >> 2; break;
			case 5: acc += 11; break;
			case 6: acc = (acc << 3) ^ t; break;
			case 7: acc -= t ^ 0x55; break;
			case 9: acc += t * t; break;
			case 11: acc ^= 0x1234; break;
			case 13: acc = acc * 3 - t; break;
			case 17: acc += t << 4; break;
			default: acc += 2; break;
			}
		} else if (op < 40) {
			switch (op - 20) {
			case 0: alt += 1; break;
			case 1: alt ^= acc; break;
			case 2: alt *= 3; break;
			case 3: alt -= 7; break;
			case 4: alt ^= alt << 5; break;
			case 5: alt += acc >> 3; break;
			case 6: alt = alt * 9 + 1; break;
			case 8: alt ^= 0xff; break;
			case 10: alt -= acc; break;
			case 12: alt += 1000; break;
			default: alt ^= 1; break;
			}
		} else {
			switch (op - 40) {
			case 0: cnt += t; break;
			case 1: cnt ^= alt; break;
			case 2: cnt *= 5; break;
			case 3: cnt -= 9; break;
			case 4: cnt ^= cnt << 3; break;
			case 5: cnt += acc >> 2; break;
			case 7: cnt = cnt * 7 + 1; break;
			case 9: cnt ^= 0xf0; break;
			case 11: cnt -= t; break;
			case 13: cnt += 77; break;
			default: cnt ^= 2; break;
			}
		}
	}
	return acc ^ alt ^ cnt;
}

#define K4(n) \
	case n: acc += (n); break; \
	case n + 1: acc ^= (n); break; \
	case n + 2: acc = acc * 5 - (n); break; \
	case n + 3: acc = (acc << 2) ^ (n); break;
#define K16(n) K4(n) K4(n + 4) K4(n + 8) K4(n + 12)
#define K64(n) K16(n) K16(n + 16) K16(n + 32) K16(n + 48)

__attribute__((noinline)) unsigned byte_op(unsigned char c, unsigned acc)
{
	switch (c) {
	K64(0) K64(64) K64(128)
	K16(192) K16(208) K16(224)
	K4(240) K4(244) K4(248)
	case 252: acc += 1000; break;
	case 253: acc ^= 0xabcdef; break;
	case 254: acc = acc * 9 + 7; break;
	default: acc = ~acc; break;
	}
	return acc;
}

/* Called through a volatile pointer: calls the compiler knows nothing of. */
unsigned (*volatile step)(unsigned, unsigned);

unsigned with_calls(const unsigned char *p, unsigned n)
{
	unsigned acc = 1;
	for (unsigned i = 0; i < n; i++) {
		switch (p[i] % 16) {
		case 0: acc = step(acc, 1); break;
		case 1: acc = step(acc, i) + 1; break;
		case 2: acc ^= step(i, acc); break;
		case 3: acc = step(acc * 3, 7); break;
		case 4: acc -= step(acc, acc >> 3); break;
		case 5: acc = step(acc ^ 0x55, i) * 5; break;
		case 7: acc = step(acc + i, 2) ^ i; break;
		case 9: acc += step(9, acc); break;
		case 10: acc = step(acc, 10) - i; break;
		case 12: acc = step(acc << 1, 12); break;
		default: acc += 3; break;
		}
	}
	return acc;
}

unsigned nested(const unsigned char *p, unsigned n)
{
	unsigned acc = 0;
	for (unsigned i = 0; i + 1 < n; i++) {
		switch (p[i] % 12) {
		case 0: acc += 1; break;
		case 1: acc ^= p[i + 1]; break;
		case 2:
			switch (p[i + 1] % 10) {
			case 0: acc += 5; break;
			case 1: acc ^= 0x77; break;
			case 2: acc = acc * 3; break;
			case 3: acc -= i; break;
			case 5: acc = (acc << 1) | 1; break;
			case 6: acc += i * i; break;
			case 8: acc ^= acc >> 4; break;
			default: acc += 2; break;
			}
			break;
		case 3: acc = acc * 7 + 1; break;
		case 4: acc -= 3; break;
		case 6: acc ^= i << 3; break;
		case 7: acc += acc >> 2; break;
		case 9: acc = ~acc; break;
		case 11: acc += 11; break;
		default: acc ^= 1; break;
		}
	}
	return acc;
}

unsigned shifted(const unsigned char *p, unsigned n)
{
	unsigned len = 0, branch = 0, k = 7;
	for (unsigned i = 0; i < n; i++) {
		switch (p[i] >> 2) {
		case 0: branch ^= k; break;
		case 1: k += 9; break;
		case 2: len += branch; break;
		case 3: branch = k * 5; break;
		case 4: len <<= 1; break;
		case 6: k -= len; break;
		case 7: len += 100; break;
		case 9: branch >>= 1; break;
		case 10: len ^= 0x55; break;
		case 12: k = k * 7 + 1; break;
		default: len += 2; break;
		}
	}
	return len ^ branch ^ k;
}

static unsigned mix(unsigned a, unsigned b) { return a * 31 + b; }

int main(void)
{
	unsigned char buf[4096];
	unsigned x = 12345;
	for (int i = 0; i < 4096; i++) {
		x = x * 1103515245 + 12345;
		buf[i] = x >> 16;
		if (buf[i] > 170 && (x & 3))
			buf[i] -= 120;
	}
	printf("two_clusters %u\n", two_clusters(buf, sizeof buf));
	for (int i = 0; i < 4096; i++)
		buf[i] %= 60;
	printf("three_tables %u\n", three_tables(buf, sizeof buf));
	unsigned acc = 0;
	for (int i = 0; i < 256; i++)
		acc = byte_op((unsigned char)i, acc + i);
	printf("byte_op %u\n", acc);
	step = mix;
	printf("with_calls %u\n", with_calls(buf, sizeof buf));
	printf("nested %u\n", nested(buf, sizeof buf));
	printf("shifted %u\n", shifted(buf, sizeof buf));
	return 0;
}

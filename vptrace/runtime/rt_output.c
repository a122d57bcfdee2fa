//go:build !vptgohalf

/*
 * rt_output.c: the trace file's chunks and their CRC32C
 * (the vptrace runtime's C half: rt_state.c, rt.h).
 */
#define _GNU_SOURCE
#define VPT_RT_C
#include "rt.h"

/* ------------------------------------------------------------------ */
/* CRC32C (Castagnoli): SSE4.2 crc32 instruction, or a table           */
static int crc_hw = -1;
static uint32_t crc_tab[256];

/* Long payloads (allocation records, raw events) are taken three blocks
 * of CRC_BLOCK bytes at a time, one crc32 chain per block, so that the
 * instruction's latency overlaps; the blocks' CRCs are joined with
 * crc_shift (the raw CRC state is linear: going on from state a over data
 * B gives shift(a, |B|) ^ crc(B) from 0), whose tables say what
 * CRC_BLOCK zero bytes do to each byte of a state. */
#define CRC_BLOCK 4096
static uint32_t crc_shift_tab[4][256];

static inline uint64_t crc_q(uint64_t c, const uint8_t *s)
{
	uint64_t v;
	__builtin_memcpy(&v, s, 8);
	__asm__("crc32q %1, %0" : "+r"(c) : "rm"(v));
	return c;
}

static inline uint32_t crc_shift(uint32_t c)
{
	return crc_shift_tab[0][c & 0xff] ^ crc_shift_tab[1][(c >> 8) & 0xff] ^ crc_shift_tab[2][(c >> 16) & 0xff] ^
	       crc_shift_tab[3][c >> 24];
}

static void crc_init(void)
{
	unsigned a, b, c, d;
	static const uint8_t zeros[8];
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t v = i;
		for (int k = 0; k < 8; k++)
			v = (v >> 1) ^ (0x82F63B78u & (0u - (v & 1)));
		crc_tab[i] = v;
	}
	int hw = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 20));
	if (hw) {
		/* the shift of each single bit, then of each byte value by linearity */
		uint32_t bit[32];
		for (int j = 0; j < 32; j++) {
			uint64_t x = 1u << j;
			for (int k = 0; k < CRC_BLOCK / 8; k++)
				x = crc_q(x, zeros);
			bit[j] = (uint32_t)x;
		}
		for (int t = 0; t < 4; t++) {
			crc_shift_tab[t][0] = 0;
			for (uint32_t v = 1; v < 256; v++)
				crc_shift_tab[t][v] = crc_shift_tab[t][v & (v - 1)] ^ bit[8 * t + __builtin_ctz(v)];
		}
	}
	STORE(&crc_hw, hw);
}
/* crc32c of p[0:n] continuing from crc (0 for a fresh one), like Go's crc32.Update */
HIDDEN uint32_t vrt_crc32c(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t c = ~crc & 0xffffffffu;
	if (LOAD(&crc_hw) < 0)
		crc_init();
	if (crc_hw) {
		while (n >= 3 * CRC_BLOCK) {
			uint64_t x = c, y = 0, z = 0;
			for (size_t i = 0; i < CRC_BLOCK; i += 8) {
				x = crc_q(x, s + i);
				y = crc_q(y, s + CRC_BLOCK + i);
				z = crc_q(z, s + 2 * CRC_BLOCK + i);
			}
			c = crc_shift(crc_shift((uint32_t)x) ^ (uint32_t)y) ^ (uint32_t)z;
			s += 3 * CRC_BLOCK;
			n -= 3 * CRC_BLOCK;
		}
		while (n >= 8) {
			c = crc_q(c, s);
			s += 8;
			n -= 8;
		}
		while (n > 0) {
			uint32_t c32 = (uint32_t)c;
			__asm__("crc32b %1, %0" : "+r"(c32) : "rm"(*s));
			c = c32;
			s++;
			n--;
		}
	} else {
		uint32_t c32 = (uint32_t)c;
		while (n-- > 0)
			c32 = crc_tab[(c32 ^ *s++) & 0xff] ^ (c32 >> 8);
		c = c32;
	}
	return ~(uint32_t)c;
}
/* ------------------------------------------------------------------ */
/* DEFLATE chunks (format 1.4): the C part's large chunks compressed    */

/* A raw DEFLATE stream (RFC 1951) of one block with the fixed Huffman
 * codes, from a greedy LZ77 matcher (4-byte hashes, one candidate, the
 * whole 32 KiB window): no tables to send, no allocation but the caller's
 * scratch, about 3 ns a byte. On the site tables of OBJECT chunks and
 * on RAW events it takes 4 to 5 times fewer bytes (the Go aggregator's
 * dynamic codes do a little better on its own chunks). */
#define DF_HASH_BITS 15 /* at most */
/* Positions inside a match put in the hash table: the first few only.
 * Every position (258) made the site tables of zstd's 38 objects (772 KB,
 * written at every process start) 1.3% smaller and cost 20% more time
 * (perf samples of this function, 10 runs: 713 and 679 against 592 and
 * 523); 8 and a 16 KiB table (hash bits 14) fell in between. */
#ifndef DF_INSERT
#define DF_INSERT 4
#endif
#define DF_WINDOW 32768
#define DF_MIN 256 /* smaller payloads are written as they are */

struct df_out {
	uint8_t *p, *end;
	uint64_t acc;
	int n;
};

static inline void df_bits(struct df_out *o, uint32_t v, int n)
{
	o->acc |= (uint64_t)v << o->n;
	o->n += n;
	if (o->n >= 32) {
		if (o->p + 4 <= o->end) {
			uint32_t w = (uint32_t)o->acc;
			__builtin_memcpy(o->p, &w, 4);
			o->p += 4;
		} else {
			o->end = NULL; /* overflow: the caller writes the chunk as it is */
		}
		o->acc >>= 32;
		o->n -= 32;
	}
}

static inline uint32_t df_rev(uint32_t v, int n)
{
	uint32_t r = 0;
	for (int i = 0; i < n; i++, v >>= 1)
		r = (r << 1) | (v & 1);
	return r;
}

static const uint16_t df_lbase[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
				      35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t df_lext[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t df_dbase[30] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
				      257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t df_dext[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

/* the fixed literal/length codes (RFC 1951 3.2.6), bit-reversed, with
 * their lengths: code | length << 16; the length code of each match
 * length - 3, the distance code of each distance - 1 up to 256 and then
 * of (distance - 1) >> 7 (from 256 on), the distance codes bit-reversed
 * (built once; racing builders write the same values) */
static uint32_t df_code[288];
static uint8_t df_lcode[256], df_dcode[512], df_drev[30];
static int df_ready;

static void df_init(void)
{
	for (uint32_t s = 0; s < 288; s++) {
		uint32_t c, n;
		if (s < 144)
			c = 0x30 + s, n = 8;
		else if (s < 256)
			c = 0x190 + s - 144, n = 9;
		else if (s < 280)
			c = s - 256, n = 7;
		else
			c = 0xc0 + s - 280, n = 8;
		df_code[s] = df_rev(c, (int)n) | n << 16;
	}
	for (uint32_t len = 3, l = 0; len <= 258; len++) {
		while (l < 28 && df_lbase[l + 1] <= len)
			l++;
		df_lcode[len - 3] = (uint8_t)l;
	}
	for (uint32_t d = 1, k = 0; d <= 32768; d++) {
		while (k < 29 && df_dbase[k + 1] <= d)
			k++;
		if (d <= 256)
			df_dcode[d - 1] = (uint8_t)k;
		if (d > 256 && ((d - 1) & 127) == 0)
			df_dcode[256 + ((d - 1) >> 7)] = (uint8_t)k;
	}
	for (uint32_t k = 0; k < 30; k++)
		df_drev[k] = (uint8_t)df_rev(k, 5);
	STORE(&df_ready, 1);
}

static inline void df_sym(struct df_out *o, uint32_t s)
{
	df_bits(o, df_code[s] & 0xffff, (int)(df_code[s] >> 16));
}

static void df_match(struct df_out *o, uint32_t len, uint32_t dist)
{
	uint32_t l = df_lcode[len - 3], d = dist <= 256 ? df_dcode[dist - 1] : df_dcode[256 + ((dist - 1) >> 7)];
	df_sym(o, 257 + l);
	if (df_lext[l])
		df_bits(o, len - df_lbase[l], df_lext[l]);
	df_bits(o, df_drev[d], 5);
	if (df_dext[d])
		df_bits(o, dist - df_dbase[d], df_dext[d]);
}

static inline uint32_t df_load32(const uint8_t *p)
{
	uint32_t v;
	__builtin_memcpy(&v, p, 4);
	return v;
}

/* Compresses in[0:n] into out (cap bytes); returns the stream's length,
 * 0 when it does not fit. head: 1 << hb zeroed words. */
static size_t df_compress(const uint8_t *in, size_t n, uint8_t *out, size_t cap, uint32_t *head, int hb)
{
	struct df_out o = {out, out + cap, 0, 0};
	size_t i = 0;
	if (!LOAD(&df_ready))
		df_init();
	df_bits(&o, 1, 1); /* BFINAL */
	df_bits(&o, 1, 2); /* BTYPE 01: fixed codes */
	while (i < n && o.end) {
		if (i + 4 <= n) {
			uint32_t h = (df_load32(in + i) * 2654435761u) >> (32 - hb);
			size_t c = head[h];
			head[h] = (uint32_t)i + 1;
			if (c && i - (c - 1) <= DF_WINDOW && df_load32(in + c - 1) == df_load32(in + i)) {
				size_t m = c - 1, len = 4, max = n - i < 258 ? n - i : 258;
				while (len + 8 <= max) {
					uint64_t a, b;
					__builtin_memcpy(&a, in + m + len, 8);
					__builtin_memcpy(&b, in + i + len, 8);
					if (a != b) {
						len += (size_t)__builtin_ctzll(a ^ b) >> 3;
						break;
					}
					len += 8;
				}
				while (len < max && in[m + len] == in[i + len])
					len++;
				df_match(&o, (uint32_t)len, (uint32_t)(i - m));
				for (size_t k = i + 1; k < i + len && k <= i + DF_INSERT && k + 4 <= n; k++)
					head[(df_load32(in + k) * 2654435761u) >> (32 - hb)] = (uint32_t)k + 1;
				i += len;
				continue;
			}
		}
		df_sym(&o, in[i]);
		i++;
	}
	df_sym(&o, 256);
	for (; o.n > 0 && o.end; o.n -= 8, o.acc >>= 8) {
		if (o.p < o.end)
			*o.p++ = (uint8_t)o.acc;
		else
			o.end = NULL;
	}
	return o.end ? (size_t)(o.p - out) : 0;
}

/* The compressor's scratch memory: one mapping kept for the next chunk
 * (taken by one writer at a time; the others, and chunks larger than
 * DF_KEEP, map their own), so that compressing a chunk costs no page
 * faults. */
#define DF_KEEP (4u << 20)
static uint8_t *df_keep;
static size_t df_keep_bytes;
static int df_keep_busy;

static uint8_t *df_scratch_get(size_t bytes, int *cached)
{
	int z = 0;
	uint8_t *m;
	*cached = 0;
	if (bytes <= DF_KEEP && CAS(&df_keep_busy, &z, 1)) {
		if (df_keep_bytes < bytes) {
			size_t nb = bytes < (1u << 20) ? (1u << 20) : bytes;
			if (df_keep)
				sc3(SYS_munmap, (long)df_keep, (long)df_keep_bytes, 0);
			df_keep_bytes = 0;
			m = (uint8_t *)sc6(SYS_mmap, 0, (long)nb, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			df_keep = (unsigned long)m > -4096ul ? NULL : m;
			if (df_keep)
				df_keep_bytes = nb;
		}
		if (df_keep) {
			*cached = 1;
			return df_keep;
		}
		STORE(&df_keep_busy, 0);
	}
	m = (uint8_t *)sc6(SYS_mmap, 0, (long)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return (unsigned long)m > -4096ul ? NULL : m;
}

static void df_scratch_put(uint8_t *m, size_t bytes, int cached)
{
	if (cached)
		STORE(&df_keep_busy, 0);
	else
		sc3(SYS_munmap, (long)m, (long)bytes, 0);
}

/* Whether the C part stores its chunks of this type compressed. Not
 * ALLOCS: their compact records (6.4 bytes an event) leave the compressor
 * little, and compressing them on the allocating thread cost
 * allocation-heavy programs more than the bytes saved (speedtest1 on/off
 * 1.05 -> 1.09, allocbench 1.48 -> 2.87). */
static int df_type(uint16_t type)
{
	return type == CH_OBJECT || type == CH_RAW || type == CH_BLOCKS || type == CH_COUNTS || type == CH_MAPS;
}

/* ------------------------------------------------------------------ */
/* chunks                                                              */


/* Write one chunk: iov[0] is filled with the chunk header; iov[1..n) is
 * the payload. Large chunks of the types df_type names go into a DEFLATE
 * chunk when that makes them smaller (not with VPTRACE_COMPRESS=0): the
 * payload copied and compressed in a mapping of the call's own (any
 * thread, signal handlers too), one stream per chunk. */
HIDDEN int vrt_write_chunk_fd(int fd, uint16_t type, struct iovec *iov, int n)
{
	size_t len = 0, cap, bytes, zn, hbytes;
	uint8_t *m, *in, *out;
	struct iovec z[3];
	int r, hb = 10, cached = 0;
	if (fd < 0)
		return -1;
	for (int i = 1; i < n; i++)
		len += iov[i].iov_len;
	if (!vrt_cfg_compress || !df_type(type) || len < DF_MIN || len > (1u << 30))
		return vrt_write_chunk_plain(fd, type, iov, n);
	while (hb < DF_HASH_BITS && ((size_t)1 << hb) < len)
		hb++;
	hbytes = (size_t)4 << hb;
	cap = len - len / 16; /* worth it only below this */
	bytes = (hbytes + len + 8 + cap + 4095) & ~(size_t)4095;
	m = df_scratch_get(bytes, &cached);
	if (!m)
		return vrt_write_chunk_plain(fd, type, iov, n);
	zero_bytes(m, hbytes);
	in = m + hbytes;
	out = in + len;
	for (size_t i = 1, off = 0; i < (size_t)n; i++) {
		copy_bytes(in + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	put16(out, type);
	put16(out + 2, 0);
	put32(out + 4, (uint32_t)len);
	zn = df_compress(in, len, out + 8, cap, (uint32_t *)(void *)m, hb);
	if (zn == 0) {
		r = vrt_write_chunk_plain(fd, type, iov, n);
	} else {
		z[1].iov_base = out;
		z[1].iov_len = 8 + zn;
		r = vrt_write_chunk_plain(fd, CH_DEFLATE, z, 2);
	}
	df_scratch_put(m, bytes, cached);
	return r;
}

HIDDEN int vrt_write_chunk_plain(int fd, uint16_t type, struct iovec *iov, int n)
{
	uint8_t hdr[16];
	size_t len = 0, total;
	uint32_t crc;
	if (fd < 0)
		return -1;
	for (int i = 1; i < n; i++)
		len += iov[i].iov_len;
	put32(hdr, CHUNK_MAGIC);
	put16(hdr + 4, type);
	put16(hdr + 6, 0);
	put32(hdr + 8, (uint32_t)len);
	crc = vrt_crc32c(0, hdr + 4, 8);
	for (int i = 1; i < n; i++)
		crc = vrt_crc32c(crc, iov[i].iov_base, iov[i].iov_len);
	put32(hdr + 12, crc);
	iov[0].iov_base = hdr;
	iov[0].iov_len = 16;
	total = len + 16;
	for (;;) {
		long r = sc3(SYS_writev, fd, iov, n);
		if (r == -EINTR)
			continue;
		if (r <= 0) {
			vrt_write_failed(r < 0 ? (int)-r : ENOSPC); /* (0: a device that takes nothing) */
			return -1;
		}
		if ((size_t)r >= total)
			return 0;
		/* short write (disk full?): finish it; the chunk may be damaged */
		total -= (size_t)r;
		while (r > 0) {
			if ((size_t)r >= iov[0].iov_len) {
				r -= (long)iov[0].iov_len;
				iov++;
				n--;
			} else {
				iov[0].iov_base = (char *)iov[0].iov_base + r;
				iov[0].iov_len -= (size_t)r;
				r = 0;
			}
		}
	}
}
/* Write a chunk to the trace; in a fork child, the first one creates the
 * child's file (so a child that only execs leaves none). */
HIDDEN int vrt_write_chunk(uint16_t type, struct iovec *iov, int n)
{
	int fd = LOAD(&vrt_trace_fd);
	if (fd < 0)
		fd = vrt_child_open_now();
	return vrt_write_chunk_fd(fd, type, iov, n);
}
uint64_t vpt_now(void)
{
	return clock_ns(CLOCK_MONOTONIC) - vrt_start_mono;
}
HIDDEN void vrt_clock_bump(void)
{
	uint64_t now = vpt_now(), old = LOAD(&vpt_hot.clock);
	while (old < now && !CAS(&vpt_hot.clock, &old, now))
		;
}
HIDDEN void vrt_note_chunk(uint32_t kind, uint32_t tid, uint64_t value, const char *text)
{
	uint8_t fix[28];
	struct iovec iov[3];
	size_t tl = text ? cstrlen(text) : 0;
	if (tl > 4096)
		tl = 4096;
	put32(fix, kind);
	put32(fix + 4, tid);
	put64(fix + 8, vpt_now());
	put64(fix + 16, value);
	put32(fix + 24, (uint32_t)tl);
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	iov[2].iov_base = (void *)(text ? text : "");
	iov[2].iov_len = tl;
	vrt_write_chunk(CH_NOTE, iov, 3);
}
HIDDEN void vrt_warn_once(uint32_t bit, uint64_t value, const char *text)
{
	if (!(FADD(&vrt_warned, 0) & bit) && !(__atomic_fetch_or(&vrt_warned, bit, __ATOMIC_SEQ_CST) & bit))
		vrt_note_chunk(VPTRACE_NOTE_WARNING, sys_gettid(), value, text);
}
/* RAW chunk: fixed part (48 bytes) then events */
HIDDEN void vrt_raw_chunk(uint64_t serial, uint32_t tid, uint32_t flags, uint64_t drops,
		      const struct vpt_event *ev, uint64_t n)
{
	uint8_t fix[48];
	struct iovec iov[3];
	zero_bytes(fix, sizeof fix);
	put64(fix, serial);
	put32(fix + 8, tid);
	put32(fix + 12, flags);
	put64(fix + 16, drops);
	put64(fix + 24, vpt_now());
	put32(fix + 32, (uint32_t)n);
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	iov[2].iov_base = (void *)ev;
	iov[2].iov_len = n * sizeof(struct vpt_event);
	vrt_write_chunk(CH_RAW, iov, 3);
}
HIDDEN void vrt_thread_exit_chunk(uint64_t serial, uint32_t tid, uint64_t texit, uint64_t events,
			      uint64_t drops, const char *name)
{
	uint8_t fix[56];
	struct iovec iov[2];
	zero_bytes(fix, sizeof fix);
	put64(fix, serial);
	put32(fix + 8, tid);
	put64(fix + 16, texit);
	put64(fix + 24, events);
	put64(fix + 32, drops);
	for (int i = 0; i < 15 && name[i]; i++)
		fix[40 + i] = (uint8_t)name[i];
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	vrt_write_chunk(CH_THREAD_EXIT, iov, 2);
}
HIDDEN void vrt_end_chunk(uint32_t flags, uint64_t lost)
{
	uint8_t fix[48];
	struct iovec iov[2];
	uint32_t err = (uint32_t)LOAD(&vrt_write_errno);
	zero_bytes(fix, sizeof fix);
	put64(fix, vpt_now());
	put64(fix + 8, LOAD(&vrt_serial_ctr));
	put64(fix + 16, 0);
	put64(fix + 24, LOAD(&vrt_total_drops));
	put32(fix + 32, flags | (err ? VPTRACE_END_WRITE_ERROR : 0) | (lost ? VPTRACE_END_LOST : 0));
	put32(fix + 36, err);
	put64(fix + 40, lost);
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	vrt_write_chunk(CH_END, iov, 2);
}

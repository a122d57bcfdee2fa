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
/* chunks                                                              */
/* Write one chunk: iov[0] is filled with the chunk header; iov[1..n) is the payload. */
HIDDEN int vrt_write_chunk_fd(int fd, uint16_t type, struct iovec *iov, int n)
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
HIDDEN void vrt_end_chunk(uint32_t flags)
{
	uint8_t fix[40];
	struct iovec iov[2];
	uint32_t err = (uint32_t)LOAD(&vrt_write_errno);
	zero_bytes(fix, sizeof fix);
	put64(fix, vpt_now());
	put64(fix + 8, LOAD(&vrt_serial_ctr));
	put64(fix + 16, 0);
	put64(fix + 24, LOAD(&vrt_total_drops));
	put32(fix + 32, flags | (err ? VPTRACE_END_WRITE_ERROR : 0));
	put32(fix + 36, err);
	iov[1].iov_base = fix;
	iov[1].iov_len = sizeof fix;
	vrt_write_chunk(CH_END, iov, 2);
}

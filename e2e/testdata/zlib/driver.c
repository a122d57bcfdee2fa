/*
 * zlib driver for the e2e suite: exercises compress/uncompress, deflate and
 * inflate streams with many parameter combinations, gzip file I/O, and the
 * checksums, printing sizes and checksums of everything. Built against the
 * original and the rewritten libz.a; the outputs must match.
 *
 *   driver            (writes scratch .gz files into the current directory)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static unsigned long failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);           \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
			failures++;                                            \
		}                                                              \
	} while (0)

/* deterministic xorshift generator */
static unsigned long long rng = 88172645463325252ULL;
static unsigned long long next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

enum kind { ZEROS, TEXT, RANDOM, RUNS, MIXED, BINARYISH, NKINDS };
static const char *kind_name[] = {"zeros", "text", "random", "runs", "mixed", "binaryish"};

static const char *words[] = {"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog",
			      "page", "access", "trace", "virtual", "memory", "thread", "buffer",
			      "relocation", "section", "symbol", "\n"};

static unsigned char *make_data(enum kind k, size_t n)
{
	unsigned char *p = malloc(n ? n : 1);
	size_t i = 0;
	switch (k) {
	case ZEROS:
		memset(p, 0, n);
		break;
	case TEXT:
		while (i < n) {
			const char *w = words[next_rand() % (sizeof words / sizeof *words)];
			for (; *w && i < n; w++)
				p[i++] = (unsigned char)*w;
			if (i < n)
				p[i++] = ' ';
		}
		break;
	case RANDOM:
		for (; i < n; i++)
			p[i] = (unsigned char)(next_rand() >> 24);
		break;
	case RUNS:
		while (i < n) {
			unsigned char c = (unsigned char)(next_rand() % 4);
			size_t len = 1 + next_rand() % 300;
			for (; len-- && i < n; i++)
				p[i] = c;
		}
		break;
	case MIXED:
		for (; i < n; i++)
			p[i] = (i / 4096) % 2 ? (unsigned char)(next_rand() >> 40) : (unsigned char)("abcdefgh"[i % 8]);
		break;
	case BINARYISH:
		for (; i < n; i++) {
			unsigned long long r = next_rand();
			p[i] = (r & 7) ? (unsigned char)(i * 7 + (i >> 8)) : (unsigned char)(r >> 32);
		}
		break;
	default:
		break;
	}
	return p;
}

static void test_compress_api(const unsigned char *data, size_t n, const char *label)
{
	for (int level = -1; level <= 9; level++) {
		uLongf clen = compressBound(n);
		unsigned char *c = malloc(clen);
		int rc = compress2(c, &clen, data, n, level);
		CHECK(rc == Z_OK, "compress2 %s level %d: %d", label, level, rc);
		uLongf dlen = n;
		unsigned char *d = malloc(n ? n : 1);
		rc = uncompress(d, &dlen, c, clen);
		CHECK(rc == Z_OK && dlen == n && memcmp(d, data, n) == 0, "uncompress %s level %d: %d", label, level, rc);
		/* uncompress2 with exact source length reporting */
		uLong slen = clen;
		dlen = n;
		rc = uncompress2(d, &dlen, c, &slen);
		CHECK(rc == Z_OK && slen == clen, "uncompress2 %s: %d", label, rc);
		printf("  compress2 level %2d: %7lu -> %7lu adler %08lx\n", level, (unsigned long)n,
		       (unsigned long)clen, adler32(1, c, (uInt)clen));
		free(c);
		free(d);
	}
}

/* deflate in small chunks with a given output buffer size, flushing now and then */
static unsigned char *deflate_stream(const unsigned char *data, size_t n, int level, int wbits,
				     int memlevel, int strategy, size_t chunk, size_t *outlen)
{
	z_stream s;
	memset(&s, 0, sizeof s);
	int rc = deflateInit2(&s, level, Z_DEFLATED, wbits, memlevel, strategy);
	CHECK(rc == Z_OK, "deflateInit2: %d", rc);
	size_t cap = deflateBound(&s, n) + 64 + n / 8, used = 0;
	unsigned char *out = malloc(cap);
	size_t pos = 0;
	int round = 0;
	for (;;) {
		size_t take = n - pos < chunk ? n - pos : chunk;
		s.next_in = (Bytef *)data + pos;
		s.avail_in = (uInt)take;
		pos += take;
		int flush = pos == n ? Z_FINISH : (round % 7 == 3 ? Z_SYNC_FLUSH : (round % 11 == 5 ? Z_FULL_FLUSH : Z_NO_FLUSH));
		do {
			if (cap - used < 64) {
				cap *= 2;
				out = realloc(out, cap);
			}
			s.next_out = out + used;
			size_t room = cap - used < 997 ? cap - used : 997; /* odd output sizes */
			s.avail_out = (uInt)room;
			rc = deflate(&s, flush);
			used += room - s.avail_out;
			CHECK(rc != Z_STREAM_ERROR, "deflate: stream error");
		} while (s.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
		round++;
		if (flush == Z_FINISH)
			break;
		if (round == 5) {
			/* change parameters mid-stream */
			if (cap - used < 4096) {
				cap = cap * 2 + 4096;
				out = realloc(out, cap);
			}
			s.next_out = out + used;
			s.avail_out = (uInt)(cap - used);
			rc = deflateParams(&s, level == 1 ? 9 : 1, Z_DEFAULT_STRATEGY);
			used = cap - s.avail_out;
			CHECK(rc == Z_OK, "deflateParams: %d", rc);
		}
	}
	CHECK(rc == Z_STREAM_END, "deflate end: %d", rc);
	deflateEnd(&s);
	*outlen = used;
	return out;
}

static unsigned char *inflate_stream(const unsigned char *c, size_t clen, int wbits, size_t expect, size_t chunk,
				     size_t *outlen)
{
	z_stream s;
	memset(&s, 0, sizeof s);
	int rc = inflateInit2(&s, wbits);
	CHECK(rc == Z_OK, "inflateInit2: %d", rc);
	unsigned char *out = malloc(expect + 1);
	size_t used = 0, pos = 0;
	for (;;) {
		if (s.avail_in == 0 && pos < clen) {
			size_t take = clen - pos < chunk ? clen - pos : chunk;
			s.next_in = (Bytef *)c + pos;
			s.avail_in = (uInt)take;
			pos += take;
		}
		s.next_out = out + used;
		size_t room = expect + 1 - used < 613 ? expect + 1 - used : 613;
		s.avail_out = (uInt)room;
		rc = inflate(&s, Z_NO_FLUSH);
		used += room - s.avail_out;
		if (rc == Z_STREAM_END || used > expect)
			break;
		if (rc == Z_BUF_ERROR && pos < clen)
			continue; /* needs more input */
		if (rc != Z_OK)
			break;
	}
	CHECK(rc == Z_STREAM_END, "inflate: %d (%s)", rc, s.msg ? s.msg : "");
	inflateEnd(&s);
	*outlen = used;
	return out;
}

static void test_streams(const unsigned char *data, size_t n, const char *label)
{
	static const struct {
		int wbits, memlevel, strategy;
		const char *name;
	} modes[] = {
		{15, 8, Z_DEFAULT_STRATEGY, "zlib"},
		{-15, 8, Z_DEFAULT_STRATEGY, "raw"},
		{31, 9, Z_DEFAULT_STRATEGY, "gzip"},
		{9, 1, Z_DEFAULT_STRATEGY, "zlib-w9-m1"},
		{15, 8, Z_FILTERED, "filtered"},
		{15, 8, Z_HUFFMAN_ONLY, "huffman"},
		{15, 8, Z_RLE, "rle"},
		{15, 8, Z_FIXED, "fixed"},
	};
	static const int levels[] = {0, 1, 6, 9};
	for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
		for (size_t l = 0; l < sizeof levels / sizeof *levels; l++) {
			size_t clen, dlen;
			size_t chunk = 1 + (m * 131 + l * 977) % 5000;
			unsigned char *c = deflate_stream(data, n, levels[l], modes[m].wbits, modes[m].memlevel,
							  modes[m].strategy, chunk, &clen);
			int iw = modes[m].wbits == 31 ? 47 : modes[m].wbits; /* 47: auto-detect */
			unsigned char *d = inflate_stream(c, clen, iw, n, 1 + chunk / 3, &dlen);
			CHECK(dlen == n && memcmp(d, data, n) == 0, "round trip %s %s level %d", label, modes[m].name,
			      levels[l]);
			printf("  %-10s level %d: %7lu -> %7lu crc %08lx\n", modes[m].name, levels[l], (unsigned long)n,
			       (unsigned long)clen, crc32(0, c, (uInt)clen));
			free(c);
			free(d);
		}
	}
}

static void test_dictionary(void)
{
	const char dict[] = "relocation section symbol thread buffer page access trace";
	const char *msg = "page access trace: relocation of section symbol; thread buffer page access trace";
	unsigned char c[512], d[512];
	z_stream s;
	memset(&s, 0, sizeof s);
	deflateInit(&s, 9);
	deflateSetDictionary(&s, (const Bytef *)dict, sizeof dict - 1);
	uLong dictid = s.adler;
	s.next_in = (Bytef *)msg;
	s.avail_in = (uInt)strlen(msg);
	s.next_out = c;
	s.avail_out = sizeof c;
	CHECK(deflate(&s, Z_FINISH) == Z_STREAM_END, "dict deflate");
	size_t clen = sizeof c - s.avail_out;
	deflateEnd(&s);

	memset(&s, 0, sizeof s);
	inflateInit(&s);
	s.next_in = c;
	s.avail_in = (uInt)clen;
	s.next_out = d;
	s.avail_out = sizeof d;
	int rc = inflate(&s, Z_NO_FLUSH);
	CHECK(rc == Z_NEED_DICT && s.adler == dictid, "inflate wants dict: %d", rc);
	inflateSetDictionary(&s, (const Bytef *)dict, sizeof dict - 1);
	rc = inflate(&s, Z_FINISH);
	CHECK(rc == Z_STREAM_END && memcmp(d, msg, strlen(msg)) == 0, "dict inflate: %d", rc);
	inflateEnd(&s);
	printf("dictionary: id %08lx, %zu -> %zu bytes\n", dictid, strlen(msg), clen);
}

static void test_gzip_files(const unsigned char *data, size_t n, const char *label, int idx)
{
	char name[64];
	snprintf(name, sizeof name, "scratch-%d.gz", idx);
	static const char *modes[] = {"wb", "wb1", "wb9", "wb6f", "wb6h", "wb6R", "wT"};
	const char *mode = modes[idx % (sizeof modes / sizeof *modes)];
	gzFile f = gzopen(name, mode);
	CHECK(f != NULL, "gzopen %s", name);
	gzbuffer(f, 1024 + idx * 512);
	size_t pos = 0;
	int piece = 0;
	while (pos < n) {
		size_t take = 1 + (next_rand() % 9000);
		if (take > n - pos)
			take = n - pos;
		if (piece % 5 == 4) {
			for (size_t i = 0; i < take && i < 200; i++)
				gzputc(f, data[pos + i]);
			take = take < 200 ? take : 200;
		} else {
			CHECK(gzwrite(f, data + pos, (unsigned)take) == (int)take, "gzwrite");
		}
		pos += take;
		piece++;
	}
	gzprintf(f, "\n-- %s %zu bytes %d pieces --\n", label, n, piece);
	gzputs(f, "end of file\n");
	CHECK(gzclose(f) == Z_OK, "gzclose");

	FILE *raw = fopen(name, "rb");
	fseek(raw, 0, SEEK_END);
	long rawlen = ftell(raw);
	fclose(raw);

	f = gzopen(name, "rb");
	CHECK(f != NULL, "gzopen read");
	unsigned char *back = malloc(n + 1);
	int got = gzread(f, back, (unsigned)n);
	CHECK(got == (int)n && memcmp(back, data, n) == 0, "gzread %s: %d of %zu", label, got, n);
	char line[256];
	int lines = 0;
	while (gzgets(f, line, sizeof line))
		lines++;
	CHECK(gzeof(f), "gzeof");
	if (n > 1000) {
		z_off_t off = gzseek(f, 777, SEEK_SET);
		int c = gzgetc(f);
		CHECK(off == 777 && c == data[777], "gzseek/gzgetc");
		gzungetc(c, f);
		CHECK(gzgetc(f) == data[777], "gzungetc");
		CHECK(gztell(f) == 778, "gztell");
	}
	gzclose(f);
	printf("  gz %-9s mode %-4s: %7zu -> %7ld bytes, %d trailer lines, crc %08lx\n", label, mode, n, rawlen, lines,
	       crc32(0, back, (uInt)n));
	free(back);
}

static void test_checksums(void)
{
	unsigned char *d = make_data(TEXT, 100000);
	uLong a = adler32(0, NULL, 0), c = crc32(0, NULL, 0);
	uLong a1 = adler32(a, d, 40000), a2 = adler32(a, d + 40000, 60000);
	uLong c1 = crc32(c, d, 40000), c2 = crc32(c, d + 40000, 60000);
	uLong af = adler32(a, d, 100000), cf = crc32(c, d, 100000);
	CHECK(adler32_combine(a1, a2, 60000) == af, "adler32_combine");
	CHECK(crc32_combine(c1, c2, 60000) == cf, "crc32_combine");
	uLong op = crc32_combine_gen(60000);
	CHECK(crc32_combine_op(c1, c2, op) == cf, "crc32_combine_op");
	printf("checksums: adler %08lx crc %08lx (parts %08lx %08lx %08lx %08lx)\n", af, cf, a1, a2, c1, c2);
	for (size_t len = 0; len < 64; len += 7)
		printf("  crc32(%2zu) %08lx adler32(%2zu) %08lx crc32_z %08lx\n", len, crc32(0, d + len, (uInt)len), len,
		       adler32(1, d + len, (uInt)len), crc32_z(0, d, len * 1000));
	const z_crc_t *tab = get_crc_table();
	printf("  crc table[1] %08lx table[255] %08lx\n", (unsigned long)tab[1], (unsigned long)tab[255]);
	free(d);
}

static void test_errors(void)
{
	unsigned char junk[64], out[64];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (unsigned char)(i * 37 + 11);
	uLongf olen = sizeof out;
	int rc = uncompress(out, &olen, junk, sizeof junk);
	printf("errors: uncompress(junk) = %d\n", rc);
	z_stream s;
	memset(&s, 0, sizeof s);
	inflateInit(&s);
	s.next_in = junk;
	s.avail_in = sizeof junk;
	s.next_out = out;
	s.avail_out = sizeof out;
	rc = inflate(&s, Z_NO_FLUSH);
	printf("errors: inflate(junk) = %d msg \"%s\"\n", rc, s.msg ? s.msg : "");
	inflateEnd(&s);
	unsigned char small[4];
	uLongf slen = sizeof small;
	unsigned char src[100];
	memset(src, 'x', sizeof src);
	rc = compress(small, &slen, src, sizeof src);
	printf("errors: compress into 4 bytes = %d\n", rc);
	printf("errors: zError(Z_DATA_ERROR) = %s\n", zError(Z_DATA_ERROR));
}

int main(void)
{
	static const size_t sizes[] = {0, 1, 17, 1000, 65536, 300000};
	printf("zlib %s\n", zlibVersion());
	int idx = 0;
	for (int k = 0; k < NKINDS; k++) {
		for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
			size_t n = sizes[si];
			unsigned char *data = make_data((enum kind)k, n);
			char label[64];
			snprintf(label, sizeof label, "%s/%zu", kind_name[k], n);
			printf("%s: crc %08lx adler %08lx\n", label, crc32(0, data, (uInt)n), adler32(1, data, (uInt)n));
			if (n <= 65536)
				test_compress_api(data, n, label);
			if (si % 2 == 1 || n == 300000)
				test_streams(data, n, label);
			test_gzip_files(data, n, label, idx++);
			free(data);
		}
	}
	test_dictionary();
	test_checksums();
	test_errors();
	printf("%lu failures\n", failures);
	return failures != 0;
}

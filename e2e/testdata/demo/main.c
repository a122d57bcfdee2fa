/*
 * wordfreq: count words in the files named on the command line (or stdin)
 * and print statistics: the most frequent words, the longest words, a
 * histogram of word lengths and a checksum over the whole table.
 *
 *   wordfreq [-n TOP] [FILE...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wordfreq.h"

struct stats {
	struct table tab;
	unsigned long lengths[17];
	unsigned long total;
};

static void count_word(const char *w, size_t n, unsigned long line, void *arg)
{
	struct stats *st = arg;
	table_add(&st->tab, w, n, line);
	st->lengths[n < 16 ? n : 16]++;
	st->total++;
}

static char *slurp(FILE *f, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	size_t r;
	while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
	}
	if (!buf) {
		perror("malloc");
		exit(1);
	}
	*len = n;
	return buf;
}

static void count_stream(struct stats *st, FILE *f)
{
	size_t len;
	char *buf = slurp(f, &len);
	split_words(buf, len, count_word, st);
	free(buf);
}

int main(int argc, char **argv)
{
	struct stats st;
	int top = 20, i = 1;

	memset(&st, 0, sizeof st);
	table_init(&st.tab, 16);
	if (argc > 2 && strcmp(argv[1], "-n") == 0) {
		top = atoi(argv[2]);
		i = 3;
	}
	if (i == argc)
		count_stream(&st, stdin);
	for (; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			perror(argv[i]);
			return 2;
		}
		count_stream(&st, f);
		fclose(f);
	}

	printf("words %lu, distinct %zu, buckets %zu, resizes %lu, load %.3f, longest chain %zu\n",
	       st.total, st.tab.nentries, st.tab.nbuckets, st.tab.resizes,
	       table_load(&st.tab), table_longest_chain(&st.tab));

	struct entry **v = table_sorted(&st.tab, by_count);
	printf("\ntop %d words:\n", top);
	for (int k = 0; k < top && v[k]; k++)
		printf("%4d. %-20s %6lu  (first on line %lu)\n", k + 1, v[k]->word, v[k]->count,
		       v[k]->first_line);
	free(v);

	v = table_sorted(&st.tab, by_length);
	printf("\nlongest words:");
	for (int k = 0; k < 5 && v[k]; k++)
		printf(" %s(%zu)", v[k]->word, v[k]->len);
	printf("\n");
	free(v);

	printf("\nword lengths:\n");
	unsigned long max = 1;
	for (int k = 1; k <= 16; k++)
		if (st.lengths[k] > max)
			max = st.lengths[k];
	for (int k = 1; k <= 16; k++) {
		int bar = (int)(st.lengths[k] * 50 / max);
		printf("%3d%s %6lu %.*s\n", k, k == 16 ? "+" : " ", st.lengths[k], bar,
		       "##################################################");
	}

	v = table_sorted(&st.tab, by_word);
	uint64_t sum = 0;
	for (size_t k = 0; v[k]; k++)
		sum = sum * 31 + hash_bytes(v[k]->word, v[k]->len) + v[k]->count;
	printf("\nchecksum %016llx\n", (unsigned long long)sum);
	free(v);
	table_free(&st.tab);
	return 0;
}

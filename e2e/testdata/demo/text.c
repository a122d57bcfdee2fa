/* Splitting text into lower-cased words, and the qsort comparators. */
#include <ctype.h>
#include <string.h>
#include "wordfreq.h"

size_t split_words(const char *buf, size_t len, word_fn fn, void *arg)
{
	char word[64];
	size_t n = 0, words = 0;
	unsigned long line = 1;

	for (size_t i = 0; i <= len; i++) {
		int c = i < len ? (unsigned char)buf[i] : ' ';
		if (isalnum(c) || (c == '\'' && n > 0) || c == '_') {
			if (n < sizeof word)
				word[n++] = (char)tolower(c);
			continue;
		}
		while (n > 0 && word[n - 1] == '\'')
			n--;
		if (n > 0) {
			fn(word, n, line, arg);
			words++;
			n = 0;
		}
		if (c == '\n')
			line++;
	}
	return words;
}

int by_count(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a;
	const struct entry *y = *(const struct entry *const *)b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->word, y->word);
}

int by_word(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a;
	const struct entry *y = *(const struct entry *const *)b;
	return strcmp(x->word, y->word);
}

int by_length(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a;
	const struct entry *y = *(const struct entry *const *)b;
	if (x->len != y->len)
		return x->len < y->len ? 1 : -1;
	return strcmp(x->word, y->word);
}

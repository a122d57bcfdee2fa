/* wordfreq: a small word-frequency counter used by `make demo`. */
#ifndef WORDFREQ_H
#define WORDFREQ_H

#include <stddef.h>
#include <stdint.h>

struct entry {
	char *word;
	size_t len;
	unsigned long count;
	unsigned long first_line; /* line of first occurrence */
	struct entry *next;       /* hash chain */
};

struct table {
	struct entry **buckets;
	size_t nbuckets;
	size_t nentries;
	unsigned long resizes;
};

/* hashtab.c */
uint64_t hash_bytes(const char *s, size_t n);
void table_init(struct table *t, size_t nbuckets);
struct entry *table_add(struct table *t, const char *w, size_t n, unsigned long line);
struct entry **table_sorted(const struct table *t, int (*cmp)(const void *, const void *));
void table_free(struct table *t);
double table_load(const struct table *t);
size_t table_longest_chain(const struct table *t);

/* text.c */
typedef void (*word_fn)(const char *w, size_t n, unsigned long line, void *arg);
size_t split_words(const char *buf, size_t len, word_fn fn, void *arg);
int by_count(const void *a, const void *b);
int by_word(const void *a, const void *b);
int by_length(const void *a, const void *b);

#endif

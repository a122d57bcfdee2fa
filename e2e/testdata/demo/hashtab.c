/* Chained hash table with FNV-1a hashing and doubling growth. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "wordfreq.h"

uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

void table_init(struct table *t, size_t nbuckets)
{
	t->buckets = calloc(nbuckets, sizeof *t->buckets);
	if (!t->buckets) {
		perror("calloc");
		exit(1);
	}
	t->nbuckets = nbuckets;
	t->nentries = 0;
	t->resizes = 0;
}

static void table_grow(struct table *t)
{
	size_t nb = t->nbuckets * 2;
	struct entry **b = calloc(nb, sizeof *b);
	if (!b) {
		perror("calloc");
		exit(1);
	}
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct entry *e = t->buckets[i], *next;
		for (; e; e = next) {
			next = e->next;
			size_t j = hash_bytes(e->word, e->len) & (nb - 1);
			e->next = b[j];
			b[j] = e;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = nb;
	t->resizes++;
}

struct entry *table_add(struct table *t, const char *w, size_t n, unsigned long line)
{
	size_t i = hash_bytes(w, n) & (t->nbuckets - 1);
	for (struct entry *e = t->buckets[i]; e; e = e->next) {
		if (e->len == n && memcmp(e->word, w, n) == 0) {
			e->count++;
			return e;
		}
	}
	if (t->nentries + 1 > t->nbuckets * 3 / 4) {
		table_grow(t);
		i = hash_bytes(w, n) & (t->nbuckets - 1);
	}
	struct entry *e = malloc(sizeof *e);
	if (!e || !(e->word = malloc(n + 1))) {
		perror("malloc");
		exit(1);
	}
	memcpy(e->word, w, n);
	e->word[n] = 0;
	e->len = n;
	e->count = 1;
	e->first_line = line;
	e->next = t->buckets[i];
	t->buckets[i] = e;
	t->nentries++;
	return e;
}

struct entry **table_sorted(const struct table *t, int (*cmp)(const void *, const void *))
{
	struct entry **v = malloc((t->nentries + 1) * sizeof *v);
	size_t k = 0;
	if (!v) {
		perror("malloc");
		exit(1);
	}
	for (size_t i = 0; i < t->nbuckets; i++)
		for (struct entry *e = t->buckets[i]; e; e = e->next)
			v[k++] = e;
	qsort(v, k, sizeof *v, cmp);
	v[k] = NULL;
	return v;
}

double table_load(const struct table *t)
{
	return (double)t->nentries / (double)t->nbuckets;
}

size_t table_longest_chain(const struct table *t)
{
	size_t best = 0;
	for (size_t i = 0; i < t->nbuckets; i++) {
		size_t n = 0;
		for (struct entry *e = t->buckets[i]; e; e = e->next)
			n++;
		if (n > best)
			best = n;
	}
	return best;
}

void table_free(struct table *t)
{
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct entry *e = t->buckets[i], *next;
		for (; e; e = next) {
			next = e->next;
			free(e->word);
			free(e);
		}
	}
	free(t->buckets);
	t->buckets = NULL;
	t->nbuckets = t->nentries = 0;
}

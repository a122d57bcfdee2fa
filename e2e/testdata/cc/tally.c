/* A small library for hijack cc's build-system tests: loops, a switch
   (a jump table at -O2), calls through a function pointer. */
#include "tally.h"

static int weight(char c)
{
	switch (c) {
	case 'a': case 'e': case 'i': case 'o': case 'u':
		return 3;
	case 'y':
		return 2;
	case ' ': case '\t': case '\n':
		return 0;
	case '0': case '1': case '2': case '3': case '4':
	case '5': case '6': case '7': case '8': case '9':
		return 5;
	default:
		return 1;
	}
}

int tally(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += weight(*s);
	return n;
}

int tally_each(const char *const *words, int count, int (*f)(const char *))
{
	int n = 0;
	for (int i = 0; i < count; i++)
		n = n * 31 + f(words[i]);
	return n;
}

#ifndef TALLY_H
#define TALLY_H
#ifdef __cplusplus
extern "C" {
#endif
int tally(const char *s);
int tally_each(const char *const *words, int count, int (*f)(const char *));
#ifdef __cplusplus
}
#endif
#endif

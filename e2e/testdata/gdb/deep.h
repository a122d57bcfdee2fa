#include <stdint.h>
enum { MODE_OK, MODE_SEGV, MODE_ABORT };
struct node {
	int value;
	uintptr_t poison;
	struct node *next;
};
int walk(struct node *head, int mode);
int descend(struct node *n, int mode);
int inspect(struct node *n, int mode);
int crash_here(struct node *n, int mode);

/* chase: linked-list pointer chasing across thousands of pages. */
struct node {
	struct node *next;
	long val;
	long pad[6]; /* 64 bytes */
};

/* A node larger than half a page: its head and tail fields lie 3000 bytes
 * apart, on different pages for about 3 in 4 placements. */
struct bignode {
	struct bignode *next;
	long head;
	char body[2984];
	long tail; /* offset 3000 */
	long pad[9];
};

long chase_sum(const struct node *n);
void chase_inc(struct node *n);
long chase_big(const struct bignode *n);
long chase_count(const struct node *n, long steps);

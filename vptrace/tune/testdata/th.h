/* th: the heap workload of the tune tests. Every worker thread builds a
 * linked list of small malloc'ed nodes in shuffled order (its malloc
 * arena) and fills and sweeps a 2 MiB block (mmap'ed: every worker has
 * allocated before any frees, so glibc has not raised its mmap threshold
 * yet); the main thread sweeps a block of its own. With more threads than malloc creates arenas
 * for (8 per core), threads share arenas and their nodes interleave: the
 * pages each thread touches then change from run to run. */
struct node {
	struct node *next;
	long key, val;
	char pad[40];
};

long th_chase(struct node *n, long rounds);
long th_sweep(long *a, long n, long step);
void th_fill(long *a, long n, long seed);

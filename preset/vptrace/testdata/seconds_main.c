/* Driver for seconds.c: each accessor is called for two vectors in turn,
 * each vector with its own header page and data page, so that each of its
 * sites trades two pages back and forth; then a fork child calls each
 * accessor once for each of its two vectors. Prints "page 0x..." for every
 * page the parent touched through the accessors (the child touches the
 * same), "child PID" and the sum; exits 0 only if the child's sum is right. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 300
struct vec {
	long n;
	long *data;
};
extern long (*const accessors[N])(const struct vec *, long);

static char *mem;
static struct vec *hdr(int i, int w) { return (struct vec *)(mem + (4 * i + 2 * w) * 4096L); }

static long sweep(int rounds)
{
	long s = 0;
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < N; i++)
			for (int w = 0; w < 2; w++)
				s += accessors[i](hdr(i, w), r % 512);
	return s;
}

int main(void)
{
	mem = mmap(NULL, 4L * N * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	for (int i = 0; i < N; i++)
		for (int w = 0; w < 2; w++) {
			struct vec *v = hdr(i, w);
			v->n = 512;
			v->data = (long *)((char *)v + 4096);
			for (int j = 0; j < 512; j++)
				v->data[j] = i * 1000 + w * 100 + j;
		}
	long s = sweep(4), want = 0;
	for (int i = 0; i < N; i++) /* acc100 .. acc399 add their number */
		want += hdr(i, 0)->data[0] + hdr(i, 1)->data[0] + 2 * (100 + i);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		exit(sweep(1) == want ? 0 : 3); /* (exit: the runtime's destructor writes the child's events) */
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 2;
	for (int i = 0; i < N; i++)
		for (int w = 0; w < 2; w++)
			printf("page 0x%lx\npage 0x%lx\n", (unsigned long)hdr(i, w), (unsigned long)hdr(i, w) + 4096);
	printf("child %d\nsum %ld\n", (int)pid, s);
	return 0;
}

//go:build !vptgohalf

/*
 * exec.c: the runtime's exec family and _exit (see vptrace.h, "Exec").
 *
 * An exec replaces the process image: the events its threads buffered
 * would be lost with it, and the new image, whose runtime starts afresh,
 * writes a trace file of its own. So every exec function of libc is
 * defined here: it has the runtime write everything to the file first
 * (and mark its end, vpt_before_exec), then makes the system call itself,
 * as libc does (libc's own functions call its internal execve, which
 * nothing can interpose). If the exec fails, tracing goes on in the same
 * file (vpt_exec_failed). _exit and _Exit flush like exit() does: a fork
 * child that ends with _exit (after a failed exec, typically) lost the
 * events it recorded.
 *
 * The definitions are weak: in a static link, where libc.a may bring its
 * own (strong) _exit, libc's wins and only that flush is lost; in a
 * dynamic one the executable's definition wins over libc.so's. They work
 * in a vfork child (the runtime is left alone there: another pid, the
 * parent's memory) and with tracing off, and call nothing of libc but
 * syscall() and getenv().
 */
#define _GNU_SOURCE
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define INTERPOSE __attribute__((weak, visibility("default")))

/* rt_state.c refers to this, so that linking the runtime links this file too
 * (a library linked after it that execs gets these functions as well). */
VPT_HIDDEN const char vpt_exec_linked = 1;

extern char **environ;

static int sys_execve(const char *path, char *const argv[], char *const envp[])
{
	return (int)syscall(SYS_execve, path, argv, envp);
}

/* after a failed exec (flushed says whether vpt_before_exec wrote its
 * end): tracing goes on; errno as the exec left it */
static int exec_failed(int flushed)
{
	int err = errno;
	if (flushed)
		vpt_exec_failed(err);
	errno = err;
	return -1;
}

/* glibc's fallback for a file the kernel cannot execute (ENOEXEC, no #!
 * line): run it with /bin/sh */
static void script_execve(const char *file, char *const argv[], char *const envp[])
{
	ptrdiff_t argc = 0;
	while (argv[argc] != NULL) {
		if (argc == INT_MAX - 1) {
			errno = E2BIG;
			return;
		}
		argc++;
	}
	char *nargv[argc > 1 ? 2 + argc : 3];
	nargv[0] = (char *)"/bin/sh";
	nargv[1] = (char *)file;
	if (argc > 1)
		memcpy(nargv + 2, argv + 1, (size_t)argc * sizeof(char *));
	else
		nargv[2] = NULL;
	sys_execve(nargv[0], nargv, envp);
}

/* execvpe without the flush: glibc's search of PATH (default
 * "/bin:/usr/bin") for a file without a slash, the same errors */
static int search_execve(const char *file, char *const argv[], char *const envp[])
{
	if (*file == '\0') {
		errno = ENOENT;
		return -1;
	}
	if (strchr(file, '/') != NULL) {
		sys_execve(file, argv, envp);
		if (errno == ENOEXEC)
			script_execve(file, argv, envp);
		return -1;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	size_t file_len = strnlen(file, NAME_MAX) + 1;
	size_t path_len = strnlen(path, PATH_MAX - 1) + 1;
	if (file_len - 1 > NAME_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	char buf[path_len + file_len + 1];
	int eacces = 0;
	for (const char *p = path;;) {
		const char *end = strchrnul(p, ':');
		if ((size_t)(end - p) < path_len) {
			/* the directory, a slash if it is not empty, the file */
			memcpy(buf, p, (size_t)(end - p));
			char *q = buf + (end - p);
			*q = '/';
			memcpy(q + (p < end), file, file_len);
			sys_execve(buf, argv, envp);
			if (errno == ENOEXEC)
				script_execve(buf, argv, envp);
			switch (errno) {
			case EACCES:
				eacces = 1;
				/* fallthrough */
			case ENOENT:
			case ESTALE:
			case ENOTDIR:
			case ENODEV:
			case ETIMEDOUT:
				break; /* not there, or not for us: the next one */
			default:
				return -1; /* found, but it failed */
			}
		}
		if (*end == '\0')
			break;
		p = end + 1;
	}
	if (eacces)
		errno = EACCES;
	return -1;
}

INTERPOSE int execve(const char *path, char *const argv[], char *const envp[])
{
	int flushed = vpt_before_exec(path);
	sys_execve(path, argv, envp);
	return exec_failed(flushed);
}

INTERPOSE int execv(const char *path, char *const argv[])
{
	int flushed = vpt_before_exec(path);
	sys_execve(path, argv, environ);
	return exec_failed(flushed);
}

static int flush_search_execve(const char *file, char *const argv[], char *const envp[])
{
	int flushed = vpt_before_exec(file);
	search_execve(file, argv, envp);
	return exec_failed(flushed);
}

INTERPOSE int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return flush_search_execve(file, argv, envp);
}

INTERPOSE int execvp(const char *file, char *const argv[])
{
	return flush_search_execve(file, argv, environ);
}

INTERPOSE int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	int flushed = vpt_before_exec(path);
	syscall(SYS_execveat, dirfd, path, argv, envp, flags);
	return exec_failed(flushed);
}

INTERPOSE int fexecve(int fd, char *const argv[], char *const envp[])
{
	int flushed;
	if (fd < 0) {
		errno = EINVAL;
		return -1;
	}
	flushed = vpt_before_exec("(fexecve)");
	syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
	if (errno == ENOSYS) {
		/* kernels before 3.19: through /proc, as glibc does */
		char buf[32] = "/proc/self/fd/";
		size_t n = strlen(buf);
		char digits[12];
		int k = 0;
		unsigned v = (unsigned)fd;
		do {
			digits[k++] = (char)('0' + v % 10);
			v /= 10;
		} while (v);
		while (k > 0)
			buf[n++] = digits[--k];
		buf[n] = '\0';
		sys_execve(buf, argv, envp);
		if (errno == ENOENT)
			errno = ENOSYS; /* no /proc */
	}
	return exec_failed(flushed);
}

/* execl, execle, execlp: the arguments as a vector, up to the NULL;
 * execle's environment after it */
#define ARGV_FROM_VA(arg, argv, envp_out)                           \
	size_t argc = 1;                                            \
	va_list ap;                                                 \
	va_start(ap, arg);                                          \
	while (va_arg(ap, char *) != NULL)                          \
		argc++;                                             \
	va_end(ap);                                                 \
	char *argv[argc + 1];                                       \
	argv[0] = (char *)(arg);                                    \
	va_start(ap, arg);                                          \
	for (size_t i = 1; i <= argc; i++)                          \
		argv[i] = va_arg(ap, char *);                       \
	envp_out;                                                   \
	va_end(ap)

INTERPOSE int execl(const char *path, const char *arg, ...)
{
	ARGV_FROM_VA(arg, argv, (void)0);
	int flushed = vpt_before_exec(path);
	sys_execve(path, argv, environ);
	return exec_failed(flushed);
}

INTERPOSE int execle(const char *path, const char *arg, ...)
{
	char *const *envp;
	ARGV_FROM_VA(arg, argv, envp = va_arg(ap, char *const *));
	int flushed = vpt_before_exec(path);
	sys_execve(path, argv, envp);
	return exec_failed(flushed);
}

INTERPOSE int execlp(const char *file, const char *arg, ...)
{
	ARGV_FROM_VA(arg, argv, (void)0);
	return flush_search_execve(file, argv, environ);
}

static __attribute__((noreturn)) void exit_now(int status)
{
	vpt_before_exit();
	for (;;) {
		syscall(SYS_exit_group, status);
		syscall(SYS_exit, status);
	}
}

INTERPOSE void _exit(int status)
{
	exit_now(status);
}

INTERPOSE void _Exit(int status)
{
	exit_now(status);
}

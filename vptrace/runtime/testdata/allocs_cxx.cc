// allocs_cxx.cc: the C++ part of the runtime's allocation tracking test
// (allocs_test.go): every form of operator new and delete, called from
// functions of their own; prints the expected events like allocs.c:
//     B <main>
//     A <tid> <kind> <function> <addr> <size> <old>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <sys/syscall.h>
#include <unistd.h>

#define NOINLINE extern "C" __attribute__((noinline, noipa))

// the expected lines, in static storage (nothing allocated for them)
static char out[1 << 16];
static size_t outn;

static void expect(const char *kind, const char *fn, const void *addr, unsigned long size)
{
	outn += (size_t)snprintf(out + outn, sizeof out - outn, "A %ld %s %s %lx %lu 0\n", (long)syscall(SYS_gettid), kind,
				 fn, (unsigned long)addr, size);
}

struct alignas(64) Wide {
	char b[128];
};


NOINLINE void *f_new(size_t n) { return ::operator new(n); }
NOINLINE void *f_new_arr(size_t n) { return ::operator new[](n); }
NOINLINE void *f_new_nt(size_t n) { return ::operator new(n, std::nothrow); }
NOINLINE void *f_new_arr_nt(size_t n) { return ::operator new[](n, std::nothrow); }
NOINLINE void *f_new_al(size_t n) { return ::operator new(n, std::align_val_t(64)); }
NOINLINE void *f_new_arr_al(size_t n) { return ::operator new[](n, std::align_val_t(64)); }
NOINLINE void *f_new_al_nt(size_t n) { return ::operator new(n, std::align_val_t(64), std::nothrow); }
NOINLINE void *f_new_arr_al_nt(size_t n) { return ::operator new[](n, std::align_val_t(64), std::nothrow); }
NOINLINE void f_delete(void *p) { ::operator delete(p); }
NOINLINE void f_delete_arr(void *p) { ::operator delete[](p); }
NOINLINE void f_delete_sized(void *p, size_t n) { ::operator delete(p, n); }
NOINLINE void f_delete_arr_sized(void *p, size_t n) { ::operator delete[](p, n); }
NOINLINE void f_delete_al(void *p) { ::operator delete(p, std::align_val_t(64)); }
NOINLINE void f_delete_arr_al(void *p) { ::operator delete[](p, std::align_val_t(64)); }
NOINLINE void f_delete_sized_al(void *p, size_t n) { ::operator delete(p, n, std::align_val_t(64)); }
NOINLINE void f_delete_arr_sized_al(void *p, size_t n) { ::operator delete[](p, n, std::align_val_t(64)); }
NOINLINE void f_delete_nt(void *p) { ::operator delete(p, std::nothrow); }
NOINLINE void f_delete_arr_nt(void *p) { ::operator delete[](p, std::nothrow); }
NOINLINE void f_delete_al_nt(void *p) { ::operator delete(p, std::align_val_t(64), std::nothrow); }
NOINLINE void f_delete_arr_al_nt(void *p) { ::operator delete[](p, std::align_val_t(64), std::nothrow); }
NOINLINE struct Wide *f_new_wide() { return new Wide; }
NOINLINE void f_delete_wide(Wide *w) { delete w; }

// a failing new throws std::bad_alloc through the runtime's operator new,
// and the thread's later allocations are still recorded
NOINLINE int f_too_big()
{
	try {
		volatile size_t n = (size_t)1 << 62;
		void *p = ::operator new(n);
		::operator delete(p);
		return 0;
	} catch (const std::bad_alloc &) {
		return 1;
	}
}

#define NEW(kind, fn, n)                      \
	do {                                  \
		void *p = fn(n);              \
		expect(kind, #fn, p, n);      \
		ptrs[np++] = p;               \
	} while (0)
#define DEL(kind, fn, i, ...)                 \
	do {                                  \
		fn(ptrs[i], ##__VA_ARGS__);   \
		expect(kind, #fn, ptrs[i], 0); \
	} while (0)

int main()
{
	void *ptrs[16];
	int np = 0;
	NEW("new", f_new, 100);
	NEW("new[]", f_new_arr, 200);
	NEW("new", f_new_nt, 300);
	NEW("new[]", f_new_arr_nt, 400);
	NEW("new", f_new_al, 500);
	NEW("new[]", f_new_arr_al, 600);
	NEW("new", f_new_al_nt, 700);
	NEW("new[]", f_new_arr_al_nt, 800);
	NEW("new", f_new, 900);
	NEW("new[]", f_new_arr, 1000);
	NEW("new", f_new, 1100);
	NEW("new[]", f_new_arr, 1200);
	DEL("delete", f_delete, 0);
	DEL("delete[]", f_delete_arr, 1);
	DEL("delete", f_delete_nt, 2);
	DEL("delete[]", f_delete_arr_nt, 3);
	DEL("delete", f_delete_al, 4);
	DEL("delete[]", f_delete_arr_al, 5);
	DEL("delete", f_delete_al_nt, 6);
	DEL("delete[]", f_delete_arr_al_nt, 7);
	DEL("delete", f_delete_sized, 8, 900);
	DEL("delete[]", f_delete_arr_sized, 9, 1000);
	void *a = f_new_al(1300);
	expect("new", "f_new_al", a, 1300);
	f_delete_sized_al(a, 1300);
	expect("delete", "f_delete_sized_al", a, 0);
	a = f_new_arr_al(1400);
	expect("new[]", "f_new_arr_al", a, 1400);
	f_delete_arr_sized_al(a, 1400);
	expect("delete[]", "f_delete_arr_sized_al", a, 0);
	Wide *w = f_new_wide();
	expect("new", "f_new_wide", w, sizeof(Wide));
	f_delete_wide(w);
	expect("delete", "f_delete_wide", w, 0);
	if (!f_too_big())
		fprintf(stderr, "no bad_alloc\n");
	DEL("delete", f_delete, 10);
	DEL("delete[]", f_delete_arr, 11);
	printf("B %lx\n", (unsigned long)(void *)main);
	fwrite(out, 1, outn, stdout);
	return 0;
}

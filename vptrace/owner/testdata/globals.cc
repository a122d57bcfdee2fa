// Globals of every kind the owner resolver names (owner_test.go builds
// this with g++ and maps it at a made-up address).
#include <cstdio>
#include <cstring>

namespace grid {
long cells[4096];          // .bss, 32 KiB: C++ name, demangled
}
static int counts[2048];   // local static, .bss
double weights[1024] = {1}; // .data
extern "C" int make_thing(int n);

extern "C" __attribute__((noinline)) int make_thing(int n) {
	static char buf[8192]; // function-local static
	memset(buf, n, sizeof buf);
	return buf[n] + (int)weights[n] + counts[n] + (int)grid::cells[n];
}

int main(int argc, char **argv) {
	// a long string literal: .rodata, no symbol
	counts[argc] = argc;
	puts("a string literal long enough to stand for unnamed read-only data");
	return make_thing(argc);
}

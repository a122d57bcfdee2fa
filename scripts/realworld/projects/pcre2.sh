# pcre2: configured as Debian does (8, 16 and 32-bit libraries, JIT,
# pcre2grep with zlib and bzip2), the libraries shared: the test programs
# load libpcre2-8.so, -16 and -32 (and libpcre2-posix.so) through libtool's
# wrappers, three instrumented libraries and an instrumented program in one
# process. Tests: RunTest one test number at a time (0..26, each in the 8,
# 16 and 32-bit modes, with and without JIT), RunGrepTest, pcre2_jit_test,
# pcre2posix_test: what `make check` runs.
#
# pcre2grep 10.42 flushes stdout in the parent only after fork() for a
# script callout, racing the child's output, so RunGrepTest's "script
# callouts" comparison fails now and then whatever the build (upstream: the
# output-order trouble of PCRE2Project/pcre2#19). The build flushes before
# the fork too, so that the comparison is deterministic.
RW_DEVPKG=libpcre2-dev
RW_SRC=pcre2

rw_build() {
	sed -i 's/^pid = fork();$/(void)fflush(stdout); \/* realworld: before the fork too *\/\npid = fork();/' src/pcre2grep.c
	grep -q 'realworld: before the fork' src/pcre2grep.c
	./configure --enable-pcre2-16 --enable-pcre2-32 --enable-jit \
		--enable-pcre2grep-libz --enable-pcre2grep-libbz2
	make
	make $(rw_make_var . check_PROGRAMS)
}

rw_test() {
	local n tests
	tests=$(seq 0 26)
	((RW_SHORT)) && tests="0 1 2 17"
	for n in $tests; do
		rw_unit "RunTest-$n" ./RunTest "$n"
	done
	rw_unit RunGrepTest ./RunGrepTest
	rw_unit pcre2_jit_test ./pcre2_jit_test
	rw_unit pcre2posix_test ./pcre2posix_test
}

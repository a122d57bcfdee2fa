# pcre2: configure as Debian does (8, 16 and 32-bit libraries, JIT, pcre2grep
# with zlib and bzip2), static libraries compiled -fPIC (--with-pic: the code
# of Debian's shared library, without the shared-library runtime issues).
# Tests: RunTest one test number at a time (0..26, each in the 8, 16 and
# 32-bit modes, with and without JIT), RunGrepTest, pcre2_jit_test,
# pcre2posix_test: what `make check` runs.
RW_DEVPKG=libpcre2-dev
RW_SRC=pcre2

rw_build() {
	./configure --enable-pcre2-16 --enable-pcre2-32 --enable-jit \
		--enable-pcre2grep-libz --enable-pcre2grep-libbz2 \
		--disable-shared --with-pic
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

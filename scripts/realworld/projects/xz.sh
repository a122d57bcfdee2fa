# xz-utils: configure's defaults, so liblzma is a shared library (the xz
# programs and the tests link liblzma.so through libtool, as Debian ships it).
# Tests: `make check` (tests/: the liblzma unit tests, test_files.sh,
# test_compress_*.sh, test_scripts.sh), one result each.
RW_DEVPKG=liblzma-dev
RW_SRC=xz-utils

rw_build() {
	./configure --disable-nls --disable-doc
	make
	make -C tests $(rw_make_var tests check_PROGRAMS)
}

rw_test() {
	make -k check >"$RW_LOGDIR/make-check.log" 2>&1 || true
	rw_automake tests
}

# bzip2: the upstream Makefile (Debian's patches build bzip2 against
# libbz2.so; here it is linked with libbz2.a, as upstream does). Tests: `make
# test`'s six compress/decompress comparisons, one test each, and round trips
# of ours (rw-*) at every block size, with -t and -s, for coverage.
# (bzip2recover 1.0.8 fails reading any file here: "I/O error ... Invalid
# argument", so it is not tested.)
RW_DEVPKG=libbz2-dev
RW_SRC=bzip2

rw_build() {
	make CC="$CC" libbz2.a bzip2.o bzip2recover
	"$CC" -Wall -Winline -O2 -g -D_FILE_OFFSET_BITS=64 -o bzip2 bzip2.o libbz2.a
}

rw_test() {
	local i
	# make test, one comparison a test
	for i in 1 2 3; do
		rw_unit "compress-$i" sh -c "./bzip2 -$i < sample$i.ref > sample$i.rb2 && cmp sample$i.bz2 sample$i.rb2"
	done
	rw_unit decompress-1 sh -c './bzip2 -d < sample1.bz2 > sample1.tst && cmp sample1.tst sample1.ref'
	rw_unit decompress-2 sh -c './bzip2 -d < sample2.bz2 > sample2.tst && cmp sample2.tst sample2.ref'
	rw_unit decompress-3s sh -c './bzip2 -ds < sample3.bz2 > sample3.tst && cmp sample3.tst sample3.ref'
	# ours: every block size over the samples and a larger mixed input
	local levels="1 5 9"
	((RW_SHORT)) || levels="1 2 3 4 5 6 7 8 9"
	cat sample*.ref *.c *.h >rw-mixed.in
	for f in sample1.ref sample2.ref sample3.ref rw-mixed.in; do
		for i in $levels; do
			rw_unit "rw-roundtrip-$f-$i" sh -c "./bzip2 -$i -c $f > rw.bz2 && ./bzip2 -t rw.bz2 && ./bzip2 -dc rw.bz2 | cmp - $f && ./bzip2 -dsc rw.bz2 | cmp - $f"
		done
	done
}

# zstd: the upstream Makefiles (lib, programs, tests), static. The full set:
# tests/playTests.sh (the CLI, without --test-large-data: its dictionary
# training alone runs for many minutes plain), the fuzzer, zstreamtest (both
# APIs) and decodecorpus with fixed seeds and iteration counts instead of
# their time limits (a slower build would run fewer iterations; the test
# programs are built with assertions, DEBUGLEVEL=2, and slow: the counts are
# what runs in a few minutes plain), invalidDictionaries, legacy, poolTests,
# cli-tests/run.py. The short set (make test's, within its budget) builds
# the zstd CLI (without the legacy formats) and datagen only, and runs round
# trips of ours (rw-*) through the CLI: levels 1 to 19, --ultra -20, two
# threads, --long, a trained dictionary, the in-memory benchmark (-b1e9).
RW_DEVPKG=libzstd-dev
RW_SRC=libzstd

rw_build() {
	if ((RW_SHORT)); then
		# the CLI without the legacy formats and datagen: each test program
		# compiles the library again
		make -C programs CC="$CC" ZSTD_LEGACY_SUPPORT=0 HAVE_ZLIB=0 HAVE_LZMA=0 HAVE_LZ4=0 zstd
		make -C tests CC="$CC" datagen
		return 0
	fi
	make -C programs CC="$CC" zstd
	make -C tests CC="$CC" datagen fuzzer zstreamtest decodecorpus invalidDictionaries legacy poolTests
}

rw_test() {
	cd tests
	if ((RW_SHORT)); then
		local z=../programs/zstd l f
		./datagen -g1M -P50 >rw-data.in
		cat ../lib/*/*.c >rw-src.in
		for f in rw-data.in rw-src.in; do
			for l in 1 3 9 19; do
				rw_unit "rw-roundtrip-$f-$l" sh -c "$z -q -f -$l $f -o rw.zst && $z -q -t rw.zst && $z -q -d -c rw.zst | cmp - $f"
			done
			rw_unit "rw-roundtrip-$f-ultra20" sh -c "$z -q -f --ultra -20 $f -o rw.zst && $z -q -d -c rw.zst | cmp - $f"
			rw_unit "rw-roundtrip-$f-T2" sh -c "$z -q -f -T2 -5 $f -o rw.zst && $z -q -d -c rw.zst | cmp - $f"
			rw_unit "rw-roundtrip-$f-long" sh -c "$z -q -f --long=24 -3 $f -o rw.zst && $z -q -d -c --long=24 rw.zst | cmp - $f"
		done
		rw_unit rw-dictionary sh -c "$z -q -f --train ../lib/*/*.c ../lib/*/*.h -o rw.dict && $z -q -f -D rw.dict ../lib/zstd.h -o rw.zst && $z -q -d -c -D rw.dict rw.zst | cmp - ../lib/zstd.h"
		rw_unit rw-bench sh -c "$z -q -b1e9 -i0 rw-data.in" # levels 1 to 9 in memory, round trips checked
		return 0
	fi
	rw_unit playTests env ZSTD_BIN=../programs/zstd DATAGEN_BIN=./datagen ./playTests.sh
	rw_unit fuzzer ./fuzzer -s1 -i600
	rw_unit zstreamtest ./zstreamtest -s1 -i60
	rw_unit zstreamtest-newapi ./zstreamtest --newapi -t1 -s1 -i60
	rw_unit decodecorpus ./decodecorpus -t -s1 -n1000
	rw_unit invalidDictionaries ./invalidDictionaries
	rw_unit legacy ./legacy
	rw_unit poolTests ./poolTests
	rw_unit cli-tests ./cli-tests/run.py --zstd=../programs/zstd --datagen=./datagen
}

# zstd: the upstream Makefiles (lib, programs, tests), static. Tests: tests/
# playTests.sh (the CLI, without --test-large-data: its dictionary training
# runs for many minutes plain, an hour under clobber), the fuzzer and
# zstreamtest (both APIs) with fixed seeds and iteration counts instead of
# their time limits (a slower build would run fewer iterations); the full
# set adds decodecorpus (the same way), invalidDictionaries, legacy,
# poolTests and cli-tests/run.py. The short set builds only what it runs.
RW_DEVPKG=libzstd-dev
RW_SRC=libzstd

rw_build() {
	make -C programs CC="$CC" zstd
	if ((RW_SHORT)); then
		# what the short set runs (each of the others compiles the library again)
		make -C tests CC="$CC" datagen fuzzer zstreamtest
	else
		make -C tests CC="$CC" datagen fuzzer zstreamtest decodecorpus invalidDictionaries legacy poolTests
	fi
}

rw_test() {
	local n=4000 z=400 d=200
	if ((RW_SHORT)); then n=600 z=60 d=40; fi
	cd tests
	rw_unit playTests env ZSTD_BIN=../programs/zstd DATAGEN_BIN=./datagen ./playTests.sh
	rw_unit fuzzer ./fuzzer -s1 -i$n
	rw_unit zstreamtest ./zstreamtest -s1 -i$z
	rw_unit zstreamtest-newapi ./zstreamtest --newapi -t1 -s1 -i$z
	((RW_SHORT)) && return 0
	rw_unit decodecorpus ./decodecorpus -s1 -n$d
	rw_unit invalidDictionaries ./invalidDictionaries
	rw_unit legacy ./legacy
	rw_unit poolTests ./poolTests
	rw_unit cli-tests ./cli-tests/run.py --zstd=../programs/zstd --datagen=./datagen
}

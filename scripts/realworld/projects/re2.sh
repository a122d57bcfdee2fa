# re2 2022-06-01 (C++, CMake, its own test framework util/test.cc): the CMake
# build with RE2_BUILD_TESTING, -O2 -g, the library static and
# position-independent. Tests: ctest, one result per test program; the
# exhaustive*_test and random_test programs (minutes each, plain) only in the
# full set. Needs unicode-data and python3-six (scripts/deps.sh --realworld).
RW_DEVPKG=libre2-dev
RW_SRC=re2

rw_build() {
	# Debian's dfsg source drops the generated Unicode and Perl tables; they
	# are rebuilt from unicode-data as debian/rules does (REBUILD_TABLES=1)
	make REBUILD_TABLES=1 re2/perl_groups.cc re2/unicode_casefold.cc re2/unicode_groups.cc
	cmake -S . -B _build -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O2 -g -pthread" \
		-DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
		-DRE2_BUILD_TESTING=ON -DCMAKE_POSITION_INDEPENDENT_CODE=on -DBUILD_SHARED_LIBS=off
	cmake --build _build -j"$RW_JOBS"
}

rw_test() {
	if ((RW_SHORT)); then
		rw_ctest _build -E 'exhaustive|random'
	else
		rw_ctest _build
	fi
}

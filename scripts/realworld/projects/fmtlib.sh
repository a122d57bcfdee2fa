# fmtlib 9.1.0 (C++, CMake, Debian's system googletest): configured as Debian
# does (-DFMT_PEDANTIC=on, position-independent code), the library static.
# Tests: ctest, one result per test program (each a googletest suite).
RW_DEVPKG=libfmt-dev
RW_SRC=fmtlib

rw_build() {
	cmake -S . -B _build -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O2 -g" \
		-DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
		-DFMT_DOC=off -DFMT_PEDANTIC=on -DFMT_TEST=on -DCMAKE_POSITION_INDEPENDENT_CODE=on \
		-DBUILD_SHARED_LIBS=off
	cmake --build _build -j"$RW_JOBS"
}

rw_test() {
	rw_ctest _build
}

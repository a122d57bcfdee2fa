# re2 built with clang/clang++ instead of gcc/g++ (see re2.sh).
RW_DEVPKG=libre2-dev
. "$RW_DIR/projects/re2.sh"
RW_KEYFILES=$RW_DIR/projects/re2.sh
RW_CC=clang

# xz-utils built with clang instead of gcc (see xz.sh): clang -O2 compiles
# lzma_properties_decode's `return tab[i].f(...)` to an indirect tail call
# through a table of function pointers next to a switch's jump table, the
# shape issue 10 found taken for a jump-table dispatch.
RW_DEVPKG=liblzma-dev
. "$RW_DIR/projects/xz.sh"
RW_KEYFILES=$RW_DIR/projects/xz.sh
RW_CC=clang

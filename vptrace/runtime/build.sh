#!/bin/sh
# Build the vptrace runtime into OUTDIR: libvptrace.so (programs and
# shared libraries link it: one runtime per process), libvptrace.a (for
# -static programs only), vptrace.h (the C API) and vptrace.supp (valgrind
# suppressions for programs that use the runtime).
#   vptrace/runtime/build.sh [OUTDIR]     (default: <repo>/bin)
# From a Makefile:  $(SHELL) vptrace/runtime/build.sh $(CURDIR)/bin
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/bin}
GO=${GO:-go}
mkdir -p "$out"
cd "$root"
# No DWARF for the runtime (-ldflags=-w): valgrind before 3.20 (Debian 12
# has 3.19) cannot read Go's DWARF 5 and prints "Serious error when reading
# debug info" on the stderr of every process that loads the runtime, even
# with -q, failing suites that compare stderr under valgrind; and with DWARF
# it can read (GOEXPERIMENT=nodwarf5) it names inlined Go frames
# "UnknownInlinedFun", which vptrace.supp's fun: patterns do not match.
# Symbols stay, so backtraces still name the runtime's functions.
CGO_ENABLED=1 "$GO" build -buildmode=c-archive -ldflags=-w -o "$out/libvptrace.a" ./vptrace/runtime
# The shared runtime is never unloaded (-z nodelete): the Go runtime cannot
# be, and a plugin that depends on it may be dlclose'd while its threads
# run. Its soname is what instrumented objects record (DT_NEEDED).
CGO_ENABLED=1 "$GO" build -buildmode=c-shared \
	-ldflags='-w -extldflags=-Wl,-z,nodelete,-soname,libvptrace.so' \
	-o "$out/libvptrace.so" ./vptrace/runtime
# cgo's generated headers only declare the Go anchor; the API is vptrace.h
rm -f "$out/libvptrace.h"
cp "$here/vptrace.h" "$out/vptrace.h"
cp "$here/vptrace.supp" "$out/vptrace.supp"

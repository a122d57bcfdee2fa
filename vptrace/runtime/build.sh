#!/bin/sh
# Build the vptrace runtime into OUTDIR: libvptrace.so (programs and
# shared libraries link it: one runtime per process) and libvptrace-go.so
# (its aggregator, which it loads when needed), libvptrace.a (for
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
# The shared runtime is two libraries. libvptrace.so is the C half alone
# (rt_*.c, exec.c, stubs.S: 130 KB): what instrumented objects record
# (DT_NEEDED, by its soname) and what every process loads. The Go half, the
# aggregator, is libvptrace-go.so beside it (-tags vptgohalf: main.go
# without the C files, linked against libvptrace.so): the runtime loads it
# when a process first needs it (a full buffer's events handed over, or
# an interval's end with events recorded), so that a short process, which
# ends before either, pays for no Go runtime (loading and starting it cost
# a traced `zstd -d` of 6 bytes 3.3 ms of CPU, as much again as the rest);
# its events are written raw at exit (rt_gohalf.c). Neither
# is ever unloaded (-z nodelete): the Go runtime cannot be, and a plugin
# that depends on the runtime may be dlclose'd while its threads run.
# -Bsymbolic (as Go links c-shared libraries): the stubs' calls into the C
# half bind inside it, nothing another object defines interposes there.
# No -g, as -w for Go above: valgrind 3.19 (Debian 12) cannot read DWARF 5.
CC=${CC:-gcc}
cflags='-O2 -Wall -fno-strict-aliasing -fno-omit-frame-pointer -fPIC -pthread -DVPT_SPLIT'
# shellcheck disable=SC2086
"$CC" $cflags -shared -Wl,-Bsymbolic,-z,nodelete,-soname,libvptrace.so -o "$out/libvptrace.so.tmp" \
	"$here"/rt_*.c "$here/exec.c" "$here/stubs.S" -ldl
mv -f "$out/libvptrace.so.tmp" "$out/libvptrace.so"
CGO_LDFLAGS="-Wl,--no-as-needed $out/libvptrace.so" CGO_ENABLED=1 "$GO" build -tags vptgohalf -buildmode=c-shared \
	-ldflags='-w -extldflags=-Wl,-z,nodelete,-soname,libvptrace-go.so' \
	-o "$out/libvptrace-go.so" ./vptrace/runtime
# cgo's generated headers only declare the Go anchor; the API is vptrace.h
rm -f "$out/libvptrace.h" "$out/libvptrace-go.h"
cp "$here/vptrace.h" "$out/vptrace.h"
cp "$here/vptrace.supp" "$out/vptrace.supp"

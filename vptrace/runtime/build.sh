#!/bin/sh
# Build the vptrace runtime: bin/libvptrace.a and bin/vptrace.h.
#   vptrace/runtime/build.sh [OUTDIR]     (default: <repo>/bin)
# From a Makefile:  $(SHELL) vptrace/runtime/build.sh $(CURDIR)/bin
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/bin}
GO=${GO:-go}
mkdir -p "$out"
cd "$root"
CGO_ENABLED=1 "$GO" build -buildmode=c-archive -o "$out/libvptrace.a" ./vptrace/runtime
# cgo's generated header only declares the Go anchor; the API is vptrace.h
rm -f "$out/libvptrace.h"
cp "$here/vptrace.h" "$out/vptrace.h"

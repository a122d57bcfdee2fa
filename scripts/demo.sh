#!/usr/bin/env bash
# make demo: trace a small multi-threaded C program with the vptrace preset.
#
# Builds hijack and the runtime, compiles examples/makefile/src (4 threads
# filling and sweeping their own arrays and reading a shared table), rewrites
# the objects with vptrace (T=0, H=4096), links them with bin/libvptrace.a,
# runs both the original and the traced program (their output must match),
# and prints the page report. `make demo-pad` shows the pad stress test.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
HIJACK=${HIJACK:-$ROOT/bin/hijack}
RUNTIME=${HIJACK_RUNTIME:-$ROOT/bin/libvptrace.a}
CC=${CC:-gcc}
CFLAGS=${CFLAGS:--O2 -g}
SRC=$ROOT/examples/makefile/src
RULES=$ROOT/testdata/rules/vptrace.yaml
OUT=$ROOT/.cache/demo-vptrace
THREADS=${THREADS:-4}

[ -x "$HIJACK" ] && [ -f "$RUNTIME" ] || { echo "demo: run 'make build' first" >&2; exit 1; }
rm -rf "$OUT"; mkdir -p "$OUT"
say() { printf '\n== %s\n' "$*"; }

say "compile ($CC $CFLAGS)"
for c in main work; do
	echo "$CC $CFLAGS -c $c.c -o $c.o"
	$CC $CFLAGS -c "$SRC/$c.c" -o "$OUT/$c.o"
done

say "rewrite: hijack -rules $(basename "$RULES") X.o X.inst.o"
cat "$RULES" | sed 's/^/  | /'
for c in main work; do
	"$HIJACK" -rules "$RULES" "$OUT/$c.o" "$OUT/$c.inst.o"
done
"$HIJACK" analyze --func 'work_*' "$OUT/work.o" | sed 's/^/  | /'

say "link with the runtime"
echo "$CC main.inst.o work.inst.o $(basename "$RUNTIME") -lpthread -o app"
$CC "$OUT/main.o" "$OUT/work.o" -lpthread -o "$OUT/app.orig"
$CC "$OUT/main.inst.o" "$OUT/work.inst.o" "$RUNTIME" -lpthread -o "$OUT/app"

say "run with $THREADS threads: VPTRACE_OUT=app.vpt ./app $THREADS"
"$OUT/app.orig" "$THREADS" >"$OUT/orig.out"
/usr/bin/time -f '  (original %es)' "$OUT/app.orig" "$THREADS" >/dev/null
VPTRACE_OUT="$OUT/app.vpt" /usr/bin/time -f '  (traced   %es)' "$OUT/app" "$THREADS" | tee "$OUT/traced.out" | sed 's/^/  | /'
if cmp -s "$OUT/orig.out" "$OUT/traced.out"; then
	echo "  output identical to the uninstrumented program"
else
	echo "OUTPUTS DIFFER"; diff "$OUT/orig.out" "$OUT/traced.out"; exit 1
fi

say "hijack report app.vpt"
"$HIJACK" report --top 5 "$OUT/app.vpt"

say "hijack report --csv app.vpt (first rows)"
"$HIJACK" report --csv "$OUT/app.vpt" >"$OUT/app.csv"
head -6 "$OUT/app.csv"
echo "  ... $(($(wc -l <"$OUT/app.csv") - 1)) rows"
echo
echo "artifacts in ${OUT#$ROOT/}/"

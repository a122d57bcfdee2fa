#!/usr/bin/env bash
# make demo: compile the example program in e2e/testdata/demo, rewrite every
# object with the pad preset, link both versions, run them on the same input
# and show that the outputs match and how much the objects grew.
#
#   HIJACK=path/to/hijack scripts/demo.sh      (default: bin/hijack)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
HIJACK=${HIJACK:-$ROOT/bin/hijack}
RULES=${HIJACK_RULES:-$ROOT/testdata/rules/pad.yaml}
CC=${CC:-gcc}
CFLAGS=${CFLAGS:--O2 -g}
SRC=$ROOT/e2e/testdata/demo
OUT=$ROOT/.cache/demo

[ -x "$HIJACK" ] || { echo "demo: $HIJACK not found: run 'make build' (or set HIJACK=...)" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT/orig" "$OUT/rewritten"

say() { printf '\n== %s\n' "$*"; }

say "compile ($CC $CFLAGS)"
objs=()
for c in "$SRC"/*.c; do
	o=$(basename "${c%.c}").o
	echo "$CC $CFLAGS -c $(basename "$c")"
	$CC $CFLAGS -Wall -c "$c" -o "$OUT/orig/$o"
	objs+=("$o")
done

say "rewrite with $(basename "$RULES") ($HIJACK)"
for o in "${objs[@]}"; do
	echo "hijack -rules $(basename "$RULES") orig/$o rewritten/$o"
	"$HIJACK" -rules "$RULES" "$OUT/orig/$o" "$OUT/rewritten/$o"
done

say "link"
(cd "$OUT/orig" && $CC -o ../wordfreq.orig "${objs[@]}")
(cd "$OUT/rewritten" && $CC -o ../wordfreq.rewritten "${objs[@]}")
echo "wordfreq.orig wordfreq.rewritten"

say "run both on input.txt and the program's own sources"
inputs=("$SRC/input.txt" "$SRC"/*.c "$SRC"/*.h)
st1=0; st2=0
"$OUT/wordfreq.orig" -n 10 "${inputs[@]}" >"$OUT/orig.out" || st1=$?
"$OUT/wordfreq.rewritten" -n 10 "${inputs[@]}" >"$OUT/rewritten.out" || st2=$?
sed 's/^/  | /' "$OUT/rewritten.out"
if [ "$st1" = "$st2" ] && cmp -s "$OUT/orig.out" "$OUT/rewritten.out"; then
	echo "outputs match: $(wc -l <"$OUT/orig.out") lines, exit status $st1 (sha256 $(sha256sum <"$OUT/orig.out" | cut -c1-16))"
else
	echo "OUTPUTS DIFFER (exit $st1 vs $st2):"
	diff -u "$OUT/orig.out" "$OUT/rewritten.out" | head -40 || true
	exit 1
fi

say "object sizes (size(1): text/data/bss, and file bytes)"
row() { # name text text' bytes bytes'
	awk -v n="$1" -v t1="$2" -v t2="$3" -v b1="$4" -v b2="$5" 'BEGIN {
		printf "%-12s %10d %10d %+7.1f%%   %10d %10d %+7.1f%%\n", n, t1, t2,
			t1 ? (t2 - t1) * 100 / t1 : 0, b1, b2, b1 ? (b2 - b1) * 100 / b1 : 0 }'
}
printf '%-12s %10s %10s %8s   %10s %10s %8s\n' object text "text'" growth bytes "bytes'" growth
tt1=0; tt2=0; tb1=0; tb2=0
for o in "${objs[@]}"; do
	t1=$(size "$OUT/orig/$o" | awk 'NR==2{print $1}')
	t2=$(size "$OUT/rewritten/$o" | awk 'NR==2{print $1}')
	b1=$(stat -c %s "$OUT/orig/$o")
	b2=$(stat -c %s "$OUT/rewritten/$o")
	tt1=$((tt1 + t1)); tt2=$((tt2 + t2)); tb1=$((tb1 + b1)); tb2=$((tb2 + b2))
	row "$o" "$t1" "$t2" "$b1" "$b2"
done
row total "$tt1" "$tt2" "$tb1" "$tb2"
echo
size "$OUT"/orig/*.o "$OUT"/rewritten/*.o | sed "s|$OUT/||"
echo
echo "artifacts in ${OUT#"$ROOT"/}/"

#!/usr/bin/env bash
# bench-rewrite.sh: how fast hijack rewrites compared with how fast objdump
# disassembles, on the same input in the same run.
#
# Rewrites every member of Debian's libsqlite3.a (102 objects) with the pad
# preset (the heaviest rewrite: code inserted before every instruction) and
# runs `objdump -dr` on the same archive, alternating, REPS times each. Prints
# the median wall and CPU times, their ratio (target: <= 1.0) and the peak
# memory (max RSS) of each tool.
#
#   scripts/bench-rewrite.sh [ARCHIVE] [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
lib=${1:-/usr/lib/x86_64-linux-gnu/libsqlite3.a}
reps=${2:-7}
[ -x bin/hijack ] || make --no-print-directory build >/dev/null
[ -f "$lib" ] || { echo "bench-rewrite: $lib missing (run scripts/deps.sh)" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf 'version: 1\nrules:\n  - preset: pad\n' > "$tmp/pad.yaml"
members=$(ar t "$lib" | wc -l)

# run NAME CMD...: append "wall cpu maxrss_kb" to $tmp/NAME
run() {
	local name=$1; shift
	/usr/bin/time -f '%e %U %S %M' -o "$tmp/t" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	awk '{printf "%s %.3f %s\n", $1, $2+$3, $4}' "$tmp/t" >> "$tmp/$name"
}
for ((i = 0; i < reps; i++)); do
	# Single-threaded, like objdump.
	run hijack bin/hijack -q -j 1 -r "$tmp/pad.yaml" "$lib" "$tmp/out.a"
	run objdump objdump -dr "$lib"
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
for t in hijack objdump; do
	w=$(cut -d' ' -f1 "$tmp/$t" | median); c=$(cut -d' ' -f2 "$tmp/$t" | median); m=$(cut -d' ' -f3 "$tmp/$t" | sort -n | tail -1)
	eval "${t}_w=$w ${t}_c=$c ${t}_m=$m"
done
echo "input: $lib ($members members), $reps alternating runs each, medians"
printf '%-24s wall %6.3fs  cpu %6.3fs  peak RSS %6d KiB\n' "hijack -r pad.yaml -j1" "$hijack_w" "$hijack_c" "$hijack_m"
printf '%-24s wall %6.3fs  cpu %6.3fs  peak RSS %6d KiB\n' "objdump -dr" "$objdump_w" "$objdump_c" "$objdump_m"
awk -v hw="$hijack_w" -v ow="$objdump_w" -v hc="$hijack_c" -v oc="$objdump_c" \
	'BEGIN {printf "ratio hijack/objdump: wall %.2f, cpu %.2f (target <= 1.0)\n", hw/ow, hc/oc}'

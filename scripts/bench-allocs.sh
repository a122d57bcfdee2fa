#!/usr/bin/env bash
# bench-allocs.sh: the cost of the vptrace runtime's allocation tracking
# (vptrace/FORMAT.md, ALLOCS) on allocation-heavy programs linked with
# libvptrace.so: each run with VPTRACE_ALLOCS=1 (every allocation recorded
# and written to the trace) against VPTRACE_ALLOCS=0 (the runtime's
# allocator functions pass every call straight through), alternately.
#
#   scripts/bench-allocs.sh [-n RUNS] [-s SIZE] [-d] [PROGRAM...]
#
# Programs: allocbench (vptrace/runtime/testdata/allocbench.c: 10 M
# malloc/free/realloc/calloc of mixed sizes, the worst case: nothing but
# allocator calls) and speedtest1 (sqlite's benchmark, from the Debian
# source of the installed libsqlite3-dev, scripts/debsrc.sh, at --size SIZE,
# default 100, --memdb, linked with the system's libsqlite3). Also
# `plain`: allocbench without the runtime, to show what the interposed
# functions cost when they pass calls through.
#
# Printed per program: the median CPU time (user + system, from bash's
# `time`: steadier than wall time on a shared machine) of each setting, the
# median of the per-pair ratios on/off and their spread (the lowest and
# highest ratio of the pairs), the allocation events recorded and the
# trace's size. -d writes the traces to /dev/null (the recording
# without the file system's cost). RUNS defaults to 7.
#
# The runtime's own settings pass through to both settings' runs:
# VPTRACE_COMPRESS=0 scripts/bench-allocs.sh measures both without DEFLATE
# chunks (ALLOCS chunks are never compressed: compressing them on the
# allocating thread cost more than their compact records leave to gain).
#
# Environment: VPTRACE_LIB (a directory with libvptrace.so; default: built
# from vptrace/runtime into BENCH_DIR/lib), CC (default gcc), BENCH_DIR
# (default .cache/bench-allocs). Needs gcc, go (to build the runtime), and
# for speedtest1 libsqlite3-dev and the source (scripts/debsrc.sh fetches it).
set -euo pipefail

runs=7
size=100
devnull=0
while getopts "n:s:dh" o; do
	case $o in
	n) runs=$OPTARG ;;
	s) size=$OPTARG ;;
	d) devnull=1 ;;
	*) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//; $d'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

root=$(cd "$(dirname "$0")/.." && pwd)
CC=${CC:-gcc}
dir=${BENCH_DIR:-$root/.cache/bench-allocs}
mkdir -p "$dir"
if [[ -z ${VPTRACE_LIB:-} ]]; then
	VPTRACE_LIB=$dir/lib
	sh "$root/vptrace/runtime/build.sh" "$VPTRACE_LIB"
fi
[[ -f $VPTRACE_LIB/libvptrace.so ]] || { echo "bench-allocs: no $VPTRACE_LIB/libvptrace.so" >&2; exit 2; }
progs=("$@")
((${#progs[@]})) || progs=(allocbench speedtest1)

link=(-L"$VPTRACE_LIB" -lvptrace -Wl,-rpath,"$VPTRACE_LIB")
build() { # NAME: the program's command line in cmd
	case $1 in
	allocbench)
		$CC -O2 -o "$dir/allocbench" "$root/vptrace/runtime/testdata/allocbench.c" "${link[@]}"
		cmd=("$dir/allocbench" 10000000) ;;
	plain)
		$CC -O2 -o "$dir/allocbench-plain" "$root/vptrace/runtime/testdata/allocbench.c"
		cmd=("$dir/allocbench-plain" 10000000) ;;
	speedtest1)
		local src=${HIJACK_CACHE:-$root/.cache}/debsrc/sqlite3/test/speedtest1.c
		[[ -f $src ]] || "$root/scripts/debsrc.sh" libsqlite3-dev
		$CC -O2 -o "$dir/speedtest1" "$src" -lsqlite3 -lm "${link[@]}"
		cmd=("$dir/speedtest1" --size "$size" --memdb) ;;
	*) echo "bench-allocs: unknown program $1" >&2; exit 2 ;;
	esac
}

median() { sort -g | awk '{a[NR]=$1} END{if(NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
spread() { sort -g | awk 'NR==1{lo=$1} {hi=$1} END{printf "%.3f-%.3f", lo, hi}'; }

# cpu ALLOCS: one run's user + system seconds; the trace goes to $tdir
cpu() {
	local t TIMEFORMAT='%U %S'
	rm -rf "$tdir" && mkdir -p "$tdir"
	local out=$tdir/%p.vpt
	((devnull)) && out=/dev/null
	t=$( { time env VPTRACE_ALLOCS="$1" VPTRACE_OUT="$out" "${cmd[@]}" >/dev/null 2>&1; } 2>&1 )
	awk '{print $1 + $2}' <<<"$t"
}

tdir=$dir/traces
(cd "$root" && go build -o "$dir/allocstat" ./vptrace/runtime/testdata/allocstat)
printf '%-11s %9s %9s %8s %12s %10s %9s\n' program "off (s)" "on (s)" on/off spread events "trace MB"
for p in "${progs[@]}"; do
	build "$p"
	if [[ $p == plain ]]; then
		# the runtime's pass-through against no runtime at all
		build allocbench
		rt=("${cmd[@]}")
		build plain
		pl=("${cmd[@]}")
		a=() b=() r=()
		for ((i = 0; i < runs; i++)); do
			cmd=("${rt[@]}"); x=$(cpu 0)
			cmd=("${pl[@]}"); y=$(cpu 0)
			a+=("$x") b+=("$y") r+=("$(awk -v x="$x" -v y="$y" 'BEGIN{printf "%.4f", x / y}')")
		done
		printf '%-11s %9.3f %9.3f %8.3f %12s %10s %9s   (plain / runtime, ALLOCS=0)\n' "$p" \
			"$(printf '%s\n' "${b[@]}" | median)" "$(printf '%s\n' "${a[@]}" | median)" \
			"$(printf '%s\n' "${r[@]}" | median)" "$(printf '%s\n' "${r[@]}" | spread)" - -
		continue
	fi
	on=() off=() r=()
	cpu 1 >/dev/null # warm-up; its trace tells the volume
	events=- mb=-
	if ((!devnull)); then
		mb=$(du -cm "$tdir" | awk 'END{print $1}')
		events=$("$dir/allocstat" "$tdir"/*.vpt | awk '{print $1}')
	fi
	for ((i = 0; i < runs; i++)); do
		x=$(cpu 1)
		y=$(cpu 0)
		on+=("$x") off+=("$y") r+=("$(awk -v x="$x" -v y="$y" 'BEGIN{printf "%.4f", x / y}')")
	done
	printf '%-11s %9.3f %9.3f %8.3f %12s %10s %9s\n' "$p" "$(printf '%s\n' "${off[@]}" | median)" \
		"$(printf '%s\n' "${on[@]}" | median)" "$(printf '%s\n' "${r[@]}" | median)" \
		"$(printf '%s\n' "${r[@]}" | spread)" "$events" "$mb"
done
rm -rf "$tdir"

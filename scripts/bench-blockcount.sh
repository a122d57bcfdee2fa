#!/usr/bin/env bash
# bench-blockcount.sh: run-time overhead of the blockcount preset on the
# workloads of vptrace/testdata/workloads.
#
#   scripts/bench-blockcount.sh [-n RUNS] [-O "CFLAGS"] [WORKLOAD...]
#
# For each workload the kernel object is compiled with CFLAGS (default -O2)
# and linked twice: plain, with the runtime linked in but nothing
# instrumented (-Wl,-u,vpt_register: the fair baseline, link layout and
# runtime start-up included), and rewritten with the blockcount preset
# (every block of the kernel counted). The builds run alternately RUNS times
# (default 7) with the workload's bench-args; the script prints the median
# wall times, the ratio blockcount/plain, the block executions the run
# counted (from `hijack report --blocks`) and the geometric mean of the
# ratios. The outputs of the two builds must agree.
#
# Environment: HIJACK (default bin/hijack), VPTRACE_LIB (default: the
# libvptrace.a next to HIJACK, else bin/libvptrace.a), CC (default gcc),
# BENCH_DIR (default .cache/bench-blockcount).
set -euo pipefail

runs=7
opt="-O2"
while getopts "n:O:h" o; do
	case $o in
	n) runs=$OPTARG ;;
	O) opt=$OPTARG ;;
	*) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//;/^set -e/d'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

. "$(dirname "$0")/bench-workloads.sh"
bench_setup bench-blockcount "$@"

build() { # KERN DRV DIR
	local kern=$1 drv=$2 w=$3
	mkdir -p "$w"
	$CC $opt -fno-tree-loop-distribute-patterns "${kflags[@]}" -c "$kern" -o "$w/kern.o" || return 1
	$CC -O2 -c "$drv" -o "$w/drv.o" || return 1
	$CC "$w/drv.o" "$w/kern.o" -Wl,-u,vpt_register "$VPTRACE_LIB" -lpthread -o "$w/plain" || return 1
	"$HIJACK" -q --preset blockcount "$w/kern.o" "$w/kern.bc.o" || return 1
	$CC "$w/drv.o" "$w/kern.bc.o" "$VPTRACE_LIB" -lpthread -o "$w/bc" || return 1
	# (plain links the runtime, which writes a trace of its allocation
	# events and mappings: into the work directory, not the caller's)
	rm -f "$w/plain.vpt"
	VPTRACE_OUT=$w/plain.vpt "$w/plain" "${args[@]}" >"$w/plain.out" || { echo "the plain build fails"; return 1; }
	rm -f "$w/bc.vpt"
	VPTRACE_OUT=$w/bc.vpt "$w/bc" "${args[@]}" >"$w/bc.out" || { echo "the blockcount build fails"; return 1; }
	cmp -s "$w/plain.out" "$w/bc.out" || { echo "the blockcount build's output differs from the plain one's"; return 1; }
}

echo "blockcount overhead: $CC $opt kernels, driver -O2, $runs runs each, median wall time; baseline links the runtime"
printf '%-10s %8s %8s %7s %14s\n' workload plain bc bc/pl 'block execs'
declare -a rs=()
for name in "${names[@]}"; do
	kern=$wl/${name}_kern.c drv=$wl/${name}_drv.c
	[[ -f $kern && -f $drv ]] || { echo "bench-blockcount: no workload $name" >&2; exit 2; }
	read -r -a need <<<"$(meta "$kern" cpu)"
	if [[ ${#need[@]} -gt 0 ]] && ! has_cpu "${need[@]}"; then
		printf '%-10s skipped: the CPU lacks %s\n' "$name" "${need[*]}"
		continue
	fi
	read -r -a args <<<"$(meta "$kern" bench-args)"
	read -r -a kflags <<<"$(meta "$kern" cflags)"
	w=$dir/$name
	if ! err=$(build "$kern" "$drv" "$w" 2>&1); then
		printf '%-10s FAILED: %s\n' "$name" "$(grep -m1 . <<<"$err" | cut -c1-160)"
		continue
	fi
	: >"$w/times"
	for ((i = 0; i < runs; i++)); do
		for c in plain bc; do
			rm -f "$w/bc.vpt" "$w/plain.vpt"
			s=$(now)
			if [[ $c == bc ]]; then VPTRACE_OUT=$w/bc.vpt "$w/bc" "${args[@]}" >/dev/null; else VPTRACE_OUT=$w/plain.vpt "$w/plain" "${args[@]}" >/dev/null; fi
			e=$(now)
			echo "$c $(((e - s) / 1000))" >>"$w/times"
		done
	done
	med() { awk -v c="$1" '$1==c{print $2/1e6}' "$w/times" | median; }
	p=$(med plain) b=$(med bc)
	execs=$("$HIJACK" report --blocks --csv "$w/bc.vpt" 2>/dev/null | awk -F, 'NR>1{s+=$4} END{print s+0}')
	r=$(awk -v a="$b" -v b="$p" 'BEGIN{printf "%.3f", a/b}')
	rs+=("$r")
	printf '%-10s %8.3f %8.3f %7s %14s\n' "$name" "$p" "$b" "$r" "$execs"
done
if [[ ${#rs[@]} -gt 0 ]]; then
	printf '%-10s %8s %8s %7s\n' geomean "" "" "$(geo "${rs[@]}")"
fi

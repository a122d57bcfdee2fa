#!/usr/bin/env bash
# bench-vptrace.sh: run-time overhead of vptrace instrumentation on the
# workloads of vptrace/testdata/workloads (and the PCS simulation of the
# vptracer thesis, `pcs`).
#
#   scripts/bench-vptrace.sh [-n RUNS] [-O "CFLAGS"] [-t TLS] [-c] [-k] [WORKLOAD...]
#
# For each workload the kernel object is compiled with CFLAGS (default -O2),
# linked plain, linked with the runtime but not instrumented (`base`:
# `-Wl,-u,vpt_register` pulls the runtime in, whose start-up and link layout
# alone move some programs by up to 30% either way), and rewritten with the
# vptrace preset at T=0 and T=1 (H=4096, usestack false) and linked with the
# runtime. The builds run in turn, a round of each, RUNS rounds (default 7)
# with the workload's `bench-args` (sized to run ~0.5-2 s plain); the script
# prints the median wall time of each configuration, the ratios
# instrumented/base (the instrumentation's cost: what the targets are
# about) and T0/plain (what a user sees), each the median of the rounds'
# ratios (a round's builds run back to back, so a machine that speeds up or
# slows down between rounds moves both sides of a ratio alike), and the
# geometric means of the ratios over the workloads.
# -t sets the preset's tls parameter (auto, local-exec, initial-exec,
# indirect; default: not set, i.e. auto, which is what `hijack -r` picks for
# these kernels: indirect, as gcc compiles them position-independent; `hijack
# cc` builds get initial-exec: -t initial-exec measures what its users run).
# With -c the figures are CPU time (user + system, all threads: perf stat's
# task-clock) instead of wall time: steadier on a machine other jobs share
# (the cost of the instrumentation is CPU work in every thread).
# Extra columns:
#   off    the T=0 build with VPTRACE=off, over base: the inline page checks
#          and the calls into the runtime, which then discards the events
#          (the cost of the instrumented code alone, without recording; the
#          inline cache probes always miss then: nothing fills the cache)
#   events events the T=0 run recorded (from `hijack report`), and per second
#          of plain run time; pages: (thread, page) pairs
#
# Environment: HIJACK (default bin/hijack), VPTRACE_LIB (default: the
# libvptrace.a next to HIJACK, else bin/libvptrace.a), CC (default gcc),
# BENCH_DIR (default .cache/bench-vptrace). Needs: gcc, the rewriter and the
# runtime (make build; vptrace/runtime/build.sh); perf for -c.
set -euo pipefail

runs=7
opt="-O2"
keep=0
metric=wall
tls=
while getopts "n:O:t:ckh" o; do
	case $o in
	n) runs=$OPTARG ;;
	O) opt=$OPTARG ;;
	t) tls=$OPTARG ;;
	c) metric=cpu ;;
	k) keep=1 ;;
	*) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//;/^set -e/d'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

. "$(dirname "$0")/bench-workloads.sh"
bench_setup bench-vptrace "$@"

rules() { # threshold
	printf 'version: 1\nrules:\n  - preset: vptrace\n    params:\n      threshold: %s\n      pagesize: 4096\n      usestack: false\n' "$1"
	[ -z "$tls" ] || printf '      tls: %s\n' "$tls"
}
rules 0.0 >"$dir/T0.yaml"
rules 1.0 >"$dir/T1.yaml"


# build NAME KERN DRV DIR: the plain and the T0/T1 builds, one untimed run
# of each (page cache, and the outputs must agree)
build() {
	local name=$1 kern=$2 drv=$3 w=$4 t
	mkdir -p "$w"
	# shellcheck disable=SC2086
	$CC $opt -fno-tree-loop-distribute-patterns "${kflags[@]}" -c "$kern" -o "$w/kern.o" || return 1
	$CC -O2 -c "$drv" -o "$w/drv.o" || return 1
	$CC "$w/drv.o" "$w/kern.o" -lpthread -o "$w/plain" || return 1
	$CC "$w/drv.o" "$w/kern.o" "$VPTRACE_LIB" -Wl,-u,vpt_register -lpthread -o "$w/base" || return 1
	for t in T0 T1; do
		"$HIJACK" -q -rules "$dir/$t.yaml" "$w/kern.o" "$w/kern.$t.o" || return 1
		$CC "$w/drv.o" "$w/kern.$t.o" "$VPTRACE_LIB" -lpthread -o "$w/$t" || return 1
	done
	"$w/plain" "${args[@]}" >"$w/plain.out" || { echo "the plain build fails"; return 1; }
	# (the runtime in base writes a trace too: its allocation events and
	# mappings; into the work directory, not the caller's)
	rm -f "$w/base.vpt"
	VPTRACE_OUT=$w/base.vpt "$w/base" "${args[@]}" >"$w/base.out" || { echo "the base build fails"; return 1; }
	cmp -s "$w/plain.out" "$w/base.out" || { echo "the base build's output differs from the plain one's"; return 1; }
	for t in T0 T1; do
		rm -f "$w/$t.vpt" # (the runtime never overwrites a trace: a rerun would write $t.PID.vpt)
		VPTRACE_OUT=$w/$t.vpt "$w/$t" "${args[@]}" >"$w/$t.out" || { echo "the $t build fails"; return 1; }
		cmp -s "$w/plain.out" "$w/$t.out" || { echo "the $t build's output differs from the plain one's"; return 1; }
	done
}

echo "vptrace overhead: $CC $opt kernels, driver -O2, $runs rounds, median $metric time; ratios: medians of the rounds' ratios"
echo "rewriter $HIJACK, runtime $VPTRACE_LIB, tls ${tls:-auto: as hijack -r picks}"
echo
printf '%-10s %7s %7s %7s %7s %7s %7s %7s %7s %7s %11s %9s %8s\n' \
	workload plain base T0 T0/base T0/pl T1 T1/base off off/base 'events(T0)' ev/s pages
declare -a r0s=() r0ps=() r1s=() rofs=()
for name in "${names[@]}"; do
	kern=$wl/${name}_kern.c drv=$wl/${name}_drv.c
	[[ -f $kern && -f $drv ]] || { echo "bench-vptrace: no workload $name" >&2; exit 2; }
	read -r -a need <<<"$(meta "$kern" cpu)"
	if [[ ${#need[@]} -gt 0 ]] && ! has_cpu "${need[@]}"; then
		printf '%-10s skipped: the CPU lacks %s\n' "$name" "${need[*]}"
		continue
	fi
	read -r -a args <<<"$(meta "$kern" bench-args)"
	read -r -a kflags <<<"$(meta "$kern" cflags)"
	w=$dir/$name
	if ! err=$(build "$name" "$kern" "$drv" "$w" 2>&1); then
		printf '%-10s FAILED: %s\n' "$name" "$(grep -m1 . <<<"$err" | cut -c1-160)"
		echo "$err" >"$w/error.txt"
		continue
	fi
	: >"$w/times"
	for ((i = 0; i < runs; i++)); do
		for c in plain base T0 T1 off; do
			case $c in
			plain) cmd=("$w/$c") env=() ;;
			off) cmd=("$w/T0") env=(VPTRACE=off VPTRACE_OUT="$w/off.vpt") && rm -f "$w/off.vpt" ;;
			*) cmd=("$w/$c") env=(VPTRACE_OUT="$w/$c.vpt") && rm -f "$w/$c.vpt" ;;
			esac
			if [[ $metric == cpu ]]; then
				# task-clock: CPU time of every thread, in ms
				perf stat -x, -e task-clock -o "$w/time1" env "${env[@]}" "${cmd[@]}" "${args[@]}" >/dev/null
				echo "$c $(awk -F, '$3=="task-clock"{print $1/1000}' "$w/time1")" >>"$w/times"
			else
				s=$(now)
				env "${env[@]}" "${cmd[@]}" "${args[@]}" >/dev/null
				e=$(now)
				echo "$c $(((e - s) / 1000000000)).$(printf '%09d' $(((e - s) % 1000000000)))" >>"$w/times"
			fi
		done
	done
	med() { awk -v c="$1" '$1==c{print $2}' "$w/times" | median; }
	p=$(med plain) b=$(med base) t0=$(med T0) t1=$(med T1) off=$(med off)
	# events and (thread, page) pairs of the last T0 run, from the report's summary line
	sum=$("$HIJACK" report "$w/T0.vpt" 2>/dev/null | grep -m1 ' events' || true)
	ev=$(sed -n 's/.* \([0-9][0-9]*\) events.*/\1/p' <<<"$sum")
	pg=$(sed -n 's/.* \([0-9][0-9]*\) (thread, page) pairs.*/\1/p' <<<"$sum")
	# ratio A B: the median over the rounds of A's time over B's in the
	# same round (times has a line per run, the rounds in order)
	ratio() {
		awk -v a="$1" -v b="$2" '$1==a{x[na++]=$2} $1==b{y[nb++]=$2} END{for (i = 0; i < na && i < nb; i++) print x[i]/y[i]}' "$w/times" |
			median | awk '{printf "%.3f", $1}'
	}
	r0=$(ratio T0 base) r0p=$(ratio T0 plain) r1=$(ratio T1 base) roff=$(ratio off base)
	r0s+=("$r0") r0ps+=("$r0p") r1s+=("$r1") rofs+=("$roff")
	evs=$(awk -v e="${ev:-0}" -v p="$b" 'BEGIN{printf "%.3g", e/p}')
	printf '%-10s %7.3f %7.3f %7.3f %7s %7s %7.3f %7s %7.3f %7s %11s %9s %8s\n' \
		"$name" "$p" "$b" "$t0" "$r0" "$r0p" "$t1" "$r1" "$off" "$roff" "${ev:-?}" "$evs" "${pg:-?}"
	[[ $keep == 1 ]] || rm -f "$w"/*.vpt
done
if [[ ${#r0s[@]} -gt 0 ]]; then
	printf '%-10s %7s %7s %7s %7s %7s %7s %7s %7s %7s\n' geomean "" "" "" "$(geo "${r0s[@]}")" "$(geo "${r0ps[@]}")" "" "$(geo "${r1s[@]}")" "" "$(geo "${rofs[@]}")"
	printf 'T0/base: max %s\n' "$(printf '%s\n' "${r0s[@]}" | sort -g | tail -1)"
fi

#!/usr/bin/env bash
# The real-world suite: Debian source packages built plain and through
# `hijack cc` with the pad, clobber, vptrace (T=0) and blockcount presets, each running
# its own test suite; the results compared. See docs/realworld.md.
#
#   scripts/realworld/run.sh [options] [PROJECT...]
#     --short          the reduced test set (what `make test` runs)
#     --modes "M..."   among plain pad clobber vptrace blockcount (default: all five)
#     -j N             build and test jobs (default: nproc)
#     --list           list the projects
#
# One line per project and mode on stdout; results in
# .cache/realworld/results.csv (one row per project, set and mode, the
# latest), logs under .cache/realworld/results/. Exit status 1 when a test
# that passes plain fails in another mode, or a build fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
RW_ROOT=$PWD
RW_DIR=$RW_ROOT/scripts/realworld
RW_CACHE=${HIJACK_CACHE:-$RW_ROOT/.cache}/realworld
HIJACK=${HIJACK:-$RW_ROOT/bin/hijack}
. "$RW_DIR/lib.sh"

ALL_PROJECTS=(bzip2 zstd xz xz-clang pcre2 jq libxml2 fmtlib re2 re2-clang)
SHORT_PROJECTS=(bzip2 zstd)
RW_SHORT=0
RW_JOBS=$(nproc)
modes=("${RW_MODES_ALL[@]}")
projects=()
while (($#)); do
	case $1 in
	--short) RW_SHORT=1 ;;
	--modes) read -r -a modes <<<"$2" && shift ;;
	-j) RW_JOBS=$2 && shift ;;
	-j*) RW_JOBS=${1#-j} ;;
	--list)
		printf '%s\n' "${ALL_PROJECTS[@]}"
		exit 0
		;;
	-h | --help)
		sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	-*) rw_die "unknown option $1 (see --help)" ;;
	*) projects+=("$1") ;;
	esac
	shift
done
if ((${#projects[@]} == 0)); then
	if ((RW_SHORT)); then projects=("${SHORT_PROJECTS[@]}"); else projects=("${ALL_PROJECTS[@]}"); fi
fi
for p in "${projects[@]}"; do
	[ -f "$RW_DIR/projects/$p.sh" ] || rw_die "unknown project $p (--list)"
done
for m in "${modes[@]}"; do rw_rules "$m" >/dev/null; done
# plain first: the other modes are compared with it
ordered=()
for m in plain pad clobber vptrace blockcount; do
	for n in "${modes[@]}"; do [ "$n" = "$m" ] && ordered+=("$m"); done
done
modes=("${ordered[@]}")
SET=full
((RW_SHORT)) && SET=short
export RW_SHORT RW_JOBS RW_ROOT RW_DIR RW_CACHE

mkdir -p "$RW_CACHE/results"
rw_snapshot_tools
export RW_TOOLS
CSV=$RW_CACHE/results.csv
HEADER="project,set,mode,compiler,source,build,passed,failed,skipped,regressions,wall_s,slowdown,uninstrumented,warnings,traces,hijack,date,regressed"
echo "realworld: hijack $RW_HIJACK_VERSION; ${SET} set; modes ${modes[*]}; -j$RW_JOBS"

# the Debian sources
devpkgs=()
for p in "${projects[@]}"; do
	devpkgs+=("$(sed -n 's/^RW_DEVPKG=//p' "$RW_DIR/projects/$p.sh")")
done
mapfile -t devpkgs < <(printf '%s\n' "${devpkgs[@]}" | sort -u)
"$RW_ROOT/scripts/debsrc.sh" "${devpkgs[@]}" >&2 || rw_die "could not fetch the Debian sources (scripts/deps.sh --realworld installs the packages)"

# csv_put ROW: replaces the row of the same project, set and mode.
csv_put() {
	local row=$1 key
	key=$(cut -d, -f1-3 <<<"$row")
	(
		flock 9 # two runs of the suite at once (different projects)
		{
			echo "$HEADER"
			if [ -f "$CSV" ]; then tail -n +2 "$CSV" | awk -F, -v k="$key" '$1 "," $2 "," $3 != k'; fi
			echo "$row"
		} >"$CSV.tmp"
		mv -f "$CSV.tmp" "$CSV"
	) 9>"$CSV.lock"
}

# one project in one mode; prints the summary line, returns 1 on a regression
run_one() {
	local proj=$1 mode=$2
	(
		RW_CC=gcc
		. "$RW_DIR/projects/$proj.sh"
		local srcdir=$RW_ROOT/.cache/debsrc/$RW_SRC spec
		spec=$(cat "$srcdir/.hijack-source")
		local B=$RW_CACHE/build/$proj/$mode
		local R=$RW_CACHE/results/$proj/$SET
		local key
		key=$(
			{
				echo "$spec $mode $RW_CC"
				# a build that depends on the set (zstd's short one builds less)
				if declare -f rw_build | grep -q RW_SHORT; then echo "short=$RW_SHORT"; fi
				"$RW_CC" --version | head -n 1
				cat "$RW_DIR/lib.sh" "$RW_DIR/projects/$proj.sh" ${RW_KEYFILES:-}
				# plain links the runtime; the others are hijack's output
				echo "$RW_TOOLS_HASH"
				[ "$mode" = plain ] || cat "$(rw_rules "$mode")"
			} | sha256sum | cut -c1-16
		)
		mkdir -p "$R"
		export RW_MODE=$mode RW_RESULTS=$R/$mode.results RW_LOGDIR=$R/$mode.logs RW_TRACES=$RW_CACHE/traces/$proj-$mode
		rm -rf "$RW_LOGDIR" "$RW_RESULTS" "$RW_TRACES"
		mkdir -p "$RW_LOGDIR"
		: >"$RW_RESULTS"

		local build=ok t0 t1
		if [ "$(cat "$B/.rw-key" 2>/dev/null)" != "$key" ]; then
			rm -rf "$B"
			mkdir -p "$B"
			cp -a "$srcdir" "$B/src"
			rw_wrappers "$B/bin" "$mode" "$RW_CC"
			t0=$(date +%s)
			# a bash of its own: set -e is ignored in an if's condition (and
			# in all of run_one, called with ||), and a failing step must
			# fail the build
			if CC=$B/bin/cc CXX=$B/bin/c++ MAKEFLAGS=-j$RW_JOBS bash -euo pipefail -c \
				'. "$RW_DIR/lib.sh"; . "$RW_DIR/projects/$1.sh"; cd "$2"; set -x; rw_build' \
				rw-build "$proj" "$B/src" >"$B/build.log" 2>&1 </dev/null; then
				t1=$(date +%s)
				echo "$((t1 - t0))" >"$B/.rw-build-time"
				rw_warnings "$B/build.log" >"$B/warnings.txt"
				echo "$key" >"$B/.rw-key"
			else
				build=failed
			fi
		fi
		cp "$B/build.log" "$R/$mode.build.log" 2>/dev/null || true
		local funcs=0 warns=0 passed=0 failed=0 skipped=0 wall=0 traces=0
		if [ "$build" = ok ]; then
			read -r funcs warns < <(head -n 1 "$B/warnings.txt" | sed 's/funcs=\([0-9]*\) warnings=\([0-9]*\)/\1 \2/')
			cp "$B/warnings.txt" "$R/$mode.warnings.txt"
			case $mode in plain | vptrace | blockcount) rw_trace_env ;; esac
			t0=$(date +%s.%N)
			(
				cd "$B/src"
				rw_test
			) >"$RW_LOGDIR/_test.log" 2>&1 </dev/null || echo "realworld: rw_test exited $?" >>"$RW_LOGDIR/_test.log"
			t1=$(cat "$RW_LOGDIR/_timed_end" 2>/dev/null || date +%s.%N)
			wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
			passed=$(grep -c '^PASS ' "$RW_RESULTS" || true)
			failed=$(grep -c '^FAIL ' "$RW_RESULTS" || true)
			skipped=$(grep -c '^SKIP ' "$RW_RESULTS" || true)
			if [ -d "$RW_TRACES" ]; then
				traces=$(find "$RW_TRACES" -name '*.vpt' | wc -l)
				rm -rf "$RW_TRACES"
			fi
			echo "$wall" >"$R/$mode.wall"
		fi
		# regressions: tests that pass plain and do not pass here (a test a
		# project skips in this mode by design, SKIP, is not one)
		local regressed="" nreg=0 slow=""
		if [ "$mode" != plain ] && [ -f "$R/plain.results" ]; then
			regressed=$(comm -23 <(sed -n 's/^PASS //p' "$R/plain.results" | sort -u) <(sed -n 's/^\(PASS\|SKIP\) //p' "$RW_RESULTS" | sort -u) | tr '\n' ' ')
			regressed=${regressed% }
			[ -n "$regressed" ] && nreg=$(wc -w <<<"$regressed")
			if [ "$build" = ok ] && [ -f "$R/plain.wall" ]; then
				slow=$(awk -v a="$(cat "$R/plain.wall")" -v b="$wall" 'BEGIN { if (a > 0) printf "%.2f", b / a }')
			fi
		fi
		((${#regressed} > 300)) && regressed="${regressed:0:300}..."
		csv_put "$proj,$SET,$mode,$RW_CC,$spec,$build,$passed,$failed,$skipped,$nreg,$wall,$slow,$funcs,$warns,$traces,$RW_HIJACK_VERSION,$(date -u +%Y-%m-%dT%H:%MZ),${regressed//,/;}"
		local line
		line=$(printf '%-10s %-8s build %-6s passed %4s failed %3s skipped %3s  %7ss' "$proj" "$mode" "$build" "$passed" "$failed" "$skipped" "$wall")
		[ -n "$slow" ] && { [ "$mode" = vptrace ] || [ "$mode" = blockcount ]; } && line+=" (${slow}x plain)"
		((funcs)) && line+="  uninstrumented $funcs"
		((nreg)) && line+="  REGRESSED: ${regressed:0:120}"
		[ "$build" = ok ] || line+="  (log: ${R#"$RW_ROOT"/}/$mode.build.log)"
		echo "$line"
		[ "$build" = ok ] && ((nreg == 0))
	)
}

status=0
for p in "${projects[@]}"; do
	for m in "${modes[@]}"; do
		run_one "$p" "$m" || status=1
	done
done
exit $status

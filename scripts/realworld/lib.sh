# Common functions of the real-world suite (sourced by run.sh and the
# project files in projects/). See docs/realworld.md.
#
# A project file defines:
#   RW_DEVPKG   the Debian binary package whose source is built (scripts/debsrc.sh)
#   RW_SRC      the source package's directory under .cache/debsrc
#   RW_CC       gcc (default) or clang: the compiler the wrappers run
#   rw_build    configure and build in the current directory (a copy of the
#               source tree), with $CC and $CXX the mode's compiler wrappers
#   rw_test     run the project's tests in the build directory, recording
#               each test with rw_unit, rw_record or rw_automake; $RW_SHORT=1
#               asks for the reduced set
# and runs in a subshell of run.sh with `set -euo pipefail`.

RW_MODES_ALL=(plain pad clobber vptrace blockcount)

rw_log() { printf '%s\n' "$*" >&2; }
rw_die() {
	printf 'realworld: %s\n' "$*" >&2
	exit 1
}

# rw_hash FILE...: a short content hash of the files.
rw_hash() { cat "$@" | sha256sum | cut -c1-16; }

# rw_rules MODE: the rules file of a mode (empty for plain).
rw_rules() {
	case $1 in
	plain) ;;
	pad) echo "$RW_ROOT/testdata/rules/pad.yaml" ;;
	clobber) echo "$RW_ROOT/testdata/rules/clobber.yaml" ;;
	vptrace) echo "$RW_ROOT/testdata/rules/vptrace.yaml" ;;
	blockcount) echo "$RW_ROOT/testdata/rules/blockcount.yaml" ;;
	*) rw_die "unknown mode $1 (plain, pad, clobber, vptrace, blockcount)" ;;
	esac
}

# rw_wrappers DIR MODE COMPILER: writes DIR/cc and DIR/c++, the mode's CC and
# CXX (one executable each, as CMake wants). plain runs the compiler itself
# and links the vptrace runtime into every program too, as the vptrace build
# does (the shared runtime, libvptrace.so, loaded whether used or not; with
# an older runtime that has no .so, libvptrace.a with -Wl,-u,vpt_register;
# after -x none, as a probe may compile "-x c -"): the Go runtime starts in
# every process in both builds, so that the slowdown compares tracing, not
# the runtime's start-up. Shared objects get no runtime (one Go runtime per
# process).
rw_wrappers() {
	local dir=$1 mode=$2 comp=$3 cxx rules rtlink
	case $comp in
	gcc) cxx=g++ ;;
	clang) cxx=clang++ ;;
	*) rw_die "unknown compiler $comp" ;;
	esac
	mkdir -p "$dir"
	rules=$(rw_rules "$mode")
	if [ -f "$RW_TOOLS/libvptrace.so" ]; then
		rtlink="-x none -Wl,--push-state,--no-as-needed $RW_TOOLS/libvptrace.so -Wl,--pop-state -Wl,-rpath,$RW_TOOLS"
	else
		rtlink="-Wl,-u,vpt_register -x none $RW_TOOLS/libvptrace.a -lpthread"
	fi
	local name drv
	for name in cc c++; do
		drv=$comp
		[ "$name" = c++ ] && drv=$cxx
		if [ "$mode" = plain ]; then
			cat >"$dir/$name" <<EOF
#!/bin/bash
# realworld: plain $drv, the vptrace runtime linked into programs
for a in "\$@"; do
	case \$a in -c | -S | -E | -M | -MM | -shared | -r | --version | -v | -V | -dumpversion | -dumpmachine | -print-* | -qversion) exec $drv "\$@" ;; esac
done
exec $drv "\$@" $rtlink
EOF
		else
			cat >"$dir/$name" <<EOF
#!/bin/bash
# realworld: $mode ($rules)
exec $RW_TOOLS/hijack cc -r $rules -- $drv "\$@"
EOF
		fi
		chmod +x "$dir/$name"
	done
}

# rw_snapshot_tools: copies $HIJACK and the runtime next to it
# (libvptrace.so, libvptrace-go.so, libvptrace.a, vptrace.h, vptrace.supp: others may rebuild
# them while the suite runs) into $RW_CACHE/tools/HASH and sets RW_TOOLS and
# RW_TOOLS_HASH. hijack cc finds the runtime next to the binary.
rw_snapshot_tools() {
	local h=$HIJACK rtdir f
	rtdir=${HIJACK_RUNTIME:-$(dirname "$h")}
	[ -d "$rtdir" ] || rtdir=$(dirname "$rtdir")
	[ -x "$h" ] || rw_die "no hijack at $h (make build)"
	[ -f "$rtdir/libvptrace.a" ] || [ -f "$rtdir/libvptrace.so" ] || rw_die "no runtime in $rtdir (make build)"
	local tmp
	mkdir -p "$RW_CACHE"
	tmp=$(mktemp -d "$RW_CACHE/tools.XXXXXX")
	cp "$h" "$tmp/hijack"
	for f in libvptrace.so libvptrace-go.so libvptrace.a vptrace.h vptrace.supp; do
		[ ! -f "$rtdir/$f" ] || cp "$rtdir/$f" "$tmp/"
	done
	"$tmp/hijack" --version >/dev/null 2>&1 || {
		rm -rf "$tmp"
		rw_die "$h does not run (half built? make build)"
	}
	RW_TOOLS_HASH=$(rw_hash "$tmp"/*)
	RW_TOOLS=$RW_CACHE/tools/$RW_TOOLS_HASH
	mkdir -p "$RW_CACHE/tools"
	# (another run of the suite may have put the same tools there first)
	mv -T "$tmp" "$RW_TOOLS" 2>/dev/null || rm -rf "$tmp"
	RW_HIJACK_VERSION=$("$RW_TOOLS/hijack" --version 2>/dev/null | head -n 1 | awk '{print $2}')
}

# ---- test results ----------------------------------------------------------
# rw_test writes one line per test into $RW_RESULTS: PASS|FAIL|SKIP NAME.

rw_record() { # STATUS NAME
	printf '%s %s\n' "$1" "$2" >>"$RW_RESULTS"
}

# rw_unit NAME [--timeout SECS] CMD...: runs CMD (output in $RW_LOGDIR/NAME.log),
# records PASS on exit 0, FAIL otherwise.
rw_unit() {
	local name=$1 to=${RW_UNIT_TIMEOUT:-1200}
	shift
	if [ "${1:-}" = --timeout ]; then
		to=$2
		shift 2
	fi
	local log=$RW_LOGDIR/${name//\//_}.log st=0
	if [ -n "${VPTRACE_OUT:-}" ]; then
		# a trace directory per test: pids wrap (pid_max 32768) over a suite
		# of tens of thousands of processes, and a process whose name is
		# taken says so on stderr, which tests such as zstd's cli-tests compare
		VPTRACE_OUT=$RW_TRACES/${name//\//_}/%p.vpt timeout -k 10 "$to" "$@" >"$log" 2>&1 </dev/null || st=$?
	else
		timeout -k 10 "$to" "$@" >"$log" 2>&1 </dev/null || st=$?
	fi
	if [ "$st" = 0 ]; then
		rw_record PASS "$name"
	else
		[ "$st" = 124 ] && echo "realworld: timed out after ${to}s" >>"$log"
		rw_record FAIL "$name"
	fi
	return 0
}

# rw_timed_end: the suite's wall time ends here (what follows, e.g. the same
# tests again under valgrind, is not timed).
rw_timed_end() { date +%s.%N >"$RW_LOGDIR/_timed_end"; }

# rw_automake DIR [PREFIX]: records the results of an automake test harness
# (every *.trs below DIR: :test-result: PASS/FAIL/XFAIL/XPASS/SKIP/ERROR).
rw_automake() {
	local dir=$1 prefix=${2:-} f name res
	while IFS= read -r f; do
		name=${f#"$dir"/}
		name=$prefix${name%.trs}
		while IFS= read -r res; do
			case $res in
			PASS | XFAIL) rw_record PASS "$name" ;;
			SKIP) rw_record SKIP "$name" ;;
			*) rw_record FAIL "$name" ;;
			esac
		done < <(sed -n 's/^:test-result: *\([A-Z]*\).*/\1/p' "$f")
	done < <(find "$dir" -name '*.trs' | sort)
}

# rw_ctest DIR [CTEST-ARGS...]: runs ctest in DIR and records each test.
rw_ctest() {
	local dir=$1 log=$RW_LOGDIR/ctest.log
	shift
	(cd "$dir" && timeout -k 10 "${RW_UNIT_TIMEOUT:-3600}" ctest -j"$RW_JOBS" --timeout 1200 --output-on-failure "$@" >"$log" 2>&1 </dev/null) || true
	# "  1/18 Test  #1: assert-test ......   Passed    0.01 sec"
	sed -n 's/^ *[0-9]*\/[0-9]* *Test *#[0-9]*: *\([^ ]*\) \.*\**\** *\([A-Za-z]*\).*/\2 \1/p' "$log" |
		while read -r st name; do
			case $st in
			Passed) rw_record PASS "$name" ;;
			Not | Skipped) rw_record SKIP "$name" ;;
			*) rw_record FAIL "$name" ;;
			esac
		done
}

# rw_trace_env: VPTRACE_OUT into a per-run directory ($RW_TRACES, made here:
# one trace per process).
rw_trace_env() {
	mkdir -p "$RW_TRACES"
	export VPTRACE_OUT=$RW_TRACES/%p.vpt
}

# rw_warnings LOG: counts hijack's warnings in a build log:
# "funcs=N warnings=M" and, on stdout after that, one line per reason
# "COUNT REASON" (functions left uninstrumented, per reason; other warnings by
# their text with names and numbers taken out).
rw_warnings() {
	local log=$1
	# an object compiled twice (a probe, a rebuild) warns twice: once per file
	grep -a '^hijack: .*: warning: ' "$log" | sort -u | sed 's/^hijack: [^ ]*: warning: //' >"$log.warn" || true
	# section .text.foo: 2 function(s) not instrumented (a, b): REASON
	local funcs
	funcs=$(sed -n 's/^section [^ ]*: \([0-9]*\) function(s) not instrumented .*/\1/p' "$log.warn" | awk '{s += $1} END {print s + 0}')
	echo "funcs=$funcs warnings=$(wc -l <"$log.warn")"
	{
		sed -n 's/^section [^ ]*: \([0-9]*\) function(s) not instrumented ([^)]*): \(.*\)/\1 \2/p' "$log.warn" |
			sed 's/0x[0-9a-f]*/ADDR/g; s/[0-9][0-9]*/N/2g' | awk '{n = $1; $1 = ""; c[substr($0, 2)] += n} END {for (k in c) print c[k], k}'
		grep -v ' function(s) not instrumented ' "$log.warn" | sed 's/0x[0-9a-f]*/ADDR/g; s/[0-9][0-9]*/N/g' | sort | uniq -c | awk '{n = $1; $1 = ""; print n, "(warning)" $0}'
	} | sort -rn
}

# rw_make_var DIR VAR: the value of a make variable of DIR's Makefile (e.g.
# check_PROGRAMS, to build the test programs before the tests are timed).
rw_make_var() {
	make -s --no-print-directory -C "$1" -f Makefile -f <(printf 'rw-print-var:\n\t@echo $(%s)\n' "$2") rw-print-var
}

# bench-workloads.sh: what the overhead benchmarks over the workloads of
# vptrace/testdata/workloads share (sourced by bench-vptrace.sh and
# bench-blockcount.sh, after their options): the tools, the workloads and
# their metadata, timing and statistics.
#
#   bench_setup NAME WORKLOAD...
#
# sets root, wl, HIJACK (default bin/hijack), VPTRACE_LIB (default: the
# libvptrace.a next to HIJACK, else bin/libvptrace.a), CC (default gcc),
# dir (BENCH_DIR, default .cache/NAME) and names (the workloads given, or
# all), and checks that the tools exist and that the CPU runs $opt code.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
wl="$root/vptrace/testdata/workloads"

# meta KERN KEY: the kernel's metadata (// key: value lines at its top)
meta() { sed -n "1,/^[^/]/s|^// $2: *||p" "$1"; }
cpuflags=$(grep -m1 '^flags' /proc/cpuinfo || true)
has_cpu() { local f; for f in "$@"; do [[ " $cpuflags " == *" $f "* ]] || return 1; done; }
now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END{if(NR==0){print "nan"; exit} if(NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
geo() { printf '%s\n' "$@" | awk '{s+=log($1); n++} END{if(n) printf "%.3f", exp(s/n); else print "-"}'; }

bench_setup() {
	local name=$1 f k
	shift
	HIJACK=${HIJACK:-$root/bin/hijack}
	if [[ -z ${VPTRACE_LIB:-} ]]; then
		VPTRACE_LIB=$(dirname "$HIJACK")/libvptrace.a
		[[ -f $VPTRACE_LIB ]] || VPTRACE_LIB=$root/bin/libvptrace.a
	fi
	CC=${CC:-gcc}
	dir=${BENCH_DIR:-$root/.cache/$name}
	for f in "$HIJACK" "$VPTRACE_LIB"; do
		[[ -f $f ]] || { echo "$name: $f not found (make build; vptrace/runtime/build.sh)" >&2; exit 2; }
	done
	command -v "$CC" >/dev/null || { echo "$name: $CC not found" >&2; exit 2; }
	if [[ $# -gt 0 ]]; then
		names=("$@")
	else
		names=()
		for k in "$wl"/*_kern.c; do names+=("$(basename "$k" _kern.c)"); done
	fi
	if [[ $opt == *x86-64-v3* || $opt == *avx2* || $opt == *native* ]] && ! has_cpu avx2 fma bmi2; then
		echo "$name: this CPU cannot run $opt code" >&2
		exit 2
	fi
	mkdir -p "$dir"
}

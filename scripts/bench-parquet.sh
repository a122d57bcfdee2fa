#!/usr/bin/env bash
# bench-parquet.sh [SIZE]: how fast hijack report --parquet converts a
# large trace, and in how much memory. Generates a synthetic trace of SIZE
# bytes (default 1G; K, M, G suffixes: internal/tracegen, 8 threads, heap
# arrays freed and reused, stacks, TLS, raw events; compressed as the
# runtime writes it, BENCH_PLAIN=1 for plain AGG chunks), converts it with
# /usr/bin/time, and prints page rows per second, MB of trace per second,
# peak RSS and the dataset's size; then times two queries over it with
# hijack query. Work files go to BENCH_DIR (default .cache/bench-parquet;
# the trace is kept for the next run, the dataset removed).
#
#   scripts/bench-parquet.sh 10G      # the issue's 10 GB-class trace
set -euo pipefail
size=${1:-1G}
dir=${BENCH_DIR:-.cache/bench-parquet}
mkdir -p "$dir"
go build -o "$dir/hijack" ./cmd/hijack
go build -tags duckdb -o "$dir/hijack-query" ./cmd/hijack-query
go build -o "$dir/gentrace" ./internal/tracegen/gentrace
compress=-compress kind=compressed
[[ ${BENCH_PLAIN:-} == 1 ]] && compress=-compress=false kind=plain
trace=$dir/trace-$size-$kind.vpt
if [[ ! -s $trace ]]; then
	"$dir/gentrace" "$compress" -size "$size" -o "$trace.tmp" >&2
	mv "$trace.tmp" "$trace"
fi
bytes=$(stat -c %s "$trace")
rm -rf "$dir/ds"
# GNU time: elapsed seconds, peak RSS KiB, user and system seconds
out=$(/usr/bin/time -f 'TIME %e %M %U %S' "$dir/hijack" report --parquet "$dir/ds" "$trace" 2>&1)
rows=$(sed -n 's/.* run(s), \([0-9]*\) page rows.*/\1/p' <<<"$out")
read -r _ secs rss user sys < <(grep '^TIME ' <<<"$out")
dsbytes=$(du -sb "$dir/ds" | cut -f1)
awk -v k="$kind" -v b="$bytes" -v r="$rows" -v s="$secs" -v m="$rss" -v u="$user" -v y="$sys" -v d="$dsbytes" 'BEGIN {
	printf "trace        %.2f GB (%s)\n", b / 1e9, k
	printf "page rows    %d\n", r
	printf "wall         %.1f s (user %.1f s, sys %.1f s)\n", s, u, y
	printf "throughput   %.0f page rows/s, %.1f MB/s of trace\n", r / s, b / 1e6 / s
	printf "peak RSS     %.0f MiB\n", m / 1024
	printf "dataset      %.2f GB (%.1f bytes/row; trace/dataset %.2f)\n", d / 1e9, d / r, b / d
}'
for q in "SELECT thread, count(DISTINCT page) AS pages FROM pages GROUP BY ALL ORDER BY ALL" \
	"SELECT owner, sum(events) AS events FROM pages GROUP BY ALL ORDER BY events DESC LIMIT 3"; do
	printf 'query        %s\n' "$q"
	/usr/bin/time -f '             %e s, peak RSS %M KiB' "$dir/hijack-query" "$dir/ds" "$q" 2>&1 >/dev/null
done
rm -rf "$dir/ds"

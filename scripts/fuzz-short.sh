#!/usr/bin/env bash
# Run every Go fuzz target (func FuzzXxx in a _test.go file) for FUZZTIME
# (default 15s) each. go test -fuzz takes one target per run.
#
# FUZZMINTIME (default 200x) bounds the minimisation of every new
# interesting input: with go's default (60s) the object-sized inputs of the
# rewrite and elfobj targets spend most of a run minimising, not fuzzing.
# FUZZ='regexp' selects targets by name; FUZZPARALLEL sets -parallel.
# -timeout 0: go test's default 10 minutes would end a longer FUZZTIME.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-15s}
FUZZMINTIME=${FUZZMINTIME:-200x}
FUZZ=${FUZZ:-.}
par=()
[ -n "${FUZZPARALLEL:-}" ] && par=(-parallel "$FUZZPARALLEL")
n=0
while IFS= read -r f; do
	dir=$(dirname "$f")
	for fn in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$f" | grep -E -- "$FUZZ" || true); do
		echo "fuzz-short: ./$dir $fn ($FUZZTIME)"
		go test -run '^$' -fuzz "^$fn\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINTIME" -timeout 0 ${par[@]+"${par[@]}"} "./$dir"
		n=$((n + 1))
	done
done < <(git ls-files -co --exclude-standard '*_test.go' 2>/dev/null || find . -name '*_test.go' -not -path './.cache/*')
echo "fuzz-short: $n fuzz targets run"

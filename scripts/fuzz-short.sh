#!/usr/bin/env bash
# Run every Go fuzz target (func FuzzXxx in a _test.go file) for FUZZTIME
# (default 15s) each. go test -fuzz takes one target per run.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-15s}
n=0
while IFS= read -r f; do
	dir=$(dirname "$f")
	for fn in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$f"); do
		echo "fuzz-short: ./$dir $fn ($FUZZTIME)"
		go test -run '^$' -fuzz "^$fn\$" -fuzztime "$FUZZTIME" "./$dir"
		n=$((n + 1))
	done
done < <(git ls-files -co --exclude-standard '*_test.go' 2>/dev/null || find . -name '*_test.go' -not -path './.cache/*')
echo "fuzz-short: $n fuzz targets run"

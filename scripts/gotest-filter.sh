#!/bin/sh
# Filter `go test -v` output: drop the === RUN/PAUSE/CONT/NAME lines and the
# --- PASS lines of subtests (with their log lines); keep failures, skips
# with their reasons, logs, the top-level results and the summary; then print
# a count of passed, failed and skipped tests (subtests included).
exec awk '
	/^=== / { skip = 0; next }
	/^ *--- PASS: / { pass++ }
	/^ *--- FAIL: / { fail++ }
	/^ *--- SKIP: / { skipped++ }
	/^ +--- PASS: / { skip = 1; next }
	/^ *--- (FAIL|SKIP): / || /^--- PASS: / { skip = 0 }
	skip && /^ / { next }
	{ skip = 0; print; fflush() }
	END { printf "e2e: %d passed, %d failed, %d skipped\n", pass, fail, skipped }
'

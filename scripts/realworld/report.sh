#!/usr/bin/env bash
# Regenerates the results in docs/realworld.md from the suite's results:
# .cache/realworld/results.csv is copied to docs/realworld.csv (rows of the
# projects run, the full set where there is one), the warnings of each build
# to docs/realworld-warnings.txt, and the tables between the markers in
# docs/realworld.md are rewritten from them.
#
#   scripts/realworld/report.sh           from .cache/realworld/results.csv
#   scripts/realworld/report.sh --docs    from docs/realworld.csv as it is
set -euo pipefail
cd "$(dirname "$0")/../.."
RW_CACHE=${HIJACK_CACHE:-$PWD/.cache}/realworld
DOC=docs/realworld.md
CSV=docs/realworld.csv
WARN=docs/realworld-warnings.txt

if [ "${1:-}" != --docs ]; then
	[ -f "$RW_CACHE/results.csv" ] || {
		echo "report: no $RW_CACHE/results.csv: run scripts/realworld/run.sh first" >&2
		exit 1
	}
	# the full set's rows; a project's short-set rows only where it has no full ones
	awk -F, 'NR == 1 { print; next }
		{ rows[NR] = $0; proj[NR] = $1; set[NR] = $2; if ($2 == "full") full[$1] = 1 }
		END { for (i = 2; i <= NR; i++) if (set[i] == "full" || !full[proj[i]]) print rows[i] }' \
		"$RW_CACHE/results.csv" >"$CSV.tmp"
	mv -f "$CSV.tmp" "$CSV"
	: >"$WARN.tmp"
	tail -n +2 "$CSV" | while IFS=, read -r proj set mode _; do
		w=$RW_CACHE/results/$proj/$set/$mode.warnings.txt
		[ -s "$w" ] || continue
		[ "$(head -n 1 "$w")" = "funcs=0 warnings=0" ] && continue
		{
			echo "== $proj $mode ($set set): $(head -n 1 "$w")"
			tail -n +2 "$w"
		} >>"$WARN.tmp"
	done
	mv -f "$WARN.tmp" "$WARN"
fi

table() {
	echo "| project | build | plain | pad | clobber | vptrace | blockcount | uninstrumented functions (pad / clobber / vptrace / blockcount) | suite time plain → vptrace, blockcount | hijack |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	awk -F, '
	NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
	{
		k = $col["project"]
		if (!(k in seen)) { seen[k] = 1; order[++n] = k }
		m = $col["mode"]
		set[k] = $col["set"]; comp[k] = $col["compiler"]
		if ($col["build"] != "ok") cell[k, m] = "build failed"
		else {
			total = $col["passed"] + $col["failed"]
			c = $col["passed"] "/" total
			if ($col["skipped"] > 0) c = c " (" $col["skipped"] " skipped)"
			if ($col["regressions"] > 0) c = c " **(" $col["regressions"] " regressed)**"
			cell[k, m] = c
		}
		unin[k, m] = $col["uninstrumented"]
		wall[k, m] = $col["wall_s"]; slow[k, m] = $col["slowdown"]
		# the hijack versions of the row set (a project rerun in one mode may differ)
		v = $col["hijack"]
		if (!((k, v) in hjseen)) { hjseen[k, v] = 1; hj[k] = (hj[k] == "" ? v : hj[k] ", " v) }
	}
	END {
		for (i = 1; i <= n; i++) {
			k = order[i]
			t = "-"
			if ((k, "plain") in wall && (k, "vptrace") in wall && slow[k, "vptrace"] != "")
				t = wall[k, "plain"] " s → " wall[k, "vptrace"] " s (" slow[k, "vptrace"] "×)"
			if ((k, "plain") in wall && (k, "blockcount") in wall && slow[k, "blockcount"] != "")
				t = t ", " wall[k, "blockcount"] " s (" slow[k, "blockcount"] "×)"
			u = (((k, "pad") in unin) ? unin[k, "pad"] : "-") " / " (((k, "clobber") in unin) ? unin[k, "clobber"] : "-") " / " (((k, "vptrace") in unin) ? unin[k, "vptrace"] : "-") " / " (((k, "blockcount") in unin) ? unin[k, "blockcount"] : "-")
			printf "| %s | %s, %s set | %s | %s | %s | %s | %s | %s | %s | %s |\n", k, comp[k], set[k],
				((k, "plain") in cell) ? cell[k, "plain"] : "-", ((k, "pad") in cell) ? cell[k, "pad"] : "-",
				((k, "clobber") in cell) ? cell[k, "clobber"] : "-", ((k, "vptrace") in cell) ? cell[k, "vptrace"] : "-",
				((k, "blockcount") in cell) ? cell[k, "blockcount"] : "-",
				u, t, hj[k]
		}
	}' "$CSV"
}

regressions() {
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$col["regressed"] != "" { printf "- %s, %s: %s\n", $col["project"], $col["mode"], $col["regressed"] }
		$col["build"] != "ok" { printf "- %s, %s: the build failed\n", $col["project"], $col["mode"] }' "$CSV"
}

[ -f "$DOC" ] || {
	echo "report: no $DOC" >&2
	exit 1
}
# replace what is between <!-- NAME:begin --> and <!-- NAME:end -->
splice() {
	local name=$1 file=$2
	awk -v name="$name" -v file="$file" '
		$0 == "<!-- " name ":begin -->" { print; while ((getline l < file) > 0) print l; skip = 1; next }
		$0 == "<!-- " name ":end -->" { skip = 0 }
		!skip' "$DOC" >"$DOC.tmp"
	mv -f "$DOC.tmp" "$DOC"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
table >"$tmp/table"
regressions >"$tmp/regressions"
[ -s "$tmp/regressions" ] || echo "- none" >"$tmp/regressions"
splice table "$tmp/table"
splice regressions "$tmp/regressions"
echo "report: $DOC, $CSV, $WARN"

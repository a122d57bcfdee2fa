#!/usr/bin/env bash
# bench-rewrite.sh: how fast hijack rewrites compared with how fast objdump
# disassembles the same input, in the same run (issue 13's targets):
#
#   per object   every member of each archive extracted to a .o, one
#                `hijack -q -r pad.yaml M.o OUT.o` process per member
#                against one `objdump -dr M.o` per member (what a Makefile
#                does): CPU ratio, target <= 1.0
#   archive      the archive in one process, `hijack -q -j 1` (one thread,
#                like objdump) against `objdump -dr LIB.a`: target <= 0.5
#   peak RSS     the largest of the per-member processes and the archive
#                process, against 4x the largest member + 20 MB
#   start-up     `hijack -r pad.yaml tiny.o OUT.o` (a one-function object)
#                against a Go hello-world built in this run: CPU per
#                process, target: at most 2 ms more
#
# Every hijack run writes a new output file, as in a clean build (replacing
# an existing file costs a named temporary, a rename over the old file and
# hijack's signal handling: about 0.5 ms more a process). Two presets, a
# table each: pad (code inserted before every instruction: the most code
# moved) and vptrace (what a user's build runs: the analyses, a snippet
# per site, the site tables; several times pad's cost). PRESET="NAME..."
# measures others. Each
# figure is the median of REPS alternating runs (hijack, the other, hijack,
# ...); CPU is user + system time of the whole command (GNU time), each
# command repeated in a loop long enough that GNU time's 10 ms resolution
# does not matter.
#
#   scripts/bench-rewrite.sh [REPS] [ARCHIVE...]
#   HIJACK=/path/to/hijack scripts/bench-rewrite.sh   (default bin/hijack)
#   PRESET=vptrace scripts/bench-rewrite.sh            (default "pad vptrace")
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
shift || true
libs=("$@")
[ ${#libs[@]} -gt 0 ] || libs=(/usr/lib/x86_64-linux-gnu/libsqlite3.a /usr/lib/x86_64-linux-gnu/liblua5.4.a /usr/lib/x86_64-linux-gnu/libz.a)
read -r -a presets <<<"${PRESET:-pad vptrace}"
hijack=${HIJACK:-$PWD/bin/hijack}
[ -n "${HIJACK:-}" ] || [ -x bin/hijack ] || make --no-print-directory build >/dev/null
for l in "${libs[@]}"; do
	[ -f "$l" ] || { echo "bench-rewrite: $l missing (run scripts/deps.sh)" >&2; exit 1; }
done
for t in objdump ar gcc go /usr/bin/time; do
	command -v "$t" >/dev/null || { echo "bench-rewrite: $t missing" >&2; exit 1; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# cpu CMD...: run CMD (its output thrown away) and print its CPU seconds
# (user + system, children included) and peak RSS in KiB.
cpu() {
	/usr/bin/time -f '%U %S %M' -o "$tmp/t" "$@" >/dev/null 2>"$tmp/err" || { echo "bench-rewrite: $* failed:" >&2; cat "$tmp/err" >&2; exit 1; }
	awk '{printf "%.3f %d\n", $1+$2, $3}' "$tmp/t"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# alternate NAME_A NAME_B CMD_A... -- CMD_B...: REPS alternating runs of
# each; their CPU seconds go to $tmp/NAME_A.cpu and NAME_B.cpu.
alternate() {
	local a=$1 b=$2; shift 2
	local ca=() cb=()
	while [ "$1" != -- ]; do ca+=("$1"); shift; done
	shift; cb=("$@")
	: > "$tmp/$a.cpu"; : > "$tmp/$b.cpu"
	for ((i = 0; i < reps; i++)); do
		fresh
		cpu "${ca[@]}" | cut -d' ' -f1 >> "$tmp/$a.cpu"
		fresh
		cpu "${cb[@]}" | cut -d' ' -f1 >> "$tmp/$b.cpu"
	done
}
# fresh: an empty $OUTS for the next timed run's outputs.
fresh() { rm -rf "$OUTS"; mkdir "$OUTS"; }
# per NAME K: the median of NAME's runs, divided by the K repetitions in each
per() { median < "$tmp/$1.cpu" | awk -v k="$2" '{print $1 / k}'; }
# times SECONDS: how many repetitions of a command that takes SECONDS of
# CPU make a timed run of about half a second.
times() { awk -v s="$1" 'BEGIN {k = int(0.5 / (s > 0.005 ? s : 0.005)); print (k < 1) ? 1 : k}'; }

# The loops: one shell runs them, the same for both tools, so that the
# shell's own cost is in both.
cat > "$tmp/each.sh" <<'END'
#!/bin/sh
# each.sh K hijack|objdump DIR: K times, one process per member of DIR
k=$1 tool=$2 dir=$3
while [ "$k" -gt 0 ]; do
	for f in "$dir"/*.o; do
		case $tool in
		objdump) objdump -dr "$f" >/dev/null ;;
		*) "$tool" -q -r "$RULES" "$f" "$OUTS/$k-${f##*/}" ;;
		esac
	done
	k=$((k - 1))
done
END
cat > "$tmp/loop.sh" <<'END'
#!/bin/sh
# loop.sh K CMD...: CMD K times; an argument @ stands for a new output
# file each time
run() {
	j=$1; shift
	for a in "$@"; do
		[ "$a" = @ ] && a=$OUTS/$j.out
		set -- "$@" "$a"; shift
	done
	"$@" >/dev/null
}
k=$1; shift
while [ "$k" -gt 0 ]; do run "$k" "$@"; k=$((k - 1)); done
END
chmod +x "$tmp/each.sh" "$tmp/loop.sh"
export RULES=$tmp/rules.yaml OUTS=$tmp/outs

# The Go hello-world of the start-up figure.
mkdir -p "$tmp/hello"
printf 'module hello\n\ngo 1.21\n' > "$tmp/hello/go.mod"
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n' > "$tmp/hello/main.go"
(cd "$tmp/hello" && go build -o "$tmp/hello-world" .)
echo 'int f(int x) { return x + 1; }' > "$tmp/tiny.c"
gcc -O2 -c "$tmp/tiny.c" -o "$tmp/tiny.o"
for lib in "${libs[@]}"; do
	name=$(basename "$lib" .a)
	dir=$tmp/$name; mkdir -p "$dir"
	(cd "$dir" && ar x "$lib")
	n=$(ar t "$lib" | wc -l); files=$(ls "$dir" | wc -l)
	[ "$n" = "$files" ] || echo "bench-rewrite: $lib: $n members, $files distinct names: the per-object figures cover $files" >&2
done

for preset in "${presets[@]}"; do
printf 'version: 1\nrules:\n  - preset: %s\n' "$preset" > "$tmp/rules.yaml"
echo "hijack: $hijack ($("$hijack" --version | sed 1q)), preset $preset, $reps alternating runs, medians; CPU = user + system"
printf '%-12s %7s %9s | %-31s | %-31s | %s\n' archive members largest "per object: hijack objdump" "archive: hijack objdump" "peak RSS: per object, archive (bound)"
for lib in "${libs[@]}"; do
	name=$(basename "$lib" .a)
	dir=$tmp/$name
	files=$(ls "$dir" | wc -l)
	largest=$(stat -c %s "$dir"/*.o | sort -n | tail -1)
	bound=$(( (4 * largest + 20 * 1024 * 1024) / 1024 ))

	ko=$(times "$(cpu "$tmp/each.sh" 1 objdump "$dir" | cut -d' ' -f1)")
	ka=$(times "$(cpu objdump -dr "$lib" | cut -d' ' -f1)")
	alternate hobj oobj "$tmp/each.sh" "$ko" "$hijack" "$dir" -- "$tmp/each.sh" "$ko" objdump "$dir"
	alternate harc oarc "$tmp/loop.sh" "$ka" "$hijack" -q -j 1 -r "$tmp/rules.yaml" "$lib" @ -- "$tmp/loop.sh" "$ka" objdump -dr "$lib"
	# peak RSS: each member's process once, and the archive's process
	rss_obj=0
	fresh
	for f in "$dir"/*.o; do
		r=$(cpu "$hijack" -q -r "$tmp/rules.yaml" "$f" "$OUTS/${f##*/}" | cut -d' ' -f2)
		[ "$r" -gt "$rss_obj" ] && rss_obj=$r
	done
	rss_arc=$(cpu "$hijack" -q -j 1 -r "$tmp/rules.yaml" "$lib" "$OUTS/out.a" | cut -d' ' -f2)

	ho=$(per hobj "$ko") oo=$(per oobj "$ko") ha=$(per harc "$ka") oa=$(per oarc "$ka")
	awk -v name="$name" -v files="$files" -v largest="$largest" -v ho="$ho" -v oo="$oo" -v ha="$ha" -v oa="$oa" \
		-v ro="$rss_obj" -v ra="$rss_arc" -v bound="$bound" 'BEGIN {
		verdict = (ro <= bound && ra <= bound) ? "ok" : "over"
		printf "%-12s %7d %5d KiB | %7.3fs %7.3fs %5.2fx %-4s | %7.3fs %7.3fs %5.2fx %-4s | %6d, %6d KiB (%d KiB) %s\n",
			name, files, largest / 1024, ho, oo, ho / oo, (ho / oo <= 1.0) ? "ok" : "over",
			ha, oa, ha / oa, (ha / oa <= 0.5) ? "ok" : "over", ro, ra, bound, verdict
	}'
done

# Start-up: a one-function object, against a Go hello-world.
runs=200
alternate hstart gstart "$tmp/loop.sh" $runs "$hijack" -r "$tmp/rules.yaml" "$tmp/tiny.o" @ -- "$tmp/loop.sh" $runs "$tmp/hello-world"
hs=$(per hstart $runs) gs=$(per gstart $runs)
awk -v h="$hs" -v g="$gs" 'BEGIN {
	d = (h - g) * 1000
	printf "start-up: hijack -r rules.yaml tiny.o OUT.o %.2f ms CPU per process, Go hello-world %.2f ms: %+.2f ms (target <= +2 ms) %s\n",
		h * 1000, g * 1000, d, (d <= 2) ? "ok" : "over"
}'
echo
done

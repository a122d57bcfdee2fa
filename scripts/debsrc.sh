#!/usr/bin/env bash
# Fetch and unpack the Debian source packages of the libraries the e2e suite
# rewrites (zlib, lua5.4, sqlite3), at the versions of the installed -dev
# packages, into .cache/debsrc/<source-package>/. Idempotent and quiet when
# the sources are already there.
#
#   scripts/debsrc.sh                 zlib, lua5.4, sqlite3 (the e2e suite's)
#   scripts/debsrc.sh DEVPKG...       the sources of these installed binary
#                                     packages instead (scripts/realworld/)
#
# The system's apt configuration usually has no deb-src lines, so this uses a
# private apt setup under .cache/debsrc/apt: the deb lines of the system's
# Debian sources turned into deb-src, its own lists and its own cache. Nothing
# outside .cache/ is touched and root is not needed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=${HIJACK_CACHE:-$ROOT/.cache}
BASE=$CACHE/debsrc
APTDIR=$BASE/apt
DL=$BASE/dl

# binary package whose source we want -> tells us name and version
DEVPKGS=(zlib1g-dev liblua5.4-dev libsqlite3-dev)
if (($#)); then DEVPKGS=("$@"); fi

todo=()
for p in "${DEVPKGS[@]}"; do
	spec=$(dpkg-query -W -f='${source:Package}=${source:Version}' "$p" 2>/dev/null) || {
		echo "debsrc: $p is not installed (run scripts/deps.sh)" >&2
		exit 1
	}
	name=${spec%%=*}
	if [ "$(cat "$BASE/$name/.hijack-source" 2>/dev/null)" != "$spec" ]; then
		todo+=("$spec")
	fi
done
((${#todo[@]})) || exit 0

command -v apt-get >/dev/null && command -v dpkg-source >/dev/null || {
	echo "debsrc: needs apt-get and dpkg-source (dpkg-dev)" >&2
	exit 1
}

mkdir -p "$APTDIR/sources.list.d" "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" "$DL"
: >"$APTDIR/empty.list"

# Derive deb-src entries from the system's Debian deb entries.
src=$APTDIR/sources.list.d/debian-src.sources
: >"$src.new"
shopt -s nullglob
for f in /etc/apt/sources.list.d/*.sources; do
	# deb822 stanzas: keep those of Debian archives, Types: deb -> deb-src
	awk -v RS= -v ORS='\n\n' '
		/(^|\n)Enabled: *no/ { next }
		/(^|\n)Types:[^\n]*deb([ \n]|$)/ && /(^|\n)URIs:[^\n]*debian/ {
			gsub(/(^|\n)Types:[^\n]*/, "\nTypes: deb-src"); sub(/^\n/, ""); print
		}' "$f" >>"$src.new"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
	[ -r "$f" ] || continue
	# one-line format: deb [opts] URI suite components...
	awk '$1 == "deb" && /debian/ { $1 = "deb-src"; print }' "$f" >>"$APTDIR/sources.list.d/debian-src.list.new"
done
mv -f "$src.new" "$src"
if [ -f "$APTDIR/sources.list.d/debian-src.list.new" ]; then
	mv -f "$APTDIR/sources.list.d/debian-src.list.new" "$APTDIR/sources.list.d/debian-src.list"
fi
if ! grep -qs . "$src" "$APTDIR/sources.list.d/debian-src.list"; then
	echo "debsrc: found no Debian deb entries in /etc/apt to derive deb-src entries from" >&2
	exit 1
fi

APT=(apt-get -qq
	-o "Dir::Etc::SourceList=$APTDIR/empty.list"
	-o "Dir::Etc::SourceParts=$APTDIR/sources.list.d"
	-o "Dir::State::Lists=$APTDIR/lists"
	-o "Dir::Cache=$APTDIR/cache"
	-o "APT::Sandbox::User=$(id -un)"
)

echo "debsrc: fetching Debian sources: ${todo[*]}"
"${APT[@]}" update >"$APTDIR/update.log" 2>&1 || {
	echo "debsrc: apt-get update (deb-src) failed:" >&2
	tail -n 5 "$APTDIR/update.log" >&2
	exit 1
}
for spec in "${todo[@]}"; do
	name=${spec%%=*}
	ver=${spec#*=}
	# the installed version, else the newest source, else any other version
	# listed (a security update's source may be missing from the mirror: the
	# previous version of the same upstream release is then used)
	fetched=
	for want in "$spec" "$name" $("${APT[@]/apt-get/apt-cache}" showsrc "$name" 2>/dev/null |
		awk '/^Version:/ { print $2 }' | sort -rV | sed "s/^/$name=/"); do
		if (cd "$DL" && "${APT[@]}" source --download-only "$want" >"$DL/$name.log" 2>&1); then
			fetched=$want
			break
		fi
	done
	[ -n "$fetched" ] || {
		echo "debsrc: apt-get source $spec failed:" >&2
		tail -n 5 "$DL/$name.log" >&2
		exit 1
	}
	if [ "$fetched" != "$spec" ] && [ "$fetched" != "$name" ]; then
		echo "debsrc: $spec: source not available, using $fetched"
		ver=${fetched#*=}
	fi
	ver=${ver#*:} # the .dsc file name has no epoch
	dsc=$DL/${name}_$ver.dsc
	[ -f "$dsc" ] || dsc=$(ls -t "$DL/${name}"_*.dsc | head -n 1)
	rm -rf "$BASE/$name" "$BASE/$name.tmp"
	(cd "$DL" && dpkg-source -x "$dsc" "$BASE/$name.tmp" >"$DL/$name.extract.log" 2>&1) || {
		echo "debsrc: dpkg-source -x $dsc failed:" >&2
		tail -n 5 "$DL/$name.extract.log" >&2
		exit 1
	}
	# dpkg-source leaves copies of the upstream tarballs beside the target
	rm -f "$BASE/${name}"_*.orig*
	echo "$spec" >"$BASE/$name.tmp/.hijack-source"
	mv "$BASE/$name.tmp" "$BASE/$name"
done
echo "debsrc: sources in $BASE"

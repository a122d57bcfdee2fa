#!/usr/bin/env bash
# Install what the tests need, when it is missing. Idempotent; prints nothing
# when everything is already there.
#
#   scripts/deps.sh              apt packages + Debian sources of zlib/lua/sqlite
#   scripts/deps.sh --no-sources apt packages only
#   scripts/deps.sh --realworld  also what scripts/realworld/ builds with
#                                (--realworld=short: its short set's only);
#                                that suite fetches its Debian sources itself
#
# As root (CI) it runs apt-get directly; otherwise it uses sudo when available.
# `apt-get update` runs only when something has to be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(
	gcc g++ clang csmith libcsmith-dev valgrind gdb binutils make
	zlib1g-dev liblua5.4-dev libsqlite3-dev libssl-dev libc6-dev dpkg-dev
	autoconf automake libtool cmake meson ninja-build
)

# the real-world suite (scripts/realworld/): the short set (bzip2, zstd), all
RW_SHORT_PKGS=(libbz2-dev libzstd-dev python3 file)
RW_PKGS=(liblzma-dev libpcre2-dev libjq-dev libonig-dev libxml2-dev libfmt-dev libre2-dev
	libgtest-dev libgmock-dev unicode-data python3-six cmake autoconf automake libtool pkg-config)
for a in "$@"; do
	case $a in
	--realworld=short) PKGS+=("${RW_SHORT_PKGS[@]}") ;;
	--realworld) PKGS+=("${RW_SHORT_PKGS[@]}" "${RW_PKGS[@]}") ;;
	esac
done

missing=()
for p in "${PKGS[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing+=("$p")
done

if ((${#missing[@]})); then
	echo "deps: installing ${missing[*]}"
	if [ "$(id -u)" = 0 ]; then
		SUDO=()
	elif command -v sudo >/dev/null 2>&1; then
		if [ -n "${CI:-}" ] || [ ! -t 0 ]; then SUDO=(sudo -n); else SUDO=(sudo); fi
	else
		echo "deps: not root and no sudo: install these packages: ${missing[*]}" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	"${SUDO[@]}" apt-get update -qq
	"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	echo "deps: installed ${missing[*]}"
fi

if [ "${1:-}" != --no-sources ] && [ "${1:-}" != --realworld ] && [ "${1:-}" != --realworld=short ]; then
	if ! scripts/debsrc.sh; then
		echo "deps: warning: could not fetch Debian sources; the e2e tests that build" >&2
		echo "deps: the libraries' own test programs will skip (or fail with CI=true)" >&2
	fi
fi

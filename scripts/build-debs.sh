#!/usr/bin/env bash
# Build the library's Debian packages (libperwine0, libperwine-dev,
# perwine-tools) from the source tree with dpkg-buildpackage -us -uc -b,
# in a scratch copy so that the tree stays clean, and check them with
# lintian.  The packages are cached by the tree's contents; the
# directory that holds them is printed on stdout.
#
#   scripts/build-debs.sh
set -euo pipefail
. "$(dirname "$0")/common.sh"

need_packages dpkg-dev debhelper fakeroot lintian build-essential autoconf automake \
	libtool pkg-config

# The packages are built from the source files the guest image gets.
key=$(sources_key)
dest=$PERWINE_CACHE/debs/$key
if [ -f "$dest/.done" ]; then
	say "library packages (cached): $dest"
	echo "$dest"
	exit 0
fi

log=$PERWINE_OUT/logs/debs.log
work=$(mktemp -d "${TMPDIR:-/tmp}/perwine-debs.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/perwine" "$(dirname "$log")"
copy_sources "$work/perwine"
run_logged "$log" sh -c "cd '$work/perwine' && dpkg-buildpackage -us -uc -b"

# lintian reports on stderr and in the log; errors fail the build.
lintian_log=$PERWINE_OUT/logs/lintian.log
if ! lintian --allow-root -I -E --pedantic --fail-on error,warning \
	"$work"/perwine_*.changes > "$lintian_log" 2>&1; then
	cat "$lintian_log" >&2
	die "lintian found problems; log: $lintian_log"
fi
[ -s "$lintian_log" ] && { say "lintian (info/pedantic):"; cat "$lintian_log" >&2; }

rm -rf "$dest" && mkdir -p "$dest"
cp "$work"/libperwine0_*.deb "$work"/libperwine-dev_*.deb "$work"/perwine-tools_*.deb "$dest/"
touch "$dest/.done"
# Keep the three newest sets of packages.
ls -1dt "$PERWINE_CACHE"/debs/*/ | tail -n +4 | xargs -r rm -rf
say "library packages: $(cd "$dest" && echo *.deb) in $dest (lintian: clean)"
echo "$dest"

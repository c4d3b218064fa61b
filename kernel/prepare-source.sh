#!/usr/bin/env bash
# Step 1 of the kernel build: unpack Debian's linux-source-6.1 outside
# the repo and bring it to exactly kernel/patches/series applied.
#
# The tree lives in $PERWINE_CACHE/kernel/<version>/ and is reused: when
# the series changes, only the files the old series touched are put back
# from the tarball before the new series is applied, so make rebuilds
# just what the patches touch.  Prints the tree's path on stdout.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

need_packages linux-source-6.1 patch xz-utils
[ -f "$KERNEL_TARBALL" ] || die "no kernel tarball at $KERNEL_TARBALL"

series_dir=${PERWINE_SERIES_DIR:-$PERWINE_TOP/kernel/patches}
series=$series_dir/series
[ -f "$series" ] || die "no series file at $series"

version=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null || stat -c %Y "$KERNEL_TARBALL")
base=$PERWINE_CACHE/kernel/$version
tree=$base/linux-source-6.1
mkdir -p "$base"

if [ ! -f "$base/.unpacked" ]; then
	rm -rf "$tree"
	say "unpacking $KERNEL_TARBALL into $base"
	tar -C "$base" -xf "$KERNEL_TARBALL"
	touch "$base/.unpacked"
fi

mapfile -t patches < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$series")
want=$(cd "$series_dir" && cat series "${patches[@]}" | sha256sum | cut -c1-16)
have=$(cat "$base/.applied-hash" 2>/dev/null || true)

if [ "$want" != "$have" ]; then
	# Put back every file the previously applied series touched.
	if [ -s "$base/.applied-files" ]; then
		say "reverting the previous series"
		mapfile -t old < "$base/.applied-files"
		rm -f "${old[@]/#/$tree/}"
		# Files the series created are not in the tarball: tar says so.
		tar -C "$base" -xf "$KERNEL_TARBALL" "${old[@]/#/linux-source-6.1/}" 2>/dev/null || true
		# Fresh mtimes, so make sees the reverted files as changed.
		(cd "$tree" && touch -c "${old[@]}")
	fi
	: > "$base/.applied-files"
	rm -f "$base/.applied-hash"
	for p in "${patches[@]}"; do
		say "applying $p"
		grep -E '^\+\+\+ b/' "$series_dir/$p" | sed -e 's|^+++ b/||' -e 's/[[:space:]].*$//' \
			>> "$base/.applied-files"
		patch -d "$tree" -p1 -s -N --no-backup-if-mismatch < "$series_dir/$p" ||
			die "$p does not apply to $tree"
	done
	sort -u -o "$base/.applied-files" "$base/.applied-files"
	echo "$want" > "$base/.applied-hash"
fi
echo "$tree"

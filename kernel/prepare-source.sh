#!/usr/bin/env bash
# Step 1 of the kernel build: unpack Debian's linux-source-$PERWINE_KERNEL
# outside the repo and bring it to exactly kernel/patches/$PERWINE_KERNEL/
# series applied.
#
# The tree lives in $PERWINE_CACHE/kernel/<version>/ and is reused.  When
# the series changes, the new series is applied to pristine copies of
# the files either series touches, in a scratch dir, and only the files
# whose result differs are written into the tree: the others keep their
# mtime, so a one-line change to a patch rebuilds only what includes the
# file it changes.  Prints the tree's path on stdout.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

need_packages "linux-source-$PERWINE_KERNEL" patch xz-utils
[ -f "$KERNEL_TARBALL" ] || die "no kernel tarball at $KERNEL_TARBALL"

series_dir=${PERWINE_SERIES_DIR:-$PERWINE_PATCHES}
series=$series_dir/series
[ -f "$series" ] || die "no series file at $series"

version=$(dpkg-query -W -f='${Version}' "linux-source-$PERWINE_KERNEL" 2>/dev/null || stat -c %Y "$KERNEL_TARBALL")
base=$PERWINE_CACHE/kernel/$version
tree=$base/linux-source-$PERWINE_KERNEL
pristine=$base/pristine/linux-source-$PERWINE_KERNEL
mkdir -p "$base"

# Two copies of the tarball: the tree we build, and the pristine files
# each series is applied to.
if [ ! -f "$base/.unpacked" ]; then
	rm -rf "$tree" "$base/.applied-files" "$base/.applied-hash"
	say "unpacking $KERNEL_TARBALL into $base (once)"
	tar -C "$base" -xf "$KERNEL_TARBALL"
	touch "$base/.unpacked"
fi
if [ ! -d "$pristine" ]; then
	say "unpacking a pristine copy into $base/pristine (once)"
	rm -rf "$base/pristine" "$base/pristine.tmp"
	mkdir -p "$base/pristine.tmp"
	tar -C "$base/pristine.tmp" -xf "$KERNEL_TARBALL"
	mv "$base/pristine.tmp" "$base/pristine"
fi

mapfile -t patches < <(series_patches "$series")
want=$(cd "$series_dir" && cat series "${patches[@]}" | sha256sum | cut -c1-16)
have=$(cat "$base/.applied-hash" 2>/dev/null || true)
[ "$want" = "$have" ] && { echo "$tree"; exit 0; }

# The files the new series touches, and those the old one did.
scratch=$(mktemp -d "$base/apply.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
for p in "${patches[@]}"; do
	[ -f "$series_dir/$p" ] || die "series names $p, which is not in $series_dir"
	grep -E '^\+\+\+ b/' "$series_dir/$p" | sed -e 's|^+++ b/||' -e 's/[[:space:]].*$//'
done | sort -u > "$scratch/new-files"
sort -u "$base/.applied-files" 2>/dev/null > "$scratch/old-files" || : > "$scratch/old-files"
sort -u "$scratch/new-files" "$scratch/old-files" > "$scratch/all-files"

# Apply the new series to pristine copies of every file involved.
mkdir -p "$scratch/tree"
while IFS= read -r f; do
	if [ -e "$pristine/$f" ]; then
		mkdir -p "$scratch/tree/$(dirname "$f")"
		cp -p "$pristine/$f" "$scratch/tree/$f"
	fi
done < "$scratch/all-files"
for p in "${patches[@]}"; do
	say "applying $p"
	patch -d "$scratch/tree" -p1 -s -N --no-backup-if-mismatch < "$series_dir/$p" ||
		die "$p does not apply to linux-source-$version"
done

# Write into the tree only what differs; drop files no series makes.
changed=0
while IFS= read -r f; do
	if [ -e "$scratch/tree/$f" ]; then
		if ! cmp -s "$scratch/tree/$f" "$tree/$f"; then
			mkdir -p "$tree/$(dirname "$f")"
			cp "$scratch/tree/$f" "$tree/$f"
			touch "$tree/$f"
			changed=$((changed + 1))
		fi
	elif [ -e "$tree/$f" ]; then
		rm -f "$tree/$f"
		changed=$((changed + 1))
	fi
done < "$scratch/all-files"
say "series applied: $changed files changed in $tree"
cp "$scratch/new-files" "$base/.applied-files"
echo "$want" > "$base/.applied-hash"
echo "$tree"

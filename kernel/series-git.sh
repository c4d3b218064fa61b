#!/usr/bin/env bash
# The series as git commits, to edit it: a new git repository in DIR
# holding, as its first commit, Debian's unpatched copies of every file
# the series touches, then one commit per patch (git am).  Edit, commit
# (or git commit --fixup and rebase), then kernel/format-series.sh DIR
# writes the patches back.  The first commit's author, date and message
# are fixed, so that the same base gives the same base-commit: line.
#
#   kernel/series-git.sh DIR      (DIR must not exist)
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

[ $# -eq 1 ] || die "usage: $0 DIR"
repo=$1
[ ! -e "$repo" ] || die "$repo exists: give a new directory"

# The unpatched tree: prepare-source.sh keeps a pristine copy beside the
# one it builds.
tree=$("$PERWINE_TOP/kernel/prepare-source.sh")
pristine=${tree%/*}/pristine/${tree##*/}
version=$(dpkg-query -W -f='${Version}' "linux-source-$PERWINE_KERNEL")
mapfile -t patches < <(series_patches "$PERWINE_PATCHES/series")

mkdir -p "$repo"
git -C "$repo" init -q
# The identity the patches carry, also the cover letter's From:.
git -C "$repo" config user.name "Perwine Developers"
git -C "$repo" config user.email devel@perwine.invalid
(cd "$PERWINE_PATCHES" && sed -n 's|^+++ b/||p' "${patches[@]}" | sort -u) |
	while IFS= read -r f; do
		[ -e "$pristine/$f" ] || continue # created by the series
		mkdir -p "$repo/$(dirname "$f")"
		cp "$pristine/$f" "$repo/$f"
	done
git -C "$repo" add -A
GIT_AUTHOR_DATE='2000-01-01T00:00:00Z' GIT_COMMITTER_DATE='2000-01-01T00:00:00Z' \
	git -C "$repo" commit -q -m "linux-source-$PERWINE_KERNEL $version: the files the series touches"
for p in "${patches[@]}"; do
	git -C "$repo" am -q --keep-cr "$PERWINE_PATCHES/$p" || die "git am $p failed in $repo"
done
say "$repo: the base and ${#patches[@]} commits; kernel/format-series.sh $repo writes them back"

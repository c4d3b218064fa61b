#!/usr/bin/env bash
# Regenerate kernel/patches/ (git format-patch output + quilt series)
# from a git repository holding the series as commits on top of BASE.
#
#   kernel/format-series.sh GIT_DIR [BASE]
# BASE defaults to the repository's first commit (the unpatched files).
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

[ $# -ge 1 ] || die "usage: $0 GIT_DIR [BASE]"
repo=$1
base=${2:-$(git -C "$repo" rev-list --max-parents=0 HEAD)}
dest=$PERWINE_TOP/kernel/patches

rm -f "$dest"/*.patch
git -C "$repo" format-patch -q --no-signature --zero-commit -N -o "$dest" "$base..HEAD"
{
	echo "# perwine kernel series, in order (quilt format)"
	(cd "$dest" && ls -1 ./*.patch | sed 's|^\./||')
} > "$dest/series"
say "$(grep -c '\.patch$' "$dest/series") patches in $dest"

#!/usr/bin/env bash
# Regenerate kernel/patches/$PERWINE_KERNEL/ (git format-patch output + quilt series)
# from a git repository holding the series as commits on top of BASE.
#
#   kernel/format-series.sh GIT_DIR [BASE]
# BASE defaults to the repository's first commit (the unpatched files);
# the cover letter names it as base-commit.  The 6.1 series' perwine.rst
# is also written to docs/perwine.rst.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

[ $# -ge 1 ] || die "usage: $0 GIT_DIR [BASE]"
repo=$1
base=${2:-$(git -C "$repo" rev-list --max-parents=0 HEAD)}
dest=$PERWINE_PATCHES

rm -f "$dest"/*.patch
git -C "$repo" format-patch -q --no-signature --zero-commit -N --cover-letter --base="$base" \
	-o "$dest" "$base..HEAD"

# The cover letter's subject and text come from
# kernel/cover-letter-$PERWINE_KERNEL.txt:
# its first line is the Subject:, the rest replaces the blurb.
cover=$dest/0000-cover-letter.patch
letter=$PERWINE_TOP/kernel/cover-letter-$PERWINE_KERNEL.txt
[ -f "$letter" ] || die "no $letter"
python3 - "$cover" "$letter" <<'PY'
import sys
cover, letter = sys.argv[1], sys.argv[2]
text = open(cover).read()
subject, _, body = open(letter).read().partition('\n')
text = '\n'.join(subject if l.startswith('Subject: ') and 'SUBJECT HERE' in l else l
                 for l in text.split('\n'))
text = text.replace('*** BLURB HERE ***', body.strip('\n'))
open(cover, 'w').write(text)
PY
grep -q 'HERE \*\*\*' "$cover" && die "the cover letter still has a placeholder"
{
	echo "# perwine kernel series for linux-source-$PERWINE_KERNEL, in order (quilt format); 0000 is the cover letter"
	(cd "$dest" && ls -1 ./*.patch | sed 's|^\./||' | grep -v '^0000-')
} > "$dest/series"
say "$(grep -c '\.patch$' "$dest/series") patches in $dest"
if [ "$PERWINE_KERNEL" = 6.1 ]; then
	series_rst "$dest" >"$PERWINE_TOP/docs/perwine.rst"
	[ -s "$PERWINE_TOP/docs/perwine.rst" ] || die "the series adds no Documentation/userspace-api/perwine.rst"
	say "docs/perwine.rst from the series"
fi

#!/usr/bin/env bash
# Check the series the way a maintainer would: scripts/checkpatch.pl
# --strict on every patch, then build the kernel with the first 1, 2,
# ... N patches applied, so each patch builds on its own.  Uses its own
# object dir (flavor "series-check"); leaves the tree with the whole
# series applied.  --objects compiles, at each step, only the objects
# the series touches (with -Werror, in a tree of its own, the patched
# tree is not touched): minutes per step instead of a kernel build.
#
#   kernel/check-series.sh [--no-build | --objects]
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

patches_dir=$PERWINE_PATCHES
mapfile -t patches < <(series_patches "$patches_dir/series")
tree=$("$PERWINE_TOP/kernel/prepare-source.sh")

bad=0
for p in "${patches[@]}"; do
	# checkpatch must run from the kernel tree to know its layout.  Two
	# of its checks cannot be right here: the tree is Debian's tarball,
	# with no git history to find the commit of a Fixes: tag in (0001's
	# 1446e1df9eb1, "kernel: Implement selective syscall userspace
	# redirection", and 0002's bb6ea4301a11, "seccomp: Add
	# SECCOMP_RET_TRAP", checked by hand), and CamelCase flags the kernel's
	# own Efault labels on every line that stores through them.
	if out=$(cd "$tree" && ./scripts/checkpatch.pl --strict -q \
		--ignore UNKNOWN_COMMIT_ID,CAMELCASE "$patches_dir/$p" 2>&1); then
		say "checkpatch clean: $p"
	else
		printf '%s\n' "$out" >&2
		bad=1
	fi
done
[ "$bad" -eq 0 ] || die "checkpatch --strict found problems"
[ "${1:-}" = --no-build ] && exit 0
if [ "${1:-}" = --objects ]; then
	PERWINE_KERNEL_OBJECTS=$(series_objects | tr '\n' ' ')
	export PERWINE_KERNEL_OBJECTS PERWINE_CACHE=$PERWINE_CACHE/series-check
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq 1 "${#patches[@]}"); do
	rm -f "$work"/*
	printf '%s\n' "${patches[@]:0:i}" > "$work/series"
	for p in "${patches[@]:0:i}"; do cp "$patches_dir/$p" "$work/"; done
	say "building with patches 1..$i (${patches[i-1]})"
	PERWINE_SERIES_DIR=$work PERWINE_KERNEL_FLAVOR=series-check \
		"$PERWINE_TOP/kernel/build-kernel.sh" >/dev/null ||
		die "the series does not build at ${patches[i-1]}"
done
if [ -n "${PERWINE_KERNEL_OBJECTS:-}" ]; then
	# The whole series once more with the option off: its stubs compile
	# (perwine.o itself is built only with the option).
	echo '# CONFIG_PER_WINE_DISPATCH is not set' > "$work/off.config"
	say "building with all patches and PER_WINE_DISPATCH off"
	PERWINE_KERNEL_OBJECTS=$(series_objects | grep -vx kernel/entry/perwine.o | tr '\n' ' ') \
		PERWINE_SERIES_DIR=$work PERWINE_KERNEL_FLAVOR=series-check-off \
		"$PERWINE_TOP/kernel/build-kernel.sh" "$work/off.config" >/dev/null ||
		die "the series does not build with PER_WINE_DISPATCH off"
else
	"$PERWINE_TOP/kernel/prepare-source.sh" >/dev/null
fi
say "all ${#patches[@]} patches are checkpatch clean and build on their own"

#!/usr/bin/env bash
# Build the Debian bookworm guest root filesystem with debootstrap
# (minbase + guest-image/packages.list + $PERWINE_EXTRA_PACKAGES) and
# keep it as a tarball in $PERWINE_CACHE/rootfs, keyed by the package
# lists and this script.
# Prints the tarball's path.  A failed debootstrap never leaves a
# tarball behind, so a half-built rootfs is never used.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

need_packages debootstrap
suite=${PERWINE_SUITE:-bookworm}

# The guest comes from the same Debian mirror the host's apt uses.
host_mirror() {
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk '/^URIs:/ { print $2 }
		     $1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:/) { print $i; break } }' |
		awk '/\/debian\/?$/ && !found { print; found = 1 }' || true
}
mirror=${PERWINE_MIRROR:-$(host_mirror)}
[ -n "$mirror" ] || die "no Debian mirror found in the host's apt sources; set PERWINE_MIRROR"

list=$PERWINE_TOP/guest-image/packages.list
read -r -a extra <<< "${PERWINE_EXTRA_PACKAGES:-}"
key=$( { hash_files "$list" "$0"; printf '%s\n' "${extra[@]}" | sort -u; } | sha256sum | cut -c1-16)
tarball=$PERWINE_CACHE/rootfs/$suite-$key.tar
if [ -f "$tarball" ]; then
	echo "$tarball"
	exit 0
fi

# A package that does not exist would fail debootstrap deep in its log:
# ask the host's apt first (the host runs the same Debian release).
if [ ${#extra[@]} -gt 0 ]; then
	[ -n "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -v -e lock -e partial)" ] ||
		apt-get update >/dev/null 2>&1 || true
	for p in "${extra[@]}"; do
		[[ $p =~ ^[a-z0-9][a-z0-9+.-]+$ ]] || die "PERWINE_EXTRA_PACKAGES: '$p' is not a Debian package name"
		apt-cache show --no-all-versions "$p" >/dev/null 2>&1 ||
			die "PERWINE_EXTRA_PACKAGES: no package '$p' in Debian's archive (apt-cache show $p)"
	done
	say "extra guest packages: ${extra[*]}"
fi

mkdir -p "$PERWINE_CACHE/rootfs" "$PERWINE_OUT/logs"
work=$(mktemp -d "$PERWINE_CACHE/rootfs/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
include=$( { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list"; printf '%s\n' "${extra[@]}"; } |
	sed '/^$/d' | paste -sd, -)
run_logged "$PERWINE_OUT/logs/debootstrap.log" \
	debootstrap --variant=minbase --include="$include" "$suite" "$work/root" "$mirror"
rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"*
tar -C "$work/root" --numeric-owner -cf "$tarball.tmp" .
mv "$tarball.tmp" "$tarball"
say "rootfs: $tarball"
echo "$tarball"

#!/usr/bin/env bash
# Package the patched guest kernel the way a distribution would: the
# kernel's own bindeb-pkg, run in the object dir that kernel/build-kernel.sh
# built (so only packaging is left to do).  The .debs land in
# $PERWINE_OUT/debs.
#
#   kernel/build-kernel-deb.sh      (after kernel/build-kernel.sh)
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

need_packages "${KERNEL_BUILD_PACKAGES[@]}" dpkg-dev fakeroot

tree=$("$PERWINE_TOP/kernel/prepare-source.sh")
flavor=${PERWINE_KERNEL_FLAVOR:-guest}
objdir=$(dirname "$tree")/obj-$flavor
[ -f "$objdir/.config" ] || die "no configured kernel in $objdir: run make kernel first"

# bindeb-pkg writes its packages next to the object dir: start clean there.
pkgdir=$(dirname "$objdir")
rm -f "$pkgdir"/linux-*.deb "$pkgdir"/linux-*.buildinfo "$pkgdir"/linux-*.changes
run_logged "$PERWINE_OUT/logs/kernel-deb-$flavor.log" \
	make -C "$tree" O="$objdir" -j"$(nproc)" bindeb-pkg KDEB_COMPRESS=xz
debs=("$pkgdir"/linux-*.deb)
[ -e "${debs[0]}" ] || die "bindeb-pkg made no package; log: $PERWINE_OUT/logs/kernel-deb-$flavor.log"
rm -rf "$PERWINE_OUT/debs/kernel" && mkdir -p "$PERWINE_OUT/debs/kernel"
cp "${debs[@]}" "$PERWINE_OUT/debs/kernel/"
for d in "$PERWINE_OUT"/debs/kernel/*.deb; do
	say "$(dpkg-deb -f "$d" Package Version | paste -sd' ') : $d"
done

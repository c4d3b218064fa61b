#!/usr/bin/env bash
# Turn the cached rootfs tarball into the guest's ext4 disk image with
# the project's source tree, the kernel's kselftests and the guest init
# inside (mke2fs -d: no loop mount).
#
#   guest-image/make-image.sh ROOTFS_TARBALL KSELFTEST_DIR IMAGE [DEBS_DIR]
# DEBS_DIR: the library's Debian packages (scripts/build-debs.sh), put in
# /root/debs for the guest to install after make check.
# PERWINE_PREBUILT=IMAGE: a guest image whose run of the whole suite
# kept its built tree (guest-init.sh): when it was built from the same
# sources and root filesystem, this image gets that tree, and its guest
# runs make check without configuring and compiling again.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

[ $# -eq 3 ] || [ $# -eq 4 ] || die "usage: $0 ROOTFS_TARBALL KSELFTEST_DIR IMAGE [DEBS_DIR]"
rootfs=$1 kselftests=$2 image=$3 debs=${4:-}
[ -f "$rootfs" ] || die "no rootfs tarball $rootfs (run guest-image/build-rootfs.sh)"
[ -f "$kselftests/kernelrelease" ] || die "no kernel build output in $kselftests (run kernel/build-kernel.sh)"
need_packages e2fsprogs autoconf automake libtool pkg-config

# A stage of its own per image: make image and make image-debug may run
# at the same time (make wine-check beside make vm-fuzz).
stage=$image.stage
rm -rf "$stage" "$image"
mkdir -p "$stage"
tar -C "$stage" --numeric-owner -xf "$rootfs"

# The source tree, local edits included (scripts/common.sh: source_files).
mkdir -p "$stage/root/perwine"
copy_sources "$stage/root/perwine"

# The configure script is made here, in the host's seconds, not in the
# guest's emulated minutes (the same Debian release's autotools).
if [ ! -x "$stage/root/perwine/configure" ]; then
	log=$PERWINE_OUT/logs/autoreconf-$(basename "$image" .img).log
	(cd "$stage/root/perwine" && autoreconf -fi) > "$log" 2>&1 ||
		die "autoreconf failed; log: $log"
fi

# What a built tree depends on besides the kernel it runs on.
key=$(sources_key)-$(basename "$rootfs" .tar)
echo "$key" > "$stage/root/perwine.key"
prebuilt=${PERWINE_PREBUILT:-}
if [ -n "$prebuilt" ] && [ -f "$prebuilt" ] &&
	[ "$(debugfs -R "cat /root/perwine.key" "$prebuilt" 2>/dev/null)" = "$key" ] &&
	debugfs -R "dump /root/prebuilt.tar $stage/prebuilt.tar" "$prebuilt" >/dev/null 2>&1 &&
	tar -tf "$stage/prebuilt.tar" build/config.status >/dev/null 2>&1; then
	rm -rf "$stage/root/perwine"
	tar -C "$stage/root" -xf "$stage/prebuilt.tar"
	echo "$key ($(basename "$prebuilt"))" > "$stage/root/build/.perwine-prebuilt"
	say "the suite as built in $prebuilt (sources and root filesystem $key)"
fi
rm -f "$stage/prebuilt.tar"

if [ -n "$debs" ]; then
	mkdir -p "$stage/root/debs"
	cp "$debs"/*.deb "$stage/root/debs/" || die "no packages in $debs"
fi

mkdir -p "$stage/usr/share/perwine"
cp -a "$kselftests" "$stage/usr/share/perwine/kselftests"
install -m 0755 "$PERWINE_TOP/guest-image/guest-init.sh" "$stage/sbin/perwine-init"
echo perwine-guest > "$stage/etc/hostname"
printf '/dev/vda / ext4 rw 0 1\n' > "$stage/etc/fstab"

# Room for the build and the results beside the ~550 MB rootfs.
mke2fs -q -t ext4 -L perwine -d "$stage" "$image" 4G
rm -rf "$stage"
say "image: $image"

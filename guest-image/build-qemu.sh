#!/usr/bin/env bash
# Build the qemu-system-x86_64 that make wine-check boots (unless
# PERWINE_WINE_FIXED_QEMU=0): Debian 12's own QEMU 7.2 source (the version of the qemu-system-x86 package) with
# the patches of guest-image/qemu/, x86_64 system emulation only, and
# only what the guest runner uses (virtio disk, 9p share, fw_cfg,
# serial).  Firmware comes from the installed qemu-system-data and
# seabios packages, as Debian's own build does.  Prints the binary.
#
#   guest-image/build-qemu.sh            build (or reuse) and print the binary
#
# Why: under TCG, QEMU 7.2 gives the #GP of a user-mode int $0x2d the
# error code 0x2d2 instead of 0x16a (fixed upstream in 8.0), so Wine
# takes the debug service for an access violation and its exception
# test stops before test_direct_syscalls.  The guest suite and the
# benchmarks keep the packaged QEMU.
#
# The build lives in $PERWINE_CACHE/qemu/<key>, the key a hash of the
# source version, the patches and the configure options.  Resumable: an
# interrupted build continues where it stopped (ninja).
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

QEMU_VERSION=7.2+dfsg-7+deb12u18
QEMU_POOL=http://deb.debian.org/debian/pool/main/q/qemu
# The .dsc's own checksums vouch for the tarballs (dpkg-source checks
# them); this one vouches for the .dsc.
QEMU_DSC_SHA256=6b6bd27b947ec89e40a1d6b26d9c9f3c698ca691da13163e0483f6061bbb20b3
QEMU_PATCHES=$PERWINE_TOP/guest-image/qemu
QEMU_CONFIGURE=(--target-list=x86_64-softmmu --without-default-features
	--enable-tcg --enable-kvm --enable-virtfs --enable-attr --enable-cap-ng --enable-fdt=system
	--disable-docs --disable-tools --disable-werror
	--firmwarepath=/usr/share/qemu:/usr/share/seabios)
QEMU_HOST_PACKAGES=(dpkg-dev curl ninja-build meson python3-venv libglib2.0-dev
	libpixman-1-dev libcap-ng-dev libattr1-dev libfdt-dev zlib1g-dev qemu-system-data seabios)

key() {
	{
		echo "$QEMU_VERSION"
		printf '%s\n' "${QEMU_CONFIGURE[@]}"
		cat "$QEMU_PATCHES"/*.patch
	} | sha256sum | cut -c1-16
}
dir=$PERWINE_CACHE/qemu/$(key)
bin=$dir/build/qemu-system-x86_64
stamp=$dir/.complete

[ $# -eq 0 ] || die "usage: $0"
if [ -f "$stamp" ]; then
	echo "$bin"
	exit 0
fi
need_packages "${QEMU_HOST_PACKAGES[@]}"
mkdir -p "$dir"
log=$dir/build.log

# The source: fetched and unpacked once; the patches go into a fresh
# copy so that an interrupted step never leaves half a patch.
if [ ! -f "$dir/src/.patched" ]; then
	say "fetching Debian's QEMU $QEMU_VERSION source (log: $log)"
	dl=$PERWINE_CACHE/qemu/dl
	mkdir -p "$dl"
	for f in qemu_$QEMU_VERSION.dsc qemu_${QEMU_VERSION%%-*}.orig.tar.xz qemu_$QEMU_VERSION.debian.tar.xz; do
		[ -s "$dl/$f" ] && continue
		curl -fsS -m 600 -o "$dl/$f.part" "$QEMU_POOL/$f" ||
			die "could not download $QEMU_POOL/$f"
		mv "$dl/$f.part" "$dl/$f"
	done
	echo "$QEMU_DSC_SHA256  $dl/qemu_$QEMU_VERSION.dsc" | sha256sum -c --quiet - ||
		die "the .dsc of QEMU $QEMU_VERSION does not match its pinned checksum"
	rm -rf "$dir/src"
	(cd "$dl" && dpkg-source -x "qemu_$QEMU_VERSION.dsc" "$dir/src") >"$log" 2>&1 ||
		{ tail -n 20 "$log" >&2; die "unpacking QEMU failed; log: $log"; }
	for p in "$QEMU_PATCHES"/*.patch; do
		patch -d "$dir/src" -p1 --quiet <"$p" >>"$log" 2>&1 ||
			{ tail -n 20 "$log" >&2; die "$(basename "$p") does not apply; log: $log"; }
	done
	touch "$dir/src/.patched"
fi

if [ ! -f "$dir/build/build.ninja" ]; then
	say "configuring QEMU (log: $log)"
	rm -rf "$dir/build"
	mkdir -p "$dir/build"
	(cd "$dir/build" && ../src/configure --meson=meson "${QEMU_CONFIGURE[@]}") >>"$log" 2>&1 ||
		{ tail -n 20 "$log" >&2; die "configuring QEMU failed; log: $log"; }
fi

say "building qemu-system-x86_64 (8 min cold here)"
run_logged "$dir/ninja.log" ninja -C "$dir/build" -j"$(nproc)" qemu-system-x86_64
# A binary run from its build tree looks for its data (the firmware
# path included) under build/qemu-bundle/ instead of /: point that at
# the packaged firmware.
mkdir -p "$dir/build/qemu-bundle/usr/share"
for d in qemu seabios; do
	ln -sfn "/usr/share/$d" "$dir/build/qemu-bundle/usr/share/$d"
done
"$bin" --version >>"$log" 2>&1 || die "$bin does not run; log: $log"
touch "$stamp"
echo "$bin"

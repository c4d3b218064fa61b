#!/usr/bin/env bash
# Step 2 of the kernel build: configure the prepared tree (tinyconfig +
# kvm_guest.config + kernel/perwine.config [+ extra fragments]) and build
# bzImage into $PERWINE_OUT/bzImage-FLAVOR, with the kernel's release,
# uapi headers and kselftests in $PERWINE_OUT/kselftests-FLAVOR.
#
#   kernel/build-kernel.sh [FRAGMENT...]
# PERWINE_KERNEL_FLAVOR=name builds in a separate object dir (e.g. debug).
# PERWINE_KERNEL_FLAVOR=stock builds the same config without the series,
# in a tree of its own (the x86 selftests' reference, make vm-x86-selftests).
# PERWINE_KERNEL_FLAVOR=production adds the options of Debian's own config
# that shape the syscall path (kernel/production.options): the
# production-like column of make vm-bench-production.
# PERWINE_KERNEL_OBJECTS="a.o b.o" compiles only those objects (the ones
# present in the tree, with -Werror) instead of bzImage: check-series.sh.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

need_packages "${KERNEL_BUILD_PACKAGES[@]}"

flavor=${PERWINE_KERNEL_FLAVOR:-guest}
config=$PERWINE_TOP/kernel/perwine.config
if [ "$flavor" = stock ]; then
	# An empty series in a cache of its own: the patched tree is not touched.
	export PERWINE_CACHE=$PERWINE_CACHE/stock
	export PERWINE_SERIES_DIR=$PERWINE_CACHE/empty-series
	mkdir -p "$PERWINE_SERIES_DIR"
	: > "$PERWINE_SERIES_DIR/series"
fi
tree=$("$PERWINE_TOP/kernel/prepare-source.sh")
objdir=$(dirname "$tree")/obj-$flavor
mkdir -p "$objdir" "$PERWINE_OUT/logs"
log=$PERWINE_OUT/logs/kernel-$flavor.log
if [ "$flavor" = stock ]; then
	config=$objdir/stock.config
	{ grep -v -e PER_WINE -e LOCALVERSION= "$PERWINE_TOP/kernel/perwine.config"
	  echo 'CONFIG_LOCALVERSION="-stock"'; } > "$config.new"
	cmp -s "$config.new" "$config" && rm "$config.new" || mv "$config.new" "$config"
fi

if [ "$flavor" = production ]; then
	need_packages "linux-config-$PERWINE_KERNEL" xz-utils
	debian=/usr/src/linux-config-$PERWINE_KERNEL/config.amd64_none_amd64.xz
	[ -f "$debian" ] || die "linux-config-$PERWINE_KERNEL has no $debian"
	names=$(grep -v -e '^#' -e '^$' "$PERWINE_TOP/kernel/production.options" | paste -sd '|' -)
	{ echo "# From $(basename "$debian") of linux-config-$PERWINE_KERNEL, for kernel/production.options"
	  xzcat "$debian" | grep -E "^(# )?CONFIG_($names)[= ]"; } > "$objdir/production.config.new"
	cmp -s "$objdir/production.config.new" "$objdir/production.config" &&
		rm "$objdir/production.config.new" ||
		mv "$objdir/production.config.new" "$objdir/production.config"
	set -- "$@" "$objdir/production.config"
fi

fragments=("$tree/kernel/configs/kvm_guest.config" "$config")
# What one kernel needs on top (6.12's tinyconfig turns SLUB_TINY on,
# which 6.1 does not have and KASAN excludes).
[ ! -f "$PERWINE_TOP/kernel/perwine.$PERWINE_KERNEL.config" ] ||
	fragments+=("$PERWINE_TOP/kernel/perwine.$PERWINE_KERNEL.config")
for f in "$@"; do fragments+=("$(realpath "$f")"); done

# Reconfigure only when a fragment changed, so a rebuild with nothing
# new stays a no-op for make.
# check-series.sh also reconfigures at every step: a patch may add the
# Kconfig entry the fragments ask for.
cfg_hash=$( (cat "${fragments[@]}"
	[ -z "${PERWINE_KERNEL_OBJECTS:-}" ] || cat "$(dirname "$tree")/.applied-hash") | sha256sum | cut -c1-16)
if [ "$(cat "$objdir/.perwine-config-hash" 2>/dev/null)" != "$cfg_hash" ] || [ ! -f "$objdir/.config" ]; then
	say "configuring $flavor kernel in $objdir"
	make -C "$tree" O="$objdir" tinyconfig >"$log" 2>&1 ||
		die "tinyconfig failed; log: $log"
	(cd "$objdir" && "$tree/scripts/kconfig/merge_config.sh" -m .config "${fragments[@]}") >>"$log" 2>&1 ||
		die "merging config fragments failed; log: $log"
	make -C "$tree" O="$objdir" olddefconfig >>"$log" 2>&1 || die "olddefconfig failed; log: $log"
	echo "$cfg_hash" > "$objdir/.perwine-config-hash"
fi

# Every option our own fragments ask for must have survived olddefconfig;
# a silently dropped one (missing dependency) would test the wrong kernel.
# (kvm_guest.config names options of other arches and drivers we skip.)
missing=$(cat "${fragments[@]:1}" | grep -E '^CONFIG_[A-Z0-9_]+=' | while IFS= read -r line; do
	grep -qxF "$line" "$objdir/.config" || echo "$line"
done)
if [ -n "${PERWINE_KERNEL_OBJECTS:-}" ]; then
	# A prefix of the series may not have the Kconfig entry yet.
	[ -z "$missing" ] || say "config options not set at this point of the series: $(echo $missing)"
	objects=()
	for o in $PERWINE_KERNEL_OBJECTS; do
		[ -f "$tree/${o%.o}.c" ] && objects+=("$o")
	done
	run_logged "$log.objects" make -C "$tree" O="$objdir" -j"$(nproc)" KCFLAGS=-Werror "${objects[@]}"
	# No link here: at least every perwine or dispatch helper one of
	# them calls must be defined by one of them.
	undefined=$(cd "$objdir" && nm -u "${objects[@]}" | awk '$1 == "U" { print $2 }' |
		grep -E '^(perwine_|syscall_dispatch_)' | sort -u || true)
	defined=$(cd "$objdir" && nm --defined-only "${objects[@]}" | awk 'NF == 3 { print $3 }' | sort -u)
	unresolved=$(comm -23 <(echo "$undefined") <(echo "$defined") | sed '/^$/d')
	[ -z "$unresolved" ] || die "called but defined nowhere: $(echo $unresolved)"
	say "compiled ${#objects[@]} objects, $(echo "$undefined" | grep -c .) perwine symbols resolved"
	exit 0
fi
[ -z "$missing" ] || die "config options not set (dependencies missing?): $(echo $missing)"

run_logged "$log.build" make -C "$tree" O="$objdir" -j"$(nproc)" bzImage
cp "$objdir/arch/x86/boot/bzImage" "$PERWINE_OUT/bzImage-$flavor"
say "kernel: $PERWINE_OUT/bzImage-$flavor"

# What the guest needs from this kernel besides bzImage: its release
# and build stamp (the suite checks it runs on this very build), its
# uapi headers and the kselftests the suite builds in the guest.
ksdir=$PERWINE_OUT/kselftests-$flavor
say "uapi headers and kselftests into $ksdir"
rm -rf "$ksdir"
mkdir -p "$ksdir"
make -s -C "$tree" O="$objdir" kernelrelease > "$ksdir/kernelrelease"
sed -n 's/^#define UTS_VERSION "\(.*\)"$/\1/p' "$objdir"/include/generated/{compile,utsversion}.h \
	2>/dev/null > "$ksdir/kernelversion" || true
[ -s "$ksdir/kernelversion" ] || die "no UTS_VERSION in $objdir/include/generated"
make -s -j"$(nproc)" -C "$tree" O="$objdir" headers_install INSTALL_HDR_PATH="$ksdir/usr" >>"$log" 2>&1 ||
	die "headers_install failed; log: $log"
for d in kselftest_harness.h kselftest.h lib.mk syscall_user_dispatch seccomp perwine x86; do
	if [ -e "$tree/tools/testing/selftests/$d" ]; then
		cp -a "$tree/tools/testing/selftests/$d" "$ksdir/"
	fi
done
# The x86 selftests include one kernel header by its path in the tree.
mkdir -p "$ksdir/arch/x86/include/asm"
cp "$tree/arch/x86/include/asm/desc_defs.h" "$ksdir/arch/x86/include/asm/"
say "kselftests and headers: $ksdir"

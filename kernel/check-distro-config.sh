#!/usr/bin/env bash
# Compile the series against Debian's own amd64 kernel configuration
# (the linux-config-$PERWINE_KERNEL package), with PER_WINE_DISPATCH turned on, and
# only the objects the series touches: every .c file a patch changes,
# plus the objects that use what it adds to headers (entry, signal, mm,
# ptrace, proc).  -Werror makes a warning fail the check.  A pass is
# remembered per series, config and compiler.
#
#   kernel/check-distro-config.sh
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

need_packages "${KERNEL_BUILD_PACKAGES[@]}" "linux-config-$PERWINE_KERNEL" xz-utils

tree=$("$PERWINE_TOP/kernel/prepare-source.sh")
objdir=$(dirname "$tree")/obj-distro
log=$PERWINE_OUT/logs/kernel-distro.log
mkdir -p "$objdir" "$PERWINE_OUT/logs"

config=/usr/src/linux-config-$PERWINE_KERNEL/config.amd64_none_amd64.xz
[ -f "$config" ] || die "linux-config-$PERWINE_KERNEL has no $config"

objects=$(series_objects)
# shellcheck disable=SC2086
set -- $objects

stamp=$objdir/.perwine-distro-ok
key=$( (cat "$PERWINE_PATCHES"/series "$PERWINE_PATCHES"/*.patch; xzcat "$config";
	gcc --version | head -n 1; echo "$*") | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" = "$key" ]; then
	say "distro config: the series already compiled with Debian's config ($# objects, cached)"
	exit 0
fi
rm -f "$stamp"

say "configuring with Debian's amd64 config ($(basename "$config")) in $objdir"
xzcat "$config" > "$objdir/.config"
# Not a signed distribution build: no Debian certificates, no BTF.
"$tree/scripts/config" --file "$objdir/.config" \
	--enable PER_WINE_DISPATCH \
	--set-str SYSTEM_TRUSTED_KEYS "" --set-str SYSTEM_REVOCATION_KEYS "" \
	--disable MODULE_SIG_ALL --disable DEBUG_INFO_BTF \
	--set-str LOCALVERSION "-perwine-distro"
make -C "$tree" O="$objdir" olddefconfig >"$log" 2>&1 || die "olddefconfig failed; log: $log"
for opt in PER_WINE_DISPATCH IA32_EMULATION X86_X32_ABI AUDITSYSCALL USERFAULTFD CHECKPOINT_RESTORE \
	X86_VSYSCALL_EMULATION SECCOMP_FILTER SLUB; do
	grep -qx "CONFIG_$opt=y" "$objdir/.config" || die "Debian's config lost CONFIG_$opt; log: $log"
done

run_logged "$log.prepare" make -C "$tree" O="$objdir" -j"$(nproc)" prepare
run_logged "$log.build" make -C "$tree" O="$objdir" -j"$(nproc)" KCFLAGS=-Werror "$@"
for o in "$@"; do
	[ -s "$objdir/$o" ] || die "$o was not built; log: $log.build"
done
echo "$key" > "$stamp"
say "distro config: $# objects of the series compile with Debian's config, no warnings"

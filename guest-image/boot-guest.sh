#!/usr/bin/env bash
# Boot the perwine kernel with the guest image in QEMU and wait for the
# guest init to finish the job named by MODE (check, bench, distcheck,
# shell).  The serial console goes to the terminal and to
# $PERWINE_OUT/logs/guest-MODE.log.
#
#   guest-image/boot-guest.sh MODE BZIMAGE IMAGE
# Environment: PERWINE_ACCEL=auto|tcg|kvm, PERWINE_TIMEOUT (seconds),
# PERWINE_SMP (cpus, default: host cpus), PERWINE_MEM (default 4G),
# PERWINE_CPU (TCG's -cpu model, default max), PERWINE_RUN_NAME (names
# the logs, default MODE: the debug kernel's run is check-debug).
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

[ $# -eq 3 ] || die "usage: $0 MODE BZIMAGE IMAGE"
mode=$1 kernel=$2 image=$3
[ -f "$kernel" ] || die "no kernel $kernel (run make kernel)"
[ -f "$image" ] || die "no image $image (run make image)"
need_packages qemu-system-x86

logdir=$PERWINE_OUT/logs
mkdir -p "$logdir"
name=${PERWINE_RUN_NAME:-$mode}
log=$logdir/guest-$name.log
smp=${PERWINE_SMP:-$(nproc)}
mem=${PERWINE_MEM:-4G}
timeout=${PERWINE_TIMEOUT:-2400}
cmdline="console=ttyS0 root=/dev/vda rw rootfstype=ext4 init=/sbin/perwine-init panic=-1 perwine.mode=$mode"

# KVM hangs at boot on some hosts: use it only when a short probe boot
# (the kernel reaching its "no root fs" panic) proves it works.
kvm_works() {
	if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
		say "no usable /dev/kvm"
		return 1
	fi
	local out
	out=$(timeout -k 5 30 qemu-system-x86_64 -accel kvm -cpu host -m 256M -display none \
		-serial stdio -monitor none -no-reboot -kernel "$kernel" \
		-append "console=ttyS0 panic=-1" </dev/null 2>&1 || true)
	if ! grep -q 'Kernel panic' <<<"$out"; then
		say "KVM probe boot did not finish"
		return 1
	fi
}

accel=${PERWINE_ACCEL:-auto}
if [ "$accel" = auto ]; then
	if kvm_works; then
		accel=kvm
	else
		accel=tcg
		say "falling back to TCG (software emulation)"
	fi
fi
case $accel in
kvm) accel_opts=(-accel kvm -cpu host) ;;
tcg) accel_opts=(-accel tcg,thread=multi -cpu "${PERWINE_CPU:-max}") ;;
*) die "PERWINE_ACCEL must be auto, tcg or kvm, not '$accel'" ;;
esac
echo "$accel" > "$logdir/guest-$name.accel"

qemu=(qemu-system-x86_64 "${accel_opts[@]}" -smp "$smp" -m "$mem" -display none -no-reboot
	-kernel "$kernel" -append "$cmdline perwine.accel=$accel"
	-drive "file=$image,format=raw,if=virtio,cache=unsafe"
	-nic none)

say "booting $mode guest ($accel, $smp cpus); serial log: $log"
if [ "$mode" = shell ]; then
	exec "${qemu[@]}" -serial mon:stdio
fi

start=$SECONDS
set +e
timeout -k 10 "$timeout" "${qemu[@]}" -serial stdio -monitor none </dev/null 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	die "guest did not finish within ${timeout}s and was killed; serial log: $log"
fi
[ "$rc" -eq 0 ] || die "qemu exited with status $rc; serial log: $log"
say "guest finished in $((SECONDS - start))s"

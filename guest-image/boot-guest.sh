#!/usr/bin/env bash
# Boot the perwine kernel with the guest image in QEMU and wait for the
# guest init to finish the job named by MODE (check, bench, distcheck,
# run, shell).  The serial console goes to the terminal (not in run
# mode, whose command's own output is shown by collect-results.sh) and
# to $PERWINE_OUT/logs/guest-MODE.log.
#
#   guest-image/boot-guest.sh MODE BZIMAGE IMAGE
# Environment: PERWINE_ACCEL=auto|tcg|kvm, PERWINE_TIMEOUT (seconds),
# PERWINE_SMP (cpus, default: host cpus), PERWINE_MEM (default 4G),
# PERWINE_CPU (TCG's -cpu model, default max), PERWINE_RUN_NAME (names
# the logs, default MODE: the debug kernel's run is check-debug),
# PERWINE_SHARE (a host folder shared read-write at /mnt/share),
# PERWINE_KERNEL_ARGS (more kernel command line: the debug kernel's
# no5lvl), PERWINE_CMD (the command of run mode), PERWINE_QEMU (the emulator,
# default the packaged qemu-system-x86_64; make wine-check boots the
# one guest-image/build-qemu.sh builds), PERWINE_TESTS (a subset of the
# suite for check mode), PERWINE_BENCH_CLOCK=icount|wall (bench mode:
# icount, the default under TCG, counts guest instructions; run mode
# boots with icount when it is set to icount).
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

[ $# -eq 3 ] || die "usage: $0 MODE BZIMAGE IMAGE"
mode=$1 kernel=$2 image=$3
[ -f "$kernel" ] || die "no kernel $kernel (run make kernel)"
[ -f "$image" ] || die "no image $image (run make image)"
need_packages qemu-system-x86
qemu_bin=${PERWINE_QEMU:-qemu-system-x86_64}
command -v "$qemu_bin" >/dev/null || die "PERWINE_QEMU=$qemu_bin: no such program"
share=${PERWINE_SHARE:-}
if [ -n "$share" ]; then
	[ -d "$share" ] || die "PERWINE_SHARE=$share is not a directory"
	share=$(realpath "$share")
fi
if [ "$mode" = run ] && [ -z "${PERWINE_CMD:-}" ]; then
	die "run mode needs a command: make vm-run CMD='...'"
fi

logdir=$PERWINE_OUT/logs
mkdir -p "$logdir"
name=${PERWINE_RUN_NAME:-$mode}
log=$logdir/guest-$name.log
smp=${PERWINE_SMP:-$(nproc)}
mem=${PERWINE_MEM:-4G}
timeout=${PERWINE_TIMEOUT:-2400}
# RCU's stall detector counts guest time, which TCG stretches (a KASAN
# kernel's ACPI setup ran 30 s on a loaded host and was reported as a
# 21 s stall): 300 s still reports a real stall, not emulation speed.
cmdline="console=ttyS0 root=/dev/vda rw rootfstype=ext4 init=/sbin/perwine-init panic=-1 perwine.mode=$mode"
cmdline+=" rcupdate.rcu_cpu_stall_timeout=300${PERWINE_KERNEL_ARGS:+ $PERWINE_KERNEL_ARGS}"

# KVM hangs at boot on some hosts: use it only when a short probe boot
# (the kernel reaching its "no root fs" panic) proves it works.
kvm_works() {
	if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
		say "no usable /dev/kvm"
		return 1
	fi
	local out
	out=$(timeout -k 5 30 "$qemu_bin" -accel kvm -cpu host -m 256M -display none \
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
# The benchmark counts instructions under TCG: with -icount shift=0
# guest time advances 1 ns per executed instruction.  That needs one
# vCPU on one TCG thread (icount with -smp 2 hung at boot here).
clock=wall
if [ "$mode" = bench ] || { [ "$mode" = run ] && [ -n "${PERWINE_BENCH_CLOCK:-}" ]; }; then
	clock=${PERWINE_BENCH_CLOCK:-$([ "$accel" = tcg ] && echo icount || echo wall)}
	case $clock in
	icount) [ "$accel" = tcg ] || die "PERWINE_BENCH_CLOCK=icount needs TCG (PERWINE_ACCEL=tcg)" ;;
	wall) ;;
	*) die "PERWINE_BENCH_CLOCK must be icount or wall, not '$clock'" ;;
	esac
fi
case $accel-$clock in
kvm-*) accel_opts=(-accel kvm -cpu host) ;;
tcg-icount)
	accel_opts=(-accel tcg,thread=single -icount shift=0,sleep=off -cpu "${PERWINE_CPU:-max}")
	smp=1
	;;
tcg-*) accel_opts=(-accel tcg,thread=multi -cpu "${PERWINE_CPU:-max}") ;;
*) die "PERWINE_ACCEL must be auto, tcg or kvm, not '$accel'" ;;
esac
echo "$accel" > "$logdir/guest-$name.accel"
# What the run's result files record of it (scripts/common.sh run_meta).
{
	echo "date: $(date -u +%F)"
	echo "commit: $(git -C "$PERWINE_TOP" describe --always --dirty --exclude='*' 2>/dev/null || echo unknown)"
	case $accel-$clock in
	tcg-icount) echo "accelerator: TCG, -icount shift=0, 1 vCPU (guest instructions)" ;;
	*) echo "accelerator: $accel, $smp vCPUs (wall clock)" ;;
	esac
	echo "qemu: $("$qemu_bin" --version | head -n 1)${PERWINE_QEMU:+ (PERWINE_QEMU)}"
} > "$logdir/guest-$name.meta"

qemu=("$qemu_bin" "${accel_opts[@]}" -smp "$smp" -m "$mem" -display none -no-reboot
	-kernel "$kernel" -append "$cmdline perwine.accel=$accel perwine.clock=$clock"
	-drive "file=$image,format=raw,if=virtio,cache=unsafe"
	-nic none)
# The command and the test subset reach the guest init through QEMU's
# firmware config files, so no quoting of the kernel command line.
if [ -n "${PERWINE_CMD:-}" ]; then
	printf '%s\n' "$PERWINE_CMD" > "$logdir/guest-$name.cmd"
	qemu+=(-fw_cfg "name=opt/perwine/cmd,file=$logdir/guest-$name.cmd")
fi
if [ -n "${PERWINE_TESTS:-}" ]; then
	printf '%s\n' "$PERWINE_TESTS" > "$logdir/guest-$name.tests"
	qemu+=(-fw_cfg "name=opt/perwine/tests,file=$logdir/guest-$name.tests")
fi
if [ -n "$share" ]; then
	qemu+=(-fsdev "local,id=share,path=$share,security_model=none"
		-device virtio-9p-pci,fsdev=share,mount_tag=perwine)
fi

say "booting $mode guest ($accel${clock/#wall/}, $smp cpus${PERWINE_QEMU:+, $qemu_bin}${share:+, sharing $share at /mnt/share}); serial log: $log"
if [ "$mode" = shell ]; then
	exec "${qemu[@]}" -serial mon:stdio
fi

start=$SECONDS
set +e
if [ "$mode" = run ]; then
	# Only the command's own output is shown (by collect-results.sh).
	timeout -k 10 "$timeout" "${qemu[@]}" -serial "file:$log" -monitor none </dev/null >"$log.qemu" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		if [ $(((SECONDS - start) % 30)) -eq 0 ]; then
			say "  ... guest running, $((SECONDS - start))s"
		fi
	done
	wait "$pid"
	rc=$?
	cat "$log.qemu" >&2
else
	timeout -k 10 "$timeout" "${qemu[@]}" -serial stdio -monitor none </dev/null 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
fi
set -e
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	die "guest did not finish within ${timeout}s and was killed; serial log: $log"
fi
[ "$rc" -eq 0 ] || die "qemu exited with status $rc; serial log: $log"
say "guest finished in $((SECONDS - start))s"

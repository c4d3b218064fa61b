#!/bin/sh
# PID 1 of the perwine test guest.  Mounts the pseudo filesystems, runs
# the job named by perwine.mode= on the kernel command line against the
# source tree in /root/perwine, leaves its results in /results and
# reboots (QEMU runs with -no-reboot, so that ends the VM).
#
# Modes: check (./configure && make check), bench (demo + benchmark
# table), distcheck, shell (interactive).
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=${TERM:-vt100}

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null || true
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -o remount,rw /
hostname perwine-guest
ulimit -c 0

mode=check
for arg in $(cat /proc/cmdline); do
	case $arg in perwine.mode=*) mode=${arg#perwine.mode=} ;; esac
done

results=/results
rm -rf "$results"
mkdir -p "$results"
echo "perwine-guest: kernel $(uname -r), mode $mode, $(nproc) cpus"
echo "$mode" > "$results/mode"
uname -a > "$results/uname"

finish() {
	echo "$1" > "$results/status"
	dmesg > "$results/dmesg.txt"
	sync
	echo "perwine-guest: finished ($1)"
	# Reboot at once; QEMU's -no-reboot turns that into its exit.
	echo b > /proc/sysrq-trigger
	sleep 10
}

# Build out of the source tree, as make distcheck would.
prepare() {
	cd /root/perwine || return 1
	if [ ! -x configure ]; then
		autoreconf -fi > "$results/autoreconf.log" 2>&1 || return 1
	fi
	rm -rf /root/build && mkdir -p /root/build && cd /root/build || return 1
	/root/perwine/configure > "$results/configure.log" 2>&1 || return 1
}

case $mode in
shell)
	cd /root/perwine
	setsid sh -c 'exec bash -i </dev/ttyS0 >/dev/ttyS0 2>&1'
	finish shell
	;;
check | distcheck | bench)
	if ! prepare; then
		tail -n 40 "$results"/*.log
		finish configure-failed
	fi
	make -j"$(nproc)" "$mode" > "$results/make-$mode.log" 2>&1
	rc=$?
	cat "$results/make-$mode.log"
	# Keep every test's log and TAP result, and the harness summary.
	find /root/build/tests \( -name '*.log' -o -name '*.trs' -o -name '*.csv' \) \
		-exec cp {} "$results/" \; 2>/dev/null
	if [ "$rc" -eq 0 ]; then finish ok; else finish "make-$mode-failed"; fi
	;;
*)
	echo "perwine-guest: unknown mode '$mode'"
	finish bad-mode
	;;
esac

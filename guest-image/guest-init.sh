#!/bin/sh
# PID 1 of the perwine test guest.  Mounts the pseudo filesystems, runs
# the job named by perwine.mode= on the kernel command line against the
# source tree in /root/perwine, leaves its results in /results and
# reboots (QEMU runs with -no-reboot, so that ends the VM).
#
# Modes: check (./configure && make check, or the subset of tests the
# host passed), bench (demo + benchmark table), distcheck, run (install
# libperwine, run the host's command), shell (interactive).  A host
# folder shared with 9p (tag "perwine") is mounted at /mnt/share.
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

mode=check clock=wall
for arg in $(cat /proc/cmdline); do
	case $arg in
	perwine.mode=*) mode=${arg#perwine.mode=} ;;
	perwine.clock=*) clock=${arg#perwine.clock=} ;;
	esac
done
# The benchmark's unit: guest instructions (QEMU -icount) or nanoseconds.
export PERWINE_BENCH_CLOCK=$clock
# This kernel has perwine: a test that would skip for lack of it fails.
export PERWINE_REQUIRE=1

# What the host passed through QEMU's firmware config, if anything.
fw_cfg() {
	cat "/sys/firmware/qemu_fw_cfg/by_name/opt/perwine/$1/raw" 2>/dev/null
}

if grep -qx perwine /sys/bus/virtio/drivers/9pnet_virtio/*/mount_tag 2>/dev/null; then
	mkdir -p /mnt/share
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 perwine /mnt/share ||
		echo "perwine-guest: could not mount the shared folder"
fi

results=/results
rm -rf "$results"
mkdir -p "$results"
echo "perwine-guest: kernel $(uname -r), mode $mode, $(nproc) cpus"
echo "$mode" > "$results/mode"
uname -a > "$results/uname"
# What the kernel chose against the CPU's speculation bugs (a production
# config's entry path depends on it).
grep -r . /sys/devices/system/cpu/vulnerabilities > "$results/cpu-vulnerabilities.txt" 2>/dev/null || true

finish() {
	echo "$1" > "$results/status"
	dmesg > "$results/dmesg.txt"
	cat /proc/sys/kernel/tainted > "$results/tainted"
	sync
	echo "perwine-guest: finished ($1)"
	# Reboot at once; QEMU's -no-reboot turns that into its exit.
	echo b > /proc/sysrq-trigger
	sleep 10
}

# Build out of the source tree, as make distcheck would.
prepare() {
	# A tree another guest configured and built from these very sources
	# on the same root filesystem (make-image.sh PREBUILT): its tests run
	# on this kernel as they are, without configuring again.
	if [ -f /root/build/.perwine-prebuilt ]; then
		echo "perwine-guest: the suite as built for $(cat /root/build/.perwine-prebuilt)"
		cd /root/build
		return
	fi
	cd /root/perwine || return 1
	if [ ! -x configure ]; then
		autoreconf -fi > "$results/autoreconf.log" 2>&1 || return 1
	fi
	rm -rf /root/build && mkdir -p /root/build && cd /root/build || return 1
	/root/perwine/configure --enable-werror > "$results/configure.log" 2>&1 || return 1
}

# Keep every test's log and TAP result with its path, the harness
# summary test-suite.log and the benchmark's CSV.
keep_results() {
	(cd /root/build && find . \( -name '*.log' -o -name '*.trs' -o -name '*.csv' \) \
		! -name config.log -print0 | xargs -0r cp --parents -t "$results/tests") 2>/dev/null
}

case $mode in
shell)
	cd /root/perwine
	setsid sh -c 'exec bash -i </dev/ttyS0 >/dev/ttyS0 2>&1'
	finish shell
	;;
run)
	# libperwine installed under /usr/local, as a user's build would find it.
	if ! prepare || ! make -j"$(nproc)" install > "$results/install.log" 2>&1; then
		tail -n 40 "$results"/*.log
		finish install-failed
	fi
	ldconfig
	cd /mnt/share 2>/dev/null || cd /root
	echo "perwine-guest: running the command in $(pwd)"
	bash -c "$(fw_cfg cmd)" </dev/null >"$results/cmd.stdout" 2>"$results/cmd.stderr"
	echo $? > "$results/cmd-status"
	sync
	finish ok
	;;
check | distcheck | bench)
	if ! prepare; then
		tail -n 40 "$results"/*.log
		finish configure-failed
	fi
	tests=$(fw_cfg tests | tr '\n' ' ')
	if [ "$mode" = check ] && [ -n "$tests" ]; then
		# Build only the test programs the subset runs (the shell
		# tests' programs come with "all"; 80 needs the benchmark).
		progs=$(for t in $tests; do
			case $t in *.sh) ;; *) echo "$t" ;; esac
			case $t in *80-bench-smoke*) echo tests/bench/perwine-bench ;; esac
		done | tr '\n' ' ')
		echo "perwine-guest: running only $tests"
		make -j"$(nproc)" check TESTS="$tests" check_PROGRAMS="$progs" \
			> "$results/make-$mode.log" 2>&1
	elif [ "$mode" = check ] && [ ! -f /root/build/.perwine-prebuilt ]; then
		# The whole suite: build it (an empty TESTS runs no test), keep
		# the built tree for the debug kernel's guest, then run it.  (A
		# KASAN and lockdep kernel makes every fork and exec slow: its
		# guest took 4.3 min to configure alone, and runs these very
		# binaries instead; make-image.sh PREBUILT.)
		make -j"$(nproc)" check TESTS= > "$results/make-$mode.log" 2>&1 && {
			tar -C /root -cf /root/prebuilt.tar perwine.key perwine build ||
				echo "perwine-guest: the built tree was not kept"
			make -j"$(nproc)" check >> "$results/make-$mode.log" 2>&1
		}
	elif [ "$mode" = bench ] && [ "$clock" = icount ]; then
		# An instruction count varies only by work that lands in a
		# round (HZ=250: a tick per 4 million instructions; slab refills
		# and RCU work on the signal paths): rounds of tens of millions
		# of instructions, and the minimum of nine (perwine-bench).
		make -j"$(nproc)" bench BENCH_ITERATIONS=20000 BENCH_ROUNDS=9 \
			> "$results/make-$mode.log" 2>&1
	else
		make -j"$(nproc)" "$mode" > "$results/make-$mode.log" 2>&1
	fi
	rc=$?
	# The whole suite: then the library as the host packaged it, when
	# the host put its packages in the image (make vm-check does).
	if [ "$mode" = check ] && [ -z "$tests" ] && [ -d /root/debs ]; then
		echo "perwine-guest: installing the library's Debian packages, make installcheck"
		(cd /root/build && AM_TAP_AWK=awk sh /root/perwine/build-aux/tap-driver.sh \
			--test-name tests/debs-installcheck \
			--log-file tests/debs-installcheck.log \
			--trs-file tests/debs-installcheck.trs \
			--color-tests no --enable-hard-errors yes --expect-failure no -- \
			env top_srcdir=/root/perwine DEBS_DIR=/root/debs \
			sh /root/perwine/tests/debs-installcheck.sh) >> "$results/make-$mode.log" 2>&1
		sed 's/^/  /' /root/build/tests/debs-installcheck.log >> "$results/make-$mode.log"
	fi
	cat "$results/make-$mode.log"
	mkdir -p "$results/tests"
	keep_results
	if [ "$rc" -eq 0 ]; then finish ok; else finish "make-$mode-failed"; fi
	;;
*)
	echo "perwine-guest: unknown mode '$mode'"
	finish bad-mode
	;;
esac

#!/bin/sh
# x86-selftests.sh [--plain] WORKDIR: build the kernel's own x86
# selftests (tools/testing/selftests/x86, 64- and 32-bit, copied into
# $KSELFTESTS by the host) in WORKDIR and run each one plainly and, unless
# --plain, under perwine-run: a PER_WINE process with no selector, so
# every syscall must run natively.  They exercise exactly the entry
# paths the series touches (syscall, int $0x80, sysenter, sigreturn,
# vsyscall, single-stepping).  Prints, per program,
# "NAME PLAIN-STATUS PLAIN-LINES [PERWINE-STATUS PERWINE-LINES]", where
# LINES counts its result lines as OK/FAIL/SKIP ("[OK]" or "[PASS]",
# "[FAIL]", "[SKIP]"): a new failing subtest shows even where the exit
# status stays the same.  The build's log goes to WORKDIR/build.log, each
# run's output to WORKDIR/NAME.plain.log and NAME.perwine.log.
#
# Left out, on every kernel: sysret_ss_attrs_32/_64 and test_syscall_vdso_32
# oops the unpatched 6.1 kernel under QEMU's TCG (a far return to CS
# 0x23), ldt_gdt_32 aborts there ("The futex facility returned an
# unexpected error code").
set -u
plain=
[ "${1:-}" = --plain ] && { plain=1; shift; }
work=${1:?usage: x86-selftests.sh [--plain] WORKDIR}
ks=${KSELFTESTS:-/usr/share/perwine/kselftests}
run=${PERWINE_RUN:-${top_builddir:-.}/userland/tools/perwine-run}
skip=" sysret_ss_attrs_32 sysret_ss_attrs_64 test_syscall_vdso_32 ldt_gdt_32 "

[ -f "$ks/x86/Makefile" ] && [ -f "$ks/lib.mk" ] && [ -d "$ks/arch" ] || {
	echo "x86-selftests: no $ks/x86 (kernel/build-kernel.sh copies it)" >&2
	exit 2
}
# The kernel tree's layout: sigreturn.c includes ../../../../arch/x86/...
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
src=$work/tools/testing/selftests
mkdir -p "$src"
cp -a "$ks/x86" "$ks/lib.mk" "$ks/kselftest.h" "$ks/kselftest_harness.h" "$src/"
cp -a "$ks/arch" "$work/"
# A make of its own, not a sub-make of make check's (lib.mk would then
# put the programs in the root directory).
unset MAKEFLAGS MAKELEVEL MFLAGS
if ! make -C "$src/x86" -j"$(nproc)" OUTPUT="$src/x86" KHDR_INCLUDES="-isystem $ks/usr/include" \
	> "$work/build.log" 2>&1; then
	echo "x86-selftests: the build failed; log: $work/build.log" >&2
	exit 2
fi

# The accelerator the results belong to (TCG and KVM differ), as a comment.
echo "# accel $(sed -n 's/.*perwine\.accel=\([a-z]*\).*/\1/p' /proc/cmdline)"

# OK/FAIL/SKIP: the result lines of one run's log.
lines() {
	printf '%s/%s/%s' "$(grep -c -E '^\[(OK|PASS)\]' "$1")" "$(grep -c '^\[FAIL\]' "$1")" \
		"$(grep -c '^\[SKIP\]' "$1")"
}

for t in "$src"/x86/*_32 "$src"/x86/*_64; do
	[ -x "$t" ] || continue
	name=${t##*/}
	case $skip in *" $name "*) continue ;; esac
	timeout 300 "$t" > "$work/$name.plain.log" 2>&1
	line="$name $? $(lines "$work/$name.plain.log")"
	if [ -z "$plain" ]; then
		timeout 300 "$run" "$t" > "$work/$name.perwine.log" 2>&1
		line="$line $? $(lines "$work/$name.perwine.log")"
	fi
	echo "$line"
done

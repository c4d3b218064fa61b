#!/bin/sh
# mini-ntdll, a program built the way Wine 11's ntdll is (see its source):
# 64 threads with a TEB selector each and libc as the always-native
# range, 32-byte NT thunks that call the dispatcher (no trap), raw
# syscalls of foreign code (a DRM-like function in the PROT_NOSYSCALL
# image, a generated stub) caught and redirected +0xb/-0xb into the
# dispatcher, an 11-argument service, an ELF builtin loaded halfway
# (each thread then retries in VMA mode), setgid() broadcasts checked in
# every thread's credentials and SIGUSR1/SIGUSR2 suspend/resume while
# Windows code runs.  Every call checked, nothing lost.  Not timed: how
# long it takes depends on the host (a debug kernel under TCG beside
# other guests took 65 s); a hang is caught by a 600 s timeout instead.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require_perwine
dir=${top_builddir:-.}/userland/examples/mini-ntdll
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tap_plan 7

start=$(date +%s)
timeout 600 "$dir/mini-ntdll" "$dir/.libs/mini-builtin.so" 64 20 > "$tmp/out" 2>&1
rc=$?
hung=
[ "$rc" -eq 124 ] && hung=": it hung and was killed after 600 s"
elapsed=$(($(date +%s) - start))
sed 's/^/# /' "$tmp/out"
tap_check "mini-ntdll exits 0 (got $rc$hung)" test "$rc" -eq 0
line=$(grep '^mini-ntdll: 64 threads' "$tmp/out")
set -- $(echo "$line" | sed 's/[^0-9 ]//g')
# 64, calls, thunks, vma, selector, switched, wrong, stray, suspends, setgids, seen
tap_check "64 threads x 20 rounds x 5 NT calls at least, all emulated (${2:-none})" \
	test "${2:-0}" -ge 6400
tap_check "thunk calls (${3:-?}, no trap) + raw syscalls trapped by the VMA check (${4:-?}) and by the selector (${5:-?}) = ${2:-?}; ${6:-?} threads switched to VMA mode" \
	test "${3:-0}" -ge 3840 -a "$((${3:-0} + ${4:-0} + ${5:-0}))" -eq "${2:--1}" \
	-a "${4:-0}" -gt 0 -a "${5:-0}" -gt 0 -a "${6:-0}" -eq 64
tap_check "no wrong result and no stray call (${7:-?}, ${8:-?})" test "${7:-1}" -eq 0 -a "${8:-1}" -eq 0
tap_check "64 suspends and resumes by SIGUSR1/SIGUSR2, one per thread, none lost (${9:-?})" test "${9:-0}" -eq 64
# Changing the gid needs root (the guest runs the suite as root).
if [ "$(id -u)" -eq 0 ]; then
	tap_check "32 setgid() broadcasts while Windows code ran, each seen in all 64 threads' gids (${10:-?}, ${11:-?})" \
		test "${10:-0}" -eq 32 -a "${11:-0}" -eq 32
else
	tap_ok "32 setgid() broadcasts, each seen in every thread # SKIP not root: the gid cannot change"
fi
tap_check "all 64 threads were joined, then the summary and 'ok' came last (${elapsed} s)" \
	test -n "$line" -a "$(tail -n 2 "$tmp/out" | head -n 1)" = "$line" \
	-a "$(tail -n 1 "$tmp/out")" = "mini-ntdll: ok"

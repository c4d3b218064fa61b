#!/bin/sh
# mini-ntdll, a program built the way Wine's ntdll is (see its source):
# 64 threads with a TEB selector each, NT thunks and a raw DRM syscall in
# a PROT_NOSYSCALL image, an 11-argument service, generated code, a
# builtin .so, a SIGSYS handler that only redirects RIP/RSP to a Unix
# dispatcher, setgid() broadcasts and SIGUSR1/SIGUSR2 suspend/resume
# while Windows code runs.  Every call checked, nothing lost.  Not timed:
# how long it takes depends on the host (a debug kernel under TCG beside
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
# 64, calls, vma, selector, wrong, stray, suspends, setgids
tap_check "64 threads x 20 rounds x 5 NT calls at least, all emulated (${2:-none})" \
	test "${2:-0}" -ge 6400
tap_check "each call was one trap: ${3:-?} by the VMA check + ${4:-?} by the selector = ${2:-?}" \
	test "$((${3:-0} + ${4:-0}))" -eq "${2:--1}" -a "${3:-0}" -gt 0 -a "${4:-0}" -gt 0
tap_check "no wrong result and no stray call (${5:-?}, ${6:-?})" test "${5:-1}" -eq 0 -a "${6:-1}" -eq 0
tap_check "64 suspends and resumes by SIGUSR1/SIGUSR2, one per thread, none lost (${7:-?})" test "${7:-0}" -eq 64
tap_check "32 setgid() broadcasts while Windows code ran (${8:-?})" test "${8:-0}" -eq 32
tap_check "all 64 threads were joined, then the summary and 'ok' came last (${elapsed} s)" \
	test -n "$line" -a "$(tail -n 2 "$tmp/out" | head -n 1)" = "$line" \
	-a "$(tail -n 1 "$tmp/out")" = "mini-ntdll: ok"

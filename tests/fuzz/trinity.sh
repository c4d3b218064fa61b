#!/bin/sh
# In the guest (make vm-fuzz): Debian's trinity syscall fuzzer for
# SECONDS seconds, as a plain process or (perwine) with
# tests/fuzz/perwine-preload.c, a PER_WINE process with its selector at
# NATIVE and a PROT_NOSYSCALL page, so every syscall entry goes through
# the new code.  Prints "trinity MODE: N syscalls in S s"; fails when
# trinity did not run.  The host judges the kernel log and the taint.
#
#   sh tests/fuzz/trinity.sh plain|perwine SECONDS
set -u
mode=${1:?usage: trinity.sh plain|perwine SECONDS} secs=${2:-600}
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
cd "$work" || exit 2
chmod 777 "$work"
preload=
if [ "$mode" = perwine ]; then
	cc -O2 -shared -fPIC -I"$top/userland/include" -o "$work/perwine-preload.so" \
		"$top/tests/fuzz/perwine-preload.c" || exit 2
	preload=$work/perwine-preload.so
fi
start=$(date +%s)
# --dropprivs: the children run as nobody; -q: no per-syscall log.
LD_PRELOAD=$preload timeout -s INT -k 60 "$secs" trinity -q --dropprivs -C 4 \
	> "$work/trinity.log" 2>&1
rc=$?
end=$(date +%s)
tail -n 15 "$work/trinity.log"
# trinity's closing lines count what ran: the largest count of syscalls.
n=$(grep -o -i -E '[0-9]+ syscalls' "$work/trinity.log" | grep -o -E '^[0-9]+' | sort -n | tail -n 1)
echo "trinity $mode: ${n:-0} syscalls in $((end - start)) s (exit $rc)"
[ "${n:-0}" -gt 0 ]

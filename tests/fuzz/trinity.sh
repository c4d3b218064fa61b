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
chmod 755 "$work"
preload=
if [ "$mode" = perwine ]; then
	cc -O2 -shared -fPIC -I"$top/userland/include" -o "$work/perwine-preload.so" \
		"$top/tests/fuzz/perwine-preload.c" || exit 2
	preload=$work/perwine-preload.so
fi
# trinity runs as nobody from the start, in a directory of its own (its
# socket cache and log files go there).  Not as root with --dropprivs:
# trinity's help calls that experimental ("expect crashes"), and it
# segfaulted here within 22 s; as root it also mounts and writes to
# devices of the guest image.  --disable-fds=sockets: bookworm's trinity
# (1.9+git20200331) segfaults now and then while it creates its socket
# cache ("Couldn't find socket cachefile. Regenerating.", then SIGSEGV in
# trinity-main before the first fuzzed call, as nobody and as root);
# socket syscalls are still fuzzed, on the fds the other providers make.
mkdir "$work/run" && chown nobody: "$work/run" && cd "$work/run" || exit 2
now() { cut -d. -f1 /proc/uptime; }	# seconds since boot: monotonic, unlike date
start=$(now)
runuser -u nobody -- timeout -s INT -k 60 "$secs" \
	env LD_PRELOAD="$preload" trinity -q -C 4 --disable-fds=sockets > "$work/trinity.log" 2>&1
rc=$?
end=$(now)
tail -n 15 "$work/trinity.log"
# trinity's closing lines count what ran: the largest count of syscalls.
n=$(grep -o -i -E '[0-9]+ syscalls' "$work/trinity.log" | grep -o -E '^[0-9]+' | sort -n | tail -n 1)
echo "trinity $mode: ${n:-0} syscalls in $((end - start)) s (exit $rc)"
[ "${n:-0}" -gt 0 ]

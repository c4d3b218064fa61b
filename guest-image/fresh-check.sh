#!/usr/bin/env bash
# What a brand-new machine sees: debootstrap a clean Debian bookworm
# chroot (minbase, plus git and make to fetch and start), clone the
# repository's committed HEAD into it and run the README's two commands
# there, with no cache from this host (PERWINE_CACHE is the chroot's
# own).  Each command's time is printed at the end.
#
#   guest-image/fresh-check.sh [WORKDIR]    (root; WORKDIR default /var/tmp/perwine-fresh)
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

[ "$(id -u)" -eq 0 ] || die "fresh-check needs root (debootstrap, chroot, mounts)"
need_packages debootstrap git
work=${1:-/var/tmp/perwine-fresh}
root=$work/root
mirror=${PERWINE_MIRROR:-http://deb.debian.org/debian}
log=$PERWINE_OUT/logs/fresh-check.log
mkdir -p "$PERWINE_OUT/logs"
: > "$log"

mounts=()
cleanup() {
	local i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
		umount -l "${mounts[i]}" 2>/dev/null || true
	done
}
trap cleanup EXIT
bind() {
	mkdir -p "$root$2"
	mount "${@:3}" "$1" "$root$2"
	mounts+=("$root$2")
}

# A fresh chroot every time: nothing left from an earlier run.
if [ -d "$root" ]; then
	findmnt -rn -o TARGET | grep -q "^$root" && die "$root still has mounts; umount them first"
	rm -rf "$root"
fi
mkdir -p "$root"
run_logged "$PERWINE_OUT/logs/fresh-debootstrap.log" \
	debootstrap --variant=minbase --include=git,make,ca-certificates bookworm "$root" "$mirror"

bind proc /proc -t proc
bind sysfs /sys -t sysfs
bind /dev /dev --bind
bind devpts /dev/pts -t devpts
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The repository, read-only, to clone from (the committed HEAD only).
bind "$PERWINE_TOP" /src --bind -o ro

start=$SECONDS
in_chroot() {
	chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		bash -c "$1"
}
in_chroot 'git config --global --add safe.directory "*" && git clone -q /src /root/perwine' ||
	die "git clone failed in the chroot"
say "cloned $(git -C "$PERWINE_TOP" rev-parse --short HEAD) into $root/root/perwine"

times=()
for cmd in "make vm-bench" "make vm-check"; do
	t0=$SECONDS
	say "fresh machine: $cmd (log: $log)"
	if ! in_chroot "cd /root/perwine && $cmd" >>"$log" 2>&1; then
		tail -n 30 "$log" >&2
		die "'$cmd' failed on the fresh machine after $((SECONDS - t0)) s; log: $log"
	fi
	times+=("$cmd: $((SECONDS - t0)) s")
	tail -n 1 "$log" >&2
done
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
say "fresh machine: ${times[*]}; total $((SECONDS - start)) s"
echo "fresh-check: ${times[0]}, ${times[1]} (${summary:-no summary})"
case $summary in
*' passed, 0 failed') ;;
*) die "the suite did not pass on the fresh machine; log: $log" ;;
esac

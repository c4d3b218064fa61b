# Shared settings for the perwine host scripts.  Sourced, not run.
# shellcheck shell=bash

PERWINE_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PERWINE_CACHE=${PERWINE_CACHE:-/var/cache/perwine}
# The kernel: Debian's linux-source-$PERWINE_KERNEL with the series in
# kernel/patches/$PERWINE_KERNEL/.  6.1 (Debian 12's, the guest's own
# release) is the default; 6.12 (Debian 13's) builds and boots beside it,
# its output in out/6.12.
PERWINE_KERNEL=${PERWINE_KERNEL:-6.1}
case $PERWINE_KERNEL in
6.1) PERWINE_OUT=${PERWINE_OUT:-$PERWINE_TOP/out} ;;
6.12) PERWINE_OUT=${PERWINE_OUT:-$PERWINE_TOP/out/6.12} ;;
*)
	printf '[perwine] error: PERWINE_KERNEL=%s: there is a series for 6.1 and 6.12\n' "$PERWINE_KERNEL" >&2
	exit 1
	;;
esac
PERWINE_PATCHES=$PERWINE_TOP/kernel/patches/$PERWINE_KERNEL
KERNEL_TARBALL=${KERNEL_TARBALL:-/usr/src/linux-source-$PERWINE_KERNEL.tar.xz}
export PERWINE_TOP PERWINE_CACHE PERWINE_OUT PERWINE_KERNEL PERWINE_PATCHES KERNEL_TARBALL

say() { printf '[perwine] %s\n' "$*" >&2; }
die() { printf '[perwine] error: %s\n' "$*" >&2; exit 1; }

# Run a long command with its output in LOG, printing a line every 15
# seconds so the user sees it is alive; on failure show the tail of the
# log and where it is.
run_logged() {
	local log=$1; shift
	mkdir -p "$(dirname "$log")"
	say "$* (log: $log)"
	"$@" >"$log" 2>&1 &
	local pid=$! start=$SECONDS next=$((SECONDS + 15))
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		if [ "$SECONDS" -ge "$next" ]; then
			say "  ... $((SECONDS - start))s"
			next=$((SECONDS + 15))
		fi
	done
	if ! wait "$pid"; then
		tail -n 30 "$log" >&2
		die "failed after $((SECONDS - start))s; full log: $log"
	fi
	say "done in $((SECONDS - start))s"
}

# What building the kernel takes (headers_install needs rsync).
KERNEL_BUILD_PACKAGES=(build-essential bc bison flex libelf-dev libssl-dev cpio rsync kmod)

# The kernel objects the series touches: every .c file a patch changes,
# and what includes what it changes in headers on the paths it touches
# (entry, signal, mm, ptrace, proc).  One per line.
series_objects() {
	{
		grep -h '^+++ b/.*\.c$' "$PERWINE_PATCHES"/*.patch | sed 's|^+++ b/||' |
			grep -v '^tools/' | sed 's/\.c$/.o/'
		printf '%s\n' kernel/entry/syscall_user_dispatch.o kernel/signal.o kernel/sched/core.o \
			mm/mremap.o mm/memory.o arch/x86/kernel/process_64.o arch/x86/kernel/ptrace.o
	} | sort -u
}

# Install the Debian packages named, only those not installed yet.
need_packages() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	say "installing host packages: ${missing[*]}"
	[ "$(id -u)" -eq 0 ] || die "need root to apt-get install ${missing[*]}"
	mkdir -p "$PERWINE_OUT/logs"
	local log=$PERWINE_OUT/logs/apt.log
	if ! { apt-get update && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
		tail -n 20 "$log" >&2
		die "apt-get install failed; log: $log"
	fi
}

# The project's source files, NUL-separated and relative to the top:
# what git tracks plus what is new and not ignored, so that a local edit
# counts without a commit; never the build output.  Outside a git
# checkout: every file but out/.
source_files() {
	if git -C "$PERWINE_TOP" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		(cd "$PERWINE_TOP" && git ls-files -z -co --exclude-standard |
			while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done)
	else
		(cd "$PERWINE_TOP" && find . -path ./out -prune -o -type f -print0 | sed -z 's|^\./||')
	fi
}

# copy_sources DIR: those files into DIR, with their paths.
copy_sources() {
	(cd "$PERWINE_TOP" && source_files | tar --null -T - -cf -) | tar -C "$1" -xf -
}

# sources_key: a short hash of source_files (names and contents).
sources_key() {
	local sources
	mapfile -d '' -t sources < <(source_files | sort -z)
	(cd "$PERWINE_TOP" && hash_files "${sources[@]}")
}

# A short hash of the given files' names (relative to the top, however
# they were named on the command line) and contents.
hash_files() {
	local f
	for f in "$@"; do
		f=$(realpath "$f")
		printf '%s\n' "${f#"$PERWINE_TOP"/}"
		cat "$f"
	done | sha256sum | cut -c1-16
}

# bench_table LOG: the benchmark's table as perwine-bench printed it in
# LOG, from its header row to its summary line (bench-table.txt).
bench_table() {
	awk '/^row  / { t = 1 } t { print } /^bench: / { exit }' "$1"
}

# run_meta NAME DEST: the metadata of guest run NAME whose results are in
# DEST (boot-guest.sh's record, the guest's kernel release, the series),
# as "key: value" lines for a result file.
run_meta() {
	local meta=$PERWINE_OUT/logs/guest-$1.meta
	[ -f "$meta" ] || die "no $meta: run_meta needs a guest run named $1"
	echo "series: $PERWINE_KERNEL"
	echo "kernel: $(awk '{ print $3 }' "$2/uname" 2>/dev/null || echo unknown)"
	cat "$meta"
}

# series_patches SERIES: the patches a quilt series file lists, in order,
# one per line (comments and blank lines dropped).
series_patches() {
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$1"
}

# series_rst DIR: Documentation/userspace-api/perwine.rst as the series
# in DIR adds it (docs/perwine.rst is 6.1's, written by
# kernel/format-series.sh and checked by scripts/update-docs.sh --check).
series_rst() {
	awk '/^\+\+\+ b\/Documentation\/userspace-api\/perwine\.rst$/ { f = 1; next }
		f && /^(diff --git |-- $)/ { exit }
		f && /^\+/ { print substr($0, 2) }' "$1"/*.patch
}

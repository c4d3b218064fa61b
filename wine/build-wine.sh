#!/usr/bin/env bash
# Build the Wine that `make wine-check` runs in the guest: Wine 11.10
# (pinned below) with wine/patches/ applied, 64-bit only (PE modules
# built with mingw), no X, and only the modules a console program and
# Wine's own ntdll and kernel32 conformance tests need.  Prints the
# build directory.
#
#   wine/build-wine.sh            build (or reuse) and print the directory
#   wine/build-wine.sh --key      print the cache key only
#   wine/build-wine.sh --cached   exit 0 if that build is already complete
#
# The build lives in $PERWINE_CACHE/wine/<key>, the key a hash of the
# Wine commit and the configure options (what a configured tree depends
# on).  It is complete for a set of patches and modules when its stamp
# holds their hash: a change of wine/patches/ puts back the files the
# old patches touched and applies the new ones in the same tree, and
# make rebuilds only what changed.  Resumable: an interrupted configure
# or make continues where it stopped.
#
# Source: PERWINE_WINE_GIT, any git repository holding the pinned commit
# of github.com/Kron4ek/wine-tkg ("Update to 11.10": upstream Wine 11.10
# plus wine-staging; of the ntdll files wine/patches touch, virtual.c
# and unix_private.h carry staging's hunks, see wine/README.md,
# "Upstream Wine").  There is no default: without it the build stops
# and says how to get one.  Four large files the modules built here do
# not need may be missing from a partial copy; they get empty stand-ins.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

WINE_COMMIT=4b12965ca7e78b8e45eee5f835c72963b3ce351d	# "Update to 11.10"
WINE_GIT=${PERWINE_WINE_GIT:-}
WINE_URL=https://github.com/Kron4ek/wine-tkg
WINE_PATCHES=$PERWINE_TOP/wine/patches

# Large files of the snapshot that the modules built here do not need (a
# partial copy may lack them); makedep opens every file the makefiles
# list, so they get empty stand-ins.
WINE_MISSING=(fonts/msyh.sfd fonts/msyh.ttf libs/sqlite3/sqlite3.c nls/icudtl.dat)

# Everything optional off: the guest has only libc and what the image
# installs, and a console program needs none of it.
WINE_CONFIGURE=(--enable-archs=x86_64 --disable-win16 --without-x --without-wayland
	--without-freetype --without-fontconfig --without-gstreamer --without-vulkan
	--without-opengl --without-alsa --without-pulse --without-oss --without-cups
	--without-dbus --without-gnutls --without-krb5 --without-netapi --without-sane
	--without-usb --without-v4l2 --without-udev --without-sdl --without-capi
	--without-gphoto --without-pcap --without-pcsclite --without-unwind
	--without-xinerama --without-inotify --without-ffmpeg)

# The modules: the loader and server, a console program's DLLs, and what
# ntdll_test.exe imports (and cryptbase, where advapi32 forwards
# SystemFunction036: exception's later tests reach msvcrt's rand_s or
# rpcrt4's UuidCreate, and an unimplemented forward aborts the test and
# waits for a debugger); then ntdll's and kernel32's tests, and winegcc
# with the start-up library an ELF builtin (wine/tests/elfdll) is linked
# with.
WINE_TARGETS=(loader/all server/all nls/all
	dlls/ntdll/all dlls/kernel32/all dlls/kernelbase/all dlls/msvcrt/all
	dlls/ucrtbase/all dlls/apisetschema/all
	dlls/advapi32/all dlls/sechost/all dlls/user32/all dlls/win32u/all
	dlls/gdi32/all dlls/imm32/all dlls/ole32/all dlls/combase/all dlls/coml2/all
	dlls/rpcrt4/all dlls/cryptbase/all programs/conhost/all programs/explorer/all
	dlls/ntdll/tests/x86_64-windows/ntdll_test.exe dlls/kernel32/tests/x86_64-windows/kernel32_test.exe
	tools/winegcc/all tools/winebuild/all libs/winecrt0/libwinecrt0.a)

WINE_HOST_PACKAGES=(gcc-mingw-w64-x86-64 flex bison gcc make)

# The patches in the order of wine/patches/series.
series() {
	[ -f "$WINE_PATCHES/series" ] || return 0
	grep -v '^[[:space:]]*\(#\|$\)' "$WINE_PATCHES/series"
}

key() {
	printf '%s\n' "$WINE_COMMIT" "${WINE_MISSING[@]}" "${WINE_CONFIGURE[@]}" | sha256sum | cut -c1-16
}

# What the source tree's stamp holds: the patches applied to it.
patches_key() {
	local p
	for p in $(series); do
		echo "$p"
		cat "$WINE_PATCHES/$p"
	done | sha256sum | cut -c1-16
}

# What the stamp of a complete build holds: those patches and the modules.
built_key() {
	printf '%s\n' "$1" "${WINE_TARGETS[@]}" | sha256sum | cut -c1-16
}

# The Wine source repository, checked: needed to unpack the tree (and
# to unpatch one from before .pristine/ was kept).
need_source() {
	[ -n "$WINE_GIT" ] ||
		die "no Wine source: git init wine && git -C wine fetch --depth 1 $WINE_URL $WINE_COMMIT, then PERWINE_WINE_GIT=\$PWD/wine make wine"
	git -C "$WINE_GIT" cat-file -e "$WINE_COMMIT^{commit}" 2>/dev/null ||
		die "no commit $WINE_COMMIT in $WINE_GIT (PERWINE_WINE_GIT): git -C $WINE_GIT fetch --depth 1 $WINE_URL $WINE_COMMIT"
}

# Put back the files the applied patches touched (listed in
# .patched-files) as they were before (copies in .pristine/, or the
# commit's), newer than their objects so that make rebuilds them; files
# the patches created go.  So a change of wine/patches needs no source.
unpatch() {
	local f
	[ -f "$dir/.patched-files" ] || return 0
	[ -d "$dir/.pristine" ] || need_source
	while read -r f; do
		if [ -d "$dir/.pristine" ]; then
			if [ -f "$dir/.pristine/$f" ]; then
				cp "$dir/.pristine/$f" "$src/$f"
			else
				rm -f "$src/$f"
			fi
		elif git -C "$WINE_GIT" cat-file -e "$WINE_COMMIT:$f" 2>/dev/null; then
			# the blob alone: git archive, even limited to a path, reads the
			# whole tree's blobs and complains of the missing ones
			git -C "$WINE_GIT" show "$WINE_COMMIT:$f" >"$src/$f"
		else
			rm -f "$src/$f"
		fi
	done <"$dir/.patched-files"
	rm -rf "$dir/.patched-files" "$dir/.patches" "$dir/.pristine"
}

dir=$PERWINE_CACHE/wine/$(key)
pkey=$(patches_key)
bkey=$(built_key "$pkey")
src=$dir/src
build=$dir/build
logs=$dir/logs
case "${1:-}" in
--key) echo "$(basename "$dir")-$bkey"; exit 0 ;;
--cached) [ "$(cat "$dir/.built" 2>/dev/null)" = "$bkey" ]; exit ;;
--tree) [ -f "$dir/.configured" ] && [ -d "$dir/.pristine" ]; exit ;;
"") ;;
*) die "usage: $0 [--key|--cached|--tree]" ;;
esac

if [ "$(cat "$dir/.built" 2>/dev/null)" = "$bkey" ]; then
	say "Wine: cached build in $dir"
	echo "$dir"
	exit 0
fi

[ -f "$dir/.source" ] || need_source
need_packages "${WINE_HOST_PACKAGES[@]}"

mkdir -p "$logs"

if [ ! -f "$dir/.source" ]; then
	say "Wine: unpacking $WINE_COMMIT into $src"
	rm -rf "$src" "$dir/.patched-files" "$dir/.patches" "$dir/.pristine"
	mkdir -p "$src"
	# git archive reads every blob it is given, even excluded ones: archive
	# a tree without the missing files, made in an index of our own.
	index=$dir/.index
	rm -f "$index"
	GIT_INDEX_FILE=$index git -C "$WINE_GIT" read-tree "$WINE_COMMIT"
	GIT_INDEX_FILE=$index git -C "$WINE_GIT" rm -q --cached -- "${WINE_MISSING[@]}"
	tree=$(GIT_INDEX_FILE=$index git -C "$WINE_GIT" write-tree)
	rm -f "$index"
	git -C "$WINE_GIT" archive --format=tar "$tree" | tar -C "$src" -xf -
	for f in "${WINE_MISSING[@]}"; do : >"$src/$f"; done
	touch "$dir/.source"
fi

if [ "$(cat "$dir/.patches" 2>/dev/null)" != "$pkey" ]; then
	unpatch
	# The files the series touches (made, changed or deleted), and a copy
	# of those that exist before it: all of them are as the commit has
	# them now.  The list and the copies appear together, complete.
	for p in $(series); do sed -n -e 's|^+++ b/||p' -e 's|^--- a/||p' "$WINE_PATCHES/$p"; done |
		sort -u >"$dir/.patched-files.tmp"
	rm -rf "$dir/.pristine.tmp"
	mkdir -p "$dir/.pristine.tmp"
	while read -r f; do
		[ ! -f "$src/$f" ] || { mkdir -p "$dir/.pristine.tmp/$(dirname "$f")" && cp -p "$src/$f" "$dir/.pristine.tmp/$f"; }
	done <"$dir/.patched-files.tmp"
	mv "$dir/.pristine.tmp" "$dir/.pristine"
	mv "$dir/.patched-files.tmp" "$dir/.patched-files"
	for p in $(series); do
		say "Wine: applying $p"
		patch -d "$src" -p1 --quiet --no-backup-if-mismatch <"$WINE_PATCHES/$p" ||
			die "wine/patches/$p does not apply to Wine $WINE_COMMIT"
	done
	echo "$pkey" >"$dir/.patches"
fi

mkdir -p "$build"
if [ ! -f "$dir/.configured" ]; then
	(cd "$build" && run_logged "$logs/configure.log" "$src/configure" "${WINE_CONFIGURE[@]}")
	touch "$dir/.configured"
fi

rm -f "$dir/.built"
(cd "$build" && run_logged "$logs/make.log" make -j"$(nproc)" "${WINE_TARGETS[@]}")
echo "$bkey" >"$dir/.built"
echo "$dir"

#!/bin/sh
# An x32 process under PER_WINE (tests/34-x32.c, built here with
# $CC -mx32: Debian's gcc-multilib brings the x32 libc).  Without an x32
# toolchain the test skips with that reason; in the guest that is a
# failure.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require_perwine
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! ${CC:-cc} -mx32 -std=gnu11 -O2 -Wall -Wextra -Werror -pthread \
	-I"${top_srcdir:-.}/userland/include" -I"${top_srcdir:-.}/tests" \
	-o "$tmp/34-x32" "${top_srcdir:-.}/tests/34-x32.c" > "$tmp/cc.log" 2>&1; then
	sed 's/^/# /' "$tmp/cc.log"
	tap_skip_all "no x32 toolchain: ${CC:-cc} -mx32 failed (install gcc-multilib)"
fi
exec "$tmp/34-x32"

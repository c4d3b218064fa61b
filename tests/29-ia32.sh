#!/bin/sh
# A 32-bit process under PER_WINE (tests/29-ia32.c, built here with
# $CC -m32: the guest has gcc-multilib).  Without a 32-bit toolchain
# the test skips with that reason; in the guest that is a failure.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require_perwine
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! ${CC:-cc} -m32 -O2 -Wall -Wextra -Werror -o "$tmp/29-ia32" \
	"${top_srcdir:-.}/tests/29-ia32.c" > "$tmp/cc.log" 2>&1; then
	sed 's/^/# /' "$tmp/cc.log"
	tap_skip_all "no 32-bit toolchain: ${CC:-cc} -m32 failed (install gcc-multilib)"
fi
exec "$tmp/29-ia32"

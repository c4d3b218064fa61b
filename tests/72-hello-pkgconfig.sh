#!/bin/sh
# The 22-line example builds with nothing but perwine.h and
# `pkg-config --cflags --libs perwine` (here the uninstalled .pc of the
# build tree; make installcheck does the same against the installed one)
# and traps and emulates from a PROT_NOSYSCALL page and via the selector.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require_perwine
src=${top_srcdir:-.}/userland/examples/hello-perwine.c
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tap_plan 5
PKG_CONFIG_PATH=${top_builddir:-.}/userland
export PKG_CONFIG_PATH

flags=$(pkg-config --cflags --libs perwine)
tap_check "pkg-config --cflags --libs perwine: '$flags'" test -n "$flags"
tap_check "the example is at most 25 lines" test "$(wc -l < "$src")" -le 25
# shellcheck disable=SC2086
${CC:-cc} -Wall -Wextra -Werror -o "$tmp/hello" "$src" $flags 2> "$tmp/cc.log"
tap_check "it compiles warning-free" test $? -eq 0
sed 's/^/# /' "$tmp/cc.log"
LD_LIBRARY_PATH=${top_builddir:-.}/userland/.libs "$tmp/hello" > "$tmp/out"
tap_check "it runs: exit 0" test $? -eq 0
sed 's/^/# /' "$tmp/out"
tap_check "it printed both emulated results and its real pid" \
	sh -c 'sed -n 1p "$1" | grep -qx "PROT_NOSYSCALL page: 1001" &&
		sed -n 2p "$1" | grep -Eqx "selector TRAP: 1002, NATIVE: getpid\(\) = [0-9]+" &&
		test "$(wc -l < "$1")" -eq 2' sh "$tmp/out"

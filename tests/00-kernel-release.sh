#!/bin/sh
# The guest runs the kernel built from this tree: the release carries
# our LOCALVERSION and matches, with its build stamp, what the host
# recorded when it built bzImage.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require_perwine
tap_plan 3
release=$(uname -r)
version=$(uname -v)
tap_check "uname -r '$release' ends in -perwine" \
	sh -c 'case "$1" in *-perwine) exit 0 ;; *) exit 1 ;; esac' sh "$release"
expected=$(cat "$KSELFTESTS/kernelrelease" 2>/dev/null)
tap_check "uname -r equals the built release '$expected'" test "$release" = "$expected"
stamp=$(cat "$KSELFTESTS/kernelversion" 2>/dev/null)
tap_check "uname -v '$version' equals the build's stamp '$stamp'" test "$version" = "$stamp"

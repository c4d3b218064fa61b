#!/bin/sh
# run-kselftest.sh DIR PROGRAM [CFLAGS...]: build one kselftest of the
# perwine kernel (copied into $KSELFTESTS by the host) against that
# kernel's uapi headers and run it; it speaks TAP itself.
. "${top_srcdir:-.}/tests/tap.sh"
dir=$1 prog=$2
shift 2
tap_require_perwine
src=$KSELFTESTS/$dir/$prog.c
[ -f "$src" ] || tap_bail "no $src: configure --with-kselftests=DIR of the perwine kernel's build output"
out=${top_builddir:-.}/tests/kselftest-$prog
mkdir -p "$(dirname "$out")"
if ! ${CC:-cc} -Wall -O2 -isystem "$KSELFTESTS/usr/include" "$@" -o "$out" "$src" -lpthread \
	> "$out.build.log" 2>&1; then
	sed 's/^/# /' "$out.build.log"
	tap_bail "cannot build $src"
fi
exec "$out"

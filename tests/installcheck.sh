#!/bin/sh
# make installcheck: build the example against the installed perwine.pc
# and run it; check that the man pages and perwine-run were installed.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=$(pkg-config --cflags --libs perwine)
case $flags in *uninstalled*) echo "installcheck: got the uninstalled .pc" >&2; exit 1 ;; esac
${CC:-cc} -Wall -Wextra -Werror -o "$tmp/hello" "$top_srcdir/userland/examples/hello-perwine.c" $flags
LD_LIBRARY_PATH=$LIBDIR "$tmp/hello" | tee "$tmp/out"
grep -qx "PROT_NOSYSCALL page: 1001" "$tmp/out"
prefix=$(pkg-config --variable=prefix perwine)
for f in share/man/man7/perwine.7 share/man/man1/perwine-run.1 share/man/man3/perwine_enable.3 \
	bin/perwine-run include/perwine.h; do
	test -e "$prefix/$f" || { echo "installcheck: $prefix/$f is missing" >&2; exit 1; }
done
echo "installcheck: ok"

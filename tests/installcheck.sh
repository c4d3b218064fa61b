#!/bin/sh
# make installcheck: build the example against the installed perwine.pc
# and run it; check that the man pages and perwine-run were installed.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=$(pkg-config --cflags --libs perwine)
case $flags in *uninstalled*) echo "installcheck: got the uninstalled .pc" >&2; exit 1 ;; esac
${CC:-cc} -Wall -Wextra -Werror -o "$tmp/hello" "$top_srcdir/userland/examples/hello-perwine.c" $flags
prefix=$(pkg-config --variable=prefix perwine)
# A stock kernel (a distribution's build daemon) cannot run it; the
# guest (PERWINE_REQUIRE=1) must.
if LD_LIBRARY_PATH=$LIBDIR "$prefix/bin/perwine-run" --query | grep -q '^perwine: *available$'; then
	LD_LIBRARY_PATH=$LIBDIR "$tmp/hello" | tee "$tmp/out"
	grep -qx "PROT_NOSYSCALL page: 1001" "$tmp/out"
elif [ -n "${PERWINE_REQUIRE:-}" ]; then
	echo "installcheck: the kernel lacks perwine (PERWINE_REQUIRE is set)" >&2
	exit 1
else
	echo "installcheck: kernel without perwine: the example built, not run"
fi
for f in share/man/man7/perwine.7 share/man/man1/perwine-run.1 share/man/man3/perwine_enable.3 \
	bin/perwine-run include/perwine.h; do
	# A distribution's package has its man pages compressed.
	test -e "$prefix/$f" || test -e "$prefix/$f.gz" ||
		{ echo "installcheck: $prefix/$f is missing" >&2; exit 1; }
done
echo "installcheck: ok"

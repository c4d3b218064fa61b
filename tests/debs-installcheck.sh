#!/bin/sh
# The library as a distribution ships it: install the Debian packages
# that scripts/build-debs.sh made on the host (the guest has them in
# DEBS_DIR) and run make installcheck against the installed library.
# Run by the guest after make check, not by make check itself: it
# installs into /usr.
#
#   DEBS_DIR=/root/debs top_srcdir=... tests/debs-installcheck.sh
. "$top_srcdir/tests/tap.sh"
DEBS_DIR=${DEBS_DIR:-/root/debs}
packages="libperwine0 libperwine-dev perwine-tools"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)

set -- "$DEBS_DIR"/*.deb
[ -e "$1" ] || tap_skip_all "no packages in $DEBS_DIR"
tap_plan 7
tap_check "dpkg -i installs $(echo "$@" | wc -w) packages" dpkg -i "$@"
for p in $packages; do
	tap_check "$p is installed" sh -c "dpkg-query -W -f='\${Status}' $p | grep -qx 'install ok installed'"
done
tap_check "libperwine0 ships libperwine.so.0 in the multiarch dir" \
	sh -c "dpkg-query -L libperwine0 | grep -qx /usr/lib/$multiarch/libperwine.so.0"
tap_check "the installed library exports LIBPERWINE_0" \
	sh -c "objdump -T /usr/lib/$multiarch/libperwine.so.0 | grep -q 'LIBPERWINE_0 *perwine_enable'"
# make installcheck, configured for the packages' paths: the example
# builds against /usr's perwine.pc and runs on this kernel.
build=$(mktemp -d)
tap_check "make installcheck against the installed packages" sh -c "
	cd '$build' && '$top_srcdir/configure' --prefix=/usr --libdir=/usr/lib/$multiarch \
		>configure.log 2>&1 && make installcheck >installcheck.log 2>&1 ||
	{ cat '$build'/*.log; exit 1; }"
rm -rf "$build"

# Minimal TAP helpers for the shell tests.  Sourced.
# shellcheck shell=sh
tap_n=0
tap_plan() { echo "1..$1"; }
tap_ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $*"; }
tap_not_ok() { tap_n=$((tap_n + 1)); echo "not ok $tap_n - $*"; }
# tap_check DESCRIPTION COMMAND...: one test point from a command's status.
tap_check() {
	tap_d=$1
	shift
	if "$@"; then tap_ok "$tap_d"; else tap_not_ok "$tap_d"; fi
}
tap_bail() { echo "Bail out! $*"; exit 1; }
# tap_skip_all REASON: skip the whole test, as on a distribution's build
# daemon running a stock kernel; where perwine must be there (the guest
# sets PERWINE_REQUIRE=1) that is a failure instead.
tap_skip_all() {
	if [ -n "${PERWINE_REQUIRE:-}" ]; then
		echo "1..1"
		echo "not ok 1 - $* (PERWINE_REQUIRE is set)"
		exit 1
	fi
	echo "1..0 # SKIP $*"
	exit 0
}
# tap_require_perwine: skip unless the running kernel does perwine.
tap_require_perwine() {
	"${top_builddir:-.}/userland/tools/perwine-run" --query 2>/dev/null |
		grep -q '^perwine: *available$' ||
		tap_skip_all "kernel $(uname -r) without PER_WINE dispatch"
}

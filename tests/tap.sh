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

#!/usr/bin/env bash
# Bring the guest's results back from its disk image (debugfs reads the
# ext4 image directly, no mount), fail on any kernel log error, and print
# the summary line "N passed, N failed" counted from the TAP results.
#
#   guest-image/collect-results.sh MODE IMAGE
# PERWINE_RUN_NAME (default MODE) names the results dir, as for boot-guest.sh.
# Exits non-zero when a test failed, the guest did not finish its job,
# or its kernel log has a BUG/WARNING/Oops/general protection/KASAN line.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

[ $# -eq 2 ] || die "usage: $0 MODE IMAGE"
mode=$1 image=$2
need_packages e2fsprogs
name=${PERWINE_RUN_NAME:-$mode}
dest=$PERWINE_OUT/results/$name
serial=$PERWINE_OUT/logs/guest-$name.log
rm -rf "$dest" "$PERWINE_OUT/results/results"
mkdir -p "$PERWINE_OUT/results"
if debugfs -R "rdump /results $PERWINE_OUT/results" "$image" >/dev/null 2>&1 &&
	[ -d "$PERWINE_OUT/results/results" ]; then
	mv "$PERWINE_OUT/results/results" "$dest"
else
	say "no /results in $image: the guest never got to run its job"
	mkdir -p "$dest"
fi
say "guest results: $dest"

bad=0
status=$(cat "$dest/status" 2>/dev/null || echo "did-not-finish")
if [ "$status" != ok ]; then
	say "guest job '$mode' ended with status '$status'; see $serial and $dest"
	bad=1
fi

# The kernel must never complain, whatever the tests made it do.
pattern='BUG:|WARNING:|Oops|general protection|KASAN'
if grep -E -H -n "$pattern" "$dest/dmesg.txt" "$serial" 2>/dev/null > "$dest/kernel-errors.txt"; then
	say "kernel log errors (all in $dest/kernel-errors.txt):"
	head -n 20 "$dest/kernel-errors.txt" >&2
	bad=1
fi

passed=0 failed=0 skipped=0
shopt -s nullglob
for trs in "$dest"/*.trs; do
	while read -r _ result; do
		case $result in
		PASS | XFAIL) passed=$((passed + 1)) ;;
		SKIP) skipped=$((skipped + 1)) ;;
		*) failed=$((failed + 1)) ;;
		esac
	done < <(grep '^:test-result:' "$trs")
done
if [ "$mode" = check ] && [ $((passed + failed)) -eq 0 ]; then
	say "no test results found in $dest"
	bad=1
fi
if [ "$failed" -gt 0 ]; then
	say "failed tests (details in $dest/test-suite.log):"
	grep -l -E '^:test-result: (FAIL|ERROR|XPASS)' "$dest"/*.trs | sed 's|.*/|  |; s|\.trs$||' >&2
fi
# The guest has every kernel feature and kselftest: a skip there means
# something is missing, so it fails the run instead of hiding.
if [ "$skipped" -gt 0 ]; then
	say "$skipped test cases skipped in the guest:"
	grep -l '^:test-result: SKIP' "$dest"/*.trs | sed 's|.*/|  |; s|\.trs$||' >&2
	bad=1
fi
[ "$bad" -eq 0 ] || say "run failed; logs: $PERWINE_OUT/logs, results: $dest"
echo "$passed passed, $failed failed"
[ "$bad" -eq 0 ] && [ "$failed" -eq 0 ]

#!/usr/bin/env bash
# make vm-fuzz: trinity in the debug guest (KASAN, lockdep), once as a
# plain process and once as a PER_WINE process with a selector and a
# PROT_NOSYSCALL page (tests/fuzz/trinity.sh), PERWINE_FUZZ_SECONDS
# each (default 600), each in a boot of its own.  Fails on any
# kernel-log error or taint (collect-results.sh) or when trinity did not
# run.
#
#   guest-image/vm-fuzz.sh BZIMAGE IMAGE
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

[ $# -eq 2 ] || die "usage: $0 BZIMAGE IMAGE"
secs=${PERWINE_FUZZ_SECONDS:-600}
# The guest's own timeout: the fuzzing, the build and a margin.
export PERWINE_TIMEOUT=$((secs + 900))
rc=0
for mode in plain perwine; do
	say "trinity, $mode, ${secs}s (log: $PERWINE_OUT/logs/guest-fuzz-$mode.log)"
	if PERWINE_RUN_NAME=fuzz-$mode PERWINE_CMD="sh /root/perwine/tests/fuzz/trinity.sh $mode $secs" \
		"$PERWINE_TOP/guest-image/vm-run.sh" "$1" "$2" > "$PERWINE_OUT/results-fuzz-$mode.txt"; then
		grep '^trinity ' "$PERWINE_OUT/results-fuzz-$mode.txt"
	else
		say "trinity $mode failed; output: $PERWINE_OUT/results-fuzz-$mode.txt"
		rc=1
	fi
done
[ "$rc" -eq 0 ] && say "vm-fuzz: both modes ran with a clean kernel log"
exit "$rc"

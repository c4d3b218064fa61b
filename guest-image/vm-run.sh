#!/usr/bin/env bash
# Boot the guest, run PERWINE_CMD in it (with libperwine installed and
# PERWINE_SHARE, if set, mounted read-write at /mnt/share, which is also
# the command's working directory), print the command's output and exit
# with its status.
#
#   PERWINE_CMD='...' guest-image/vm-run.sh BZIMAGE IMAGE
#   PERWINE_CMD='...' guest-image/vm-run.sh --check   (the arguments only)
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

[ -n "${PERWINE_CMD:-}" ] || die "no command: make vm-run CMD='...'"
if [ -n "${PERWINE_SHARE:-}" ] && [ ! -d "$PERWINE_SHARE" ]; then
	die "PERWINE_SHARE=$PERWINE_SHARE is not a directory"
fi
[ "${1:-}" = --check ] && exit 0
[ $# -eq 2 ] || die "usage: PERWINE_CMD='...' $0 BZIMAGE IMAGE"
export PERWINE_RUN_NAME=${PERWINE_RUN_NAME:-run}
"$PERWINE_TOP/guest-image/boot-guest.sh" run "$1" "$2" ||
	die "the guest did not run the command; logs: $PERWINE_OUT/logs/guest-$PERWINE_RUN_NAME.log"
exec "$PERWINE_TOP/guest-image/collect-results.sh" run "$2"

#!/usr/bin/env bash
# The kernel's own x86 selftests on the unpatched kernel and on the
# patched one, same config and same guest image: builds the unpatched
# ("stock") kernel, runs tests/x86-selftests.sh in a guest on each, and
# prints one table (stock, patched plainly, patched under perwine-run).
# The stock column is what tests/12-x86-selftests expects in make check;
# it is pinned in tests/x86-selftests.stock, and a stock run that differs
# from it fails here (PERWINE_UPDATE_EXPECTED=1 rewrites it).
#
#   guest-image/vm-x86-selftests.sh BZIMAGE IMAGE
set -euo pipefail
export LC_ALL=C
. "$(dirname "$0")/../scripts/common.sh"

[ $# -eq 2 ] || die "usage: $0 BZIMAGE IMAGE"
kernel=$1 image=$2
pinned=$PERWINE_TOP/tests/x86-selftests.stock
results=$PERWINE_OUT/results/x86-selftests
mkdir -p "$results"

PERWINE_KERNEL_FLAVOR=stock "$PERWINE_TOP/kernel/build-kernel.sh"
say "x86 selftests on the stock kernel"
PERWINE_RUN_NAME=x86-stock PERWINE_CMD='sh /root/perwine/tests/x86-selftests.sh --plain /tmp/x86' \
	"$PERWINE_TOP/guest-image/vm-run.sh" "$PERWINE_OUT/bzImage-stock" "$image" > "$results/stock.txt" ||
	die "the stock run failed; output: $results/stock.txt"
say "x86 selftests on the patched kernel, plainly and under perwine-run"
PERWINE_RUN_NAME=x86-perwine \
	PERWINE_CMD='PERWINE_RUN=perwine-run sh /root/perwine/tests/x86-selftests.sh /tmp/x86' \
	"$PERWINE_TOP/guest-image/vm-run.sh" "$kernel" "$image" > "$results/perwine.txt" ||
	die "the patched run failed; output: $results/perwine.txt"

printf '%-28s %6s %8s %11s\n' program stock patched perwine-run
join -a 1 -e - -o 0,1.2,2.2,2.3 <(sort "$results/stock.txt") <(sort "$results/perwine.txt") |
	while read -r name stock plain perwine; do
		printf '%-28s %6s %8s %11s\n' "$name" "$stock" "$plain" "$perwine"
	done | tee "$results/table.txt"

if [ -n "${PERWINE_UPDATE_EXPECTED:-}" ]; then
	{
		echo "# Exit status of each x86 selftest on the unpatched 6.1 guest kernel"
		echo "# (same config, TCG), from make vm-x86-selftests; tests/12-x86-selftests"
		echo "# expects the same on the patched kernel."
		sort "$results/stock.txt"
	} > "$pinned"
	say "wrote $pinned"
elif ! diff <(grep -v '^#' "$pinned") <(sort "$results/stock.txt") > "$results/stock.diff"; then
	say "the stock kernel's results differ from $pinned (< pinned, > now):"
	cat "$results/stock.diff" >&2
	exit 1
fi
bad=$(awk '$2 != $3 || $3 != $4' "$results/table.txt" | wc -l)
say "x86 selftests: $(wc -l < "$results/table.txt") programs, $bad differ between the columns (table: $results/table.txt)"
[ "$bad" -eq 0 ]

#!/usr/bin/env bash
# The kernel's own x86 selftests on the unpatched kernel and on the
# patched one, same config and same guest image: builds the unpatched
# ("stock") kernel, runs tests/x86-selftests.sh in a guest on each, and
# prints one table (stock, patched plainly, patched under perwine-run).
# The stock column is what tests/12-x86-selftests expects in make check;
# it is pinned in tests/x86-selftests.stock.KERNEL.ACCEL, and a stock run that differs
# from it fails here (PERWINE_UPDATE_EXPECTED=1 rewrites it).
#
#   guest-image/vm-x86-selftests.sh BZIMAGE IMAGE
set -euo pipefail
export LC_ALL=C
. "$(dirname "$0")/../scripts/common.sh"

[ $# -eq 2 ] || die "usage: $0 BZIMAGE IMAGE"
kernel=$1 image=$2
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

# Each run names its accelerator: the pinned results are per accelerator.
accel=$(sed -n 's/^# accel //p' "$results/stock.txt")
[ -n "$accel" ] && [ "$accel" = "$(sed -n 's/^# accel //p' "$results/perwine.txt")" ] ||
	die "the two runs do not name one accelerator"
pinned=$PERWINE_TOP/tests/x86-selftests.stock.$PERWINE_KERNEL.$accel
grep -v '^#' "$results/stock.txt" | sort > "$results/stock.sorted"
grep -v '^#' "$results/perwine.txt" | sort > "$results/perwine.sorted"

# Exit status, then OK/FAIL/SKIP line counts, per column.
printf '%-28s %-12s %-12s %-12s\n' program stock patched perwine-run
join -a 1 -e - -o 0,1.2,1.3,2.2,2.3,2.4,2.5 "$results/stock.sorted" "$results/perwine.sorted" |
	while read -r name s1 s2 p1 p2 w1 w2; do
		printf '%-28s %-12s %-12s %-12s\n' "$name" "$s1:$s2" "$p1:$p2" "$w1:$w2"
	done | tee "$results/table.txt"

if [ -n "${PERWINE_UPDATE_EXPECTED:-}" ]; then
	{
		echo "# Each x86 selftest on the unpatched $PERWINE_KERNEL guest kernel (same config,"
		echo "# accelerator $accel): exit status, then its [OK]/[FAIL]/[SKIP] line"
		echo "# counts; from make vm-x86-selftests.  tests/12-x86-selftests expects"
		echo "# the same on the patched kernel."
		cat "$results/stock.sorted"
	} > "$pinned"
	say "wrote $pinned"
elif [ ! -f "$pinned" ]; then
	die "nothing pinned for accelerator $accel: PERWINE_UPDATE_EXPECTED=1 make vm-x86-selftests"
elif ! diff <(grep -v '^#' "$pinned") "$results/stock.sorted" > "$results/stock.diff"; then
	say "the stock kernel's results differ from $pinned (< pinned, > now):"
	cat "$results/stock.diff" >&2
	exit 1
fi
bad=$(awk '$2 != $3 || $3 != $4' "$results/table.txt" | wc -l)
say "x86 selftests: $(wc -l < "$results/table.txt") programs, $bad differ between the columns (table: $results/table.txt)"
[ "$bad" -eq 0 ]

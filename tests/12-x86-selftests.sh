#!/bin/sh
# The kernel's own x86 selftests, 64- and 32-bit (tests/x86-selftests.sh):
# each must end as it does on the unpatched kernel with the same config
# and accelerator (tests/x86-selftests.stock.KERNEL.ACCEL, pinned by make
# vm-x86-selftests): the same exit status and the same number of [OK],
# [FAIL] and [SKIP] lines, so that a subtest that newly fails shows even
# in a program that already failed on the stock kernel.  Under
# perwine-run, a PER_WINE process whose syscalls all run natively, each
# must end as it does plainly, line counts included.
. "${top_srcdir:-.}/tests/tap.sh"
export LC_ALL=C
tap_require_perwine
accel=$(sed -n 's/.*perwine\.accel=\([a-z]*\).*/\1/p' /proc/cmdline)
kver=$(uname -r | cut -d. -f1,2)
stock=${top_srcdir:-.}/tests/x86-selftests.stock.$kver.${accel:-unknown}
work=${top_builddir:-.}/tests/x86-selftests.work
[ -f "$stock" ] || tap_bail "no pinned stock results for accelerator '${accel:-unknown}' ($stock): PERWINE_KERNEL=$kver PERWINE_UPDATE_EXPECTED=1 make vm-x86-selftests"
if ! out=$(sh "${top_srcdir:-.}/tests/x86-selftests.sh" "$work"); then
	sed 's/^/# /' "$work/build.log" 2>/dev/null | tail -n 20
	tap_bail "the x86 selftests did not build or run"
fi
out=$(echo "$out" | grep -v '^#')
expected=$(grep -v '^#' "$stock")
tap_plan $(($(echo "$expected" | wc -l) * 2 + 1))
tap_check "the programs built are those of the stock run" \
	test "$(echo "$out" | cut -d' ' -f1 | sort)" = "$(echo "$expected" | cut -d' ' -f1)"
echo "$expected" | while read -r name want_status want_lines; do
	got=$(echo "$out" | awk -v n="$name" '$1 == n')
	set -- $got
	tap_check "$name: exit ${2:-missing}, OK/FAIL/SKIP ${3:-missing}, as on the stock kernel ($want_status, $want_lines)" \
		test "${2:-x} ${3:-x}" = "$want_status $want_lines"
	tap_check "$name under perwine-run: exit ${4:-missing}, ${5:-missing}, as plainly" \
		test "${4:-x} ${5:-x}" = "${2:-y} ${3:-y}"
done

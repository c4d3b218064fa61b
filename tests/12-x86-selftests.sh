#!/bin/sh
# The kernel's own x86 selftests, 64- and 32-bit (tests/x86-selftests.sh):
# each must end as it does on the unpatched kernel with the same config
# (tests/x86-selftests.stock, pinned by make vm-x86-selftests), and
# under perwine-run, a PER_WINE process whose syscalls all run natively,
# as it does plainly.
. "${top_srcdir:-.}/tests/tap.sh"
export LC_ALL=C
tap_require_perwine
stock=${top_srcdir:-.}/tests/x86-selftests.stock
work=${top_builddir:-.}/tests/x86-selftests.work
if ! out=$(sh "${top_srcdir:-.}/tests/x86-selftests.sh" "$work"); then
	sed 's/^/# /' "$work/build.log" 2>/dev/null | tail -n 20
	tap_bail "the x86 selftests did not build or run"
fi
expected=$(grep -v '^#' "$stock")
tap_plan $(($(echo "$expected" | wc -l) * 2 + 1))
tap_check "the programs built are those of the stock run" \
	test "$(echo "$out" | cut -d' ' -f1 | sort)" = "$(echo "$expected" | cut -d' ' -f1)"
echo "$expected" | while read -r name want; do
	got=$(echo "$out" | awk -v n="$name" '$1 == n')
	set -- $got
	tap_check "$name: exit ${2:-missing}, as on the stock kernel ($want)" test "${2:-x}" = "$want"
	tap_check "$name under perwine-run: exit ${3:-missing}, as plainly" test "${3:-x}" = "${2:-y}"
done

#!/usr/bin/env bash
# The targets of make wine-bench, judged on one run's bench.tsv (mode,
# row, guest instructions per call; mode stock-sud is mode off on the
# unpatched kernel of the same config): a TAP line each, numbered from
# FIRST.  Exit 0 only if every target is met.
#
#   wine/bench-targets.sh BENCH.TSV FIRST
#
# Interception cost: a row minus the same row in mode none (Wine without
# syscall dispatch, on the patched kernel).
#   - with the redirect (dropin, vma), NtGetCurrentProcessorNumber's
#     "raw minus export" (a trapped raw syscall's extra cost) at most 1/6
#     of stock SUD's;
#   - the Win32 loop's interception cost in dropin at most 1/3 of stock
#     SUD's, and in off (SUD on the patched kernel) at most 1/2;
#   - the W^X JIT loop in vma at most 20 instructions per iteration above
#     dropin's.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 BENCH.TSV FIRST" >&2; exit 2; }
awk -F'\t' -v n="$2" '
	NR > 1 { v[$1 SUBSEP $2] = $3 }
	function have(m, r) { return (m SUBSEP r) in v && v[m SUBSEP r] != "FAILED" }
	function point(ok, text) {
		printf "%sok %d - target: %s\n", ok ? "" : "not ", n++, text
		if (!ok) bad++
	}
	function at_most(what, m, r, x, limit, limit_text) {
		if (!have(m, r)) { point(0, what " (mode " m ": row " r " not measured)"); return }
		point(x <= limit, sprintf("%s: %.1f (<= %s, %.1f) %s", what, x, limit_text, limit,
			x <= limit ? "met" : "missed"))
	}
	END {
		raw = "NtGetCurrentProcessorNumber raw minus export"
		w32 = "Win32 SetFilePointer+ReadFile"
		wx = "W^X JIT: VirtualProtect RW, write, RX, call, ReadFile"
		if (!have("stock-sud", raw) || !have("stock-sud", w32) || !have("none", w32)) {
			point(0, "no stock-sud or none column: the targets cannot be judged")
			exit 1
		}
		stock_raw = v["stock-sud" SUBSEP raw]
		stock_w32 = v["stock-sud" SUBSEP w32] - v["none" SUBSEP w32]
		nm = split("dropin vma", m, " ")
		for (i = 1; i <= nm; i++)
			at_most("a trapped raw syscall, mode " m[i] " (redirect), raw minus export", m[i], raw,
				v[m[i] SUBSEP raw], stock_raw / 6, "1/6 of stock SUD\047s")
		at_most("the Win32 loop\047s interception cost, mode dropin", "dropin", w32,
			v["dropin" SUBSEP w32] - v["none" SUBSEP w32], stock_w32 / 3, "1/3 of stock SUD\047s")
		at_most("the Win32 loop\047s interception cost, mode off on this kernel", "off", w32,
			v["off" SUBSEP w32] - v["none" SUBSEP w32], stock_w32 / 2, "1/2 of stock SUD\047s")
		if (have("dropin", wx))
			at_most("the W^X JIT loop, mode vma over dropin", "vma", wx,
				v["vma" SUBSEP wx] - v["dropin" SUBSEP wx], 20, "20")
		else
			point(0, "the W^X JIT loop: mode dropin not measured")
		exit bad > 0
	}' "$1"

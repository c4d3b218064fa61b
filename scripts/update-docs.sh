#!/usr/bin/env bash
# The result tables of the docs, generated from result files: no figure
# in a generated block is typed by hand.  A block in README.md, docs/*.md
# or wine/README.md is the lines between
#
#   <!-- generated: VIEW -->
#   <!-- end generated -->
#
# and VIEW one of the views below, rendered from the committed result
# files in docs/results/ (a folder per run, each with the run's own
# output and its meta.txt: date, commit, kernel, accelerator, QEMU) or
# from tests/expected-results.*.
#
#   scripts/update-docs.sh            fill every block (make docs)
#   scripts/update-docs.sh --import   first copy the newest results of
#                                     make vm-bench and vm-bench-stock
#                                     (6.1, 6.12), make wine-bench and
#                                     make wine-check from out/ into
#                                     docs/results/
#   scripts/update-docs.sh --check    change nothing; TAP, one point per
#                                     block, failing where a block differs
#                                     from what its result files give
#   scripts/update-docs.sh --render VIEW [DIR]   print one view, from
#                                     the run in DIR (default its folder
#                                     in docs/results; what make vm-bench,
#                                     wine-bench and wine-check do)
#
# Views: bench-6.1, bench-6.12 (make vm-bench's table), bench-compare
# (6.1 beside 6.12), bench-v2-6.1 and bench-v2-6.12 (the run of series
# v2, kept in docs/results/vm-bench-*-v2, beside this series'),
# bench-stock-6.1 and bench-stock-6.12 (make vm-bench-stock's run on the
# unpatched kernel beside this series'), bench-production (make
# vm-bench-production's runs beside the guest config's, both kernels),
# bench-headline (the README's mechanisms), production-headline (the
# README's production-like table), wine-bench, wine-check,
# test-counts, ci-timings (.ci/run's stages).
set -euo pipefail
. "$(dirname "$0")/common.sh"
export LC_ALL=C

results=$PERWINE_TOP/docs/results
docs=("$PERWINE_TOP/README.md" "$PERWINE_TOP"/docs/*.md "$PERWINE_TOP/wine/README.md")
views=(bench-6.1 bench-6.12 bench-compare bench-v2-6.1 bench-v2-6.12 bench-stock-6.1 bench-stock-6.12
	bench-production bench-headline production-headline wine-bench wine-headline wine-check
	test-counts ci-timings)

need() { [ -f "$1" ] || die "no result file $1 (make the run, then scripts/update-docs.sh --import)"; }

# meta FILE: the "key: value" metadata as one sentence.
meta() {
	need "$1"
	awk -F': ' '{ v[$1] = substr($0, length($1) + 3) }
		END {
			s = "Run of " v["date"] ", commit " v["commit"]
			if (v["kernel"] != "") s = s ", kernel " v["kernel"]
			s = s ", " v["accelerator"] ", " v["qemu"] "."
			print s
		}' "$1"
}

# bench_rows DIR: the CSV of make vm-bench as "name<TAB>cost<TAB>
# ratio<TAB>base<TAB>max<TAB>unit" (names and bases are quoted, and hold
# no quote).
bench_rows() {
	need "$1/bench-results.csv"
	awk -F'"' 'NR > 1 {
		split($3, a, ","); split($5, b, ",")
		print $2 "\t" a[2] "\t" a[3] "\t" $4 "\t" b[5] "\t" b[6]
	}' "$1/bench-results.csv"
}

render_bench() {
	local dir=$1
	need "$dir/bench-table.txt"
	echo "$(meta "$dir/meta.txt") \`make vm-bench\`: each row the minimum of its rounds, per call."
	echo
	bench_rows "$dir" | awk -F'\t' '
		NR == 1 { print "| row | " $6 " per call | max of rounds | ratio | compared with |"
			print "|---|--:|--:|--:|---|" }
		{ printf "| %s | %.1f | %.1f | %.3f | %s |\n", $1, $2, $5, $3, $4 }'
	echo
	echo "Targets of this run:"
	echo
	awk '/^targets \(this run\):/ { t = 1; next }
		t && /^  / { sub(/^  /, ""); gsub(/  +/, " "); print "- " $0; next }
		t { exit }' "$dir/bench-table.txt"
}

# costs DIR: "name<TAB>cost" for every row of that run.
costs() { bench_rows "$1" | awk -F'\t' '{ print $1 "\t" $2 }'; }

# all_costs DIR...: "K<TAB>name<TAB>cost", K the run's place from 0.
all_costs() {
	local k=0 d
	for d; do
		costs "$d" | sed "s/^/$k\t/"
		k=$((k + 1))
	done
}

# render_compare DIR_A DIR_B [LABEL_A LABEL_B]: two runs side by side.
render_compare() {
	render_columns "$1" "${3:-6.1}" "$2" "${4:-6.12}"
}

# render_columns DIR LABEL [DIR LABEL...]: runs side by side, the rows
# the docs discuss.
render_columns() {
	local args=("$@") i heading="| row |" sep="|---|"
	for ((i = 0; i < ${#args[@]}; i += 2)); do
		echo "${args[i + 1]}: $(meta "${args[i]}/meta.txt")"
		echo
		heading+=" ${args[i + 1]} |"
		sep+="--:|"
	done
	echo "Instructions per call; in brackets, over \`native sysinfo\` of the same run."
	echo
	echo "$heading"
	echo "$sep"
	local dirs=()
	for ((i = 0; i < ${#args[@]}; i += 2)); do dirs+=("${args[i]}"); done
	awk -F'\t' -v n=${#dirs[@]} '
		FILENAME == ARGV[1] { v[$1, $2] = $3; next }
		function cell(x, base, extra) {
			if (x == "") return "-"
			if (!extra) return sprintf("%.1f", x)
			return sprintf("%.1f (%+.1f)", x, x - base)
		}
		{
			extra = ($0 ~ /sysinfo$/ && $0 != "native sysinfo")
			line = "| " $0 " |"
			for (k = 0; k < n; k++)
				line = line " " cell(v[k, $0], v[k, "native sysinfo"], extra) " |"
			print line
		}' <(all_costs "${dirs[@]}") - <<-'EOF'
	native getppid
	native sysinfo
	perwine native sysinfo
	PER_WINE without configuration sysinfo
	perwine + VMA present sysinfo
	perwine + VMA + 10000 VMAs sysinfo
	SUD allowed sysinfo
	seccomp allow-all sysinfo
	perwine native + seccomp allow-all sysinfo
	SUD allowed + seccomp allow-all sysinfo
	W^X flips: native, per syscall
	W^X flips: perwine + VMA, per syscall
	trap: perwine selector
	trap: perwine VMA
	trap: perwine redirect
	trap: SUD
	trap: seccomp RET_TRAP
	switch: SUD prctl pair (off then on)
	EOF
}

# The README's table: what each mechanism adds to an untrapped syscall
# and what a trapped one costs, on 6.1, and, from the run on the
# unpatched kernel (DIR_STOCK), SUD as distributions ship it.
render_headline() {
	local dir=$1 stock=$2
	need "$stock/meta.txt"
	awk -F'\t' -v when="$(sed -n 's/^date: //p' "$dir/meta.txt")" \
		-v when2="$(sed -n 's/^date: //p' "$stock/meta.txt")" '
		FILENAME == ARGV[1] { c[$1] = $2; next }
		{ o[$1] = $2 }
		function extra(a, r) { return r in a ? sprintf("+%.0f", a[r] - a["native sysinfo"]) : "-" }
		function trap(a, r) { return r in a ? sprintf("%.0f", a[r]) : "-" }
		END {
			print "| guest instructions (6.1, icount, " when ") | perwine | SUD, this series | SUD, unpatched kernel (" when2 ") | a seccomp filter |"
			print "|---|--:|--:|--:|--:|"
			printf "| added to each untrapped `sysinfo` | %s | %s | %s | %s |\n", extra(c, "perwine native sysinfo"),
				extra(c, "SUD allowed sysinfo"), extra(o, "SUD allowed sysinfo"),
				extra(c, "seccomp allow-all sysinfo")
			printf "| one trapped syscall, round trip | %s (by `SIGSYS`: %s) | %s | %s | %s |\n",
				trap(c, "trap: perwine redirect"), trap(c, "trap: perwine selector"),
				trap(c, "trap: SUD"), trap(o, "trap: SUD"), trap(c, "trap: seccomp RET_TRAP")
		}' <(costs "$dir") <(costs "$stock")
}

# The README's production-like table: what each mechanism adds to an
# untrapped sysinfo on the guest config and the production-like one,
# both kernels (make vm-bench, make vm-bench-production).
render_production_headline() {
	local k r dirs=() labels=()
	for k in 6.1 6.12; do
		for r in "" -production; do
			need "$results/vm-bench-$k$r/meta.txt"
			dirs+=("$results/vm-bench-$k$r")
		done
	done
	local first last
	first=$(sed -n 's/^date: //p' "${dirs[0]}/meta.txt") last=$(sed -n 's/^date: //p' "${dirs[3]}/meta.txt")
	echo "Extra guest instructions over \`native sysinfo\` (icount; $first${last:+$([ "$last" = "$first" ] || echo " to $last")}):"
	echo
	echo "| | 6.1 guest config | 6.1 production-like | 6.12 guest config | 6.12 production-like |"
	echo "|---|--:|--:|--:|--:|"
	awk -F'\t' '
		FILENAME == ARGV[1] { v[$1, $2] = $3; next }
		function cell(k, row) {
			if (row == "W^X") {
				if (v[k, "W^X flips: perwine + VMA, per syscall"] == "") return "-"
				return sprintf("%+.0f", v[k, "W^X flips: perwine + VMA, per syscall"] - v[k, "W^X flips: native, per syscall"])
			}
			if (v[k, row] == "") return "-"
			return sprintf("%+.0f", v[k, row] - v[k, "native sysinfo"])
		}
		{
			split($0, f, "|"); label = f[1]; row = f[2]
			printf "| %s | %s | %s | %s | %s |\n", label, cell(0, row), cell(1, row), cell(2, row), cell(3, row)
		}' <(all_costs "${dirs[@]}") - <<-'EOF'
	perwine|perwine native sysinfo
	SUD, this series|SUD allowed sysinfo
	perwine, a `PROT_NOSYSCALL` mapping present|perwine + VMA present sysinfo
	perwine, a W^X JIT flipping such a page (per syscall)|W^X
	a seccomp filter|seccomp allow-all sysinfo
	perwine beside a seccomp filter|perwine native + seccomp allow-all sysinfo
	SUD beside a seccomp filter|SUD allowed + seccomp allow-all sysinfo
	EOF
}

render_wine_bench() {
	local dir=$1
	need "$dir/bench.tsv"
	echo "$(meta "$dir/meta.txt") \`make wine-bench\`: guest instructions per call, the best of 5 rounds."
	echo
	awk -F'\t' '
		NR == 1 { next }
		!($1 in seenm) { seenm[$1] = 1; m[++nm] = $1 }
		!($2 in seenr) { seenr[$2] = 1; r[++nr] = $2 }
		{ v[$1 SUBSEP $2] = $3 }
		END {
			line = "| row |"; sep = "|---|"
			for (i = 1; i <= nm; i++) { line = line " " m[i] " |"; sep = sep "--:|" }
			print line; print sep
			for (j = 1; j <= nr; j++) {
				line = "| " r[j] " |"
				for (i = 1; i <= nm; i++) {
					x = v[m[i] SUBSEP r[j]]
					line = line " " (x == "" ? "-" : x) " |"
				}
				print line
			}
		}' "$dir/bench.tsv"
}

# The README's Wine table: what each mechanism adds to two Win32 loops
# over Wine without dispatch, and what a trapped raw syscall costs.
render_wine_headline() {
	local dir=$1
	need "$dir/bench.tsv"
	need "$dir/meta.txt"
	awk -F'\t' -v date="$(sed -n 's/^date: //p' "$dir/meta.txt" | cut -c1-10)" '
		NR > 1 { v[$1 SUBSEP $2] = $3 }
		function cost(m, r) {
			if (v[m SUBSEP r] == "" || v["none" SUBSEP r] == "") return "-"
			return sprintf("%+.0f", v[m SUBSEP r] - v["none" SUBSEP r])
		}
		function trap(m, alt,   x) {
			x = v[m SUBSEP "NtGetCurrentProcessorNumber raw minus export"]
			if (x == "") return "-"
			x = sprintf("%.0f", x)
			if (alt != "" && v[alt SUBSEP "NtGetCurrentProcessorNumber raw minus export"] != "")
				x = x sprintf(" (by `SIGSYS`: %.0f)", v[alt SUBSEP "NtGetCurrentProcessorNumber raw minus export"])
			return x
		}
		END {
			w32 = "Win32 SetFilePointer+ReadFile"
			wx = "W^X JIT: VirtualProtect RW, write, RX, call, ReadFile"
			print "| guest instructions (Wine 11.10, 6.1, icount, " date ") | SUD, unpatched kernel | Proton'"'"'s seccomp filter | SUD, this series | perwine default | perwine drop-in | perwine VMA |"
			print "|---|--:|--:|--:|--:|--:|--:|"
			printf "| added to a Win32 loop (`SetFilePointer` + `ReadFile`, %.0f without dispatch) | %s | %s | %s | %s | %s | %s |\n",
				v["none" SUBSEP w32], cost("stock-sud", w32), cost("proton", w32), cost("off", w32),
				cost("auto", w32), cost("dropin", w32), cost("vma", w32)
			printf "| added to a W^X JIT loop (`VirtualProtect` RW, write, RX, call, `ReadFile`; %.0f) | %s | %s | %s | %s | %s | %s |\n",
				v["none" SUBSEP wx], cost("stock-sud", wx), cost("proton", wx), cost("off", wx),
				cost("auto", wx), cost("dropin", wx), cost("vma", wx)
			printf "| a trapped raw syscall (raw minus export) | %s | %s | %s | %s | %s | %s |\n",
				trap("stock-sud", ""), trap("proton", ""), trap("off", ""), trap("auto", ""),
				trap("dropin", "dropin-sigsys"), trap("vma", "vma-sigsys")
		}' "$dir/bench.tsv"
}

render_wine_check() {
	local dir=$1
	need "$dir/wine-check.tap"
	echo "$(meta "$dir/meta.txt") \`make wine-check\`: $(grep -cE '^ok ' "$dir/wine-check.tap") passed, $(grep -cE '^not ok ' "$dir/wine-check.tap") failed."
	echo
	echo "| # | result | point |"
	echo "|--:|---|---|"
	sed -nE 's/\|/\\|/g; s/^(not ok|ok) ([0-9]+) - (.*)$/| \2 | \1 | \3 |/p' "$dir/wine-check.tap"
}

render_test_counts() {
	local f=$PERWINE_TOP/tests/expected-results
	echo "TAP points per test, as pinned in \`tests/expected-results.6.1\` and \`.6.12\`"
	echo "(every guest run checks them):"
	echo
	echo "| test | 6.1 | 6.12 |"
	echo "|---|--:|--:|"
	awk '/^#/ { next }
		FILENAME == ARGV[1] { a[$1] = $2 }
		FILENAME == ARGV[2] { b[$1] = $2 }
		$1 != "total" && !($1 in s) { s[$1] = 1; o[++n] = $1 }
		END {
			for (i = 1; i <= n; i++)
				printf "| `%s` | %s | %s |\n", o[i], o[i] in a ? a[o[i]] : "-", o[i] in b ? b[o[i]] : "-"
			printf "| total | %s | %s |\n", a["total"], b["total"]
		}' "$f.6.1" "$f.6.12"
}

# .ci/run's out/ci-timings.txt: a header line, then "STAGE SECONDS".
render_ci_timings() {
	local f=$1/ci-timings.txt
	need "$f"
	echo "$(sed -n '1{s/^# //;s/;.*//;s/: stage, seconds$//;p;}' "$f"), minutes per stage (the caches as that run found them):"
	echo
	echo "| stage | minutes |"
	echo "|---|--:|"
	awk '!/^#/ { printf "| %s | %.1f |\n", $1 == "total" ? "**total**" : "`" $1 "`", $2 / 60 }' "$f"
}

render() {
	local view=$1 dir=${2:-}
	case $view in
	bench-6.1 | bench-6.12) render_bench "${dir:-$results/vm-$view}" ;;
	bench-compare) render_compare "$results/vm-bench-6.1" "$results/vm-bench-6.12" ;;
	bench-v2-6.1 | bench-v2-6.12)
		render_compare "$results/vm-bench-${view#bench-v2-}-v2" "$results/vm-bench-${view#bench-v2-}" \
			"series v2" "this series" ;;
	bench-stock-6.1 | bench-stock-6.12)
		render_compare "$results/vm-bench-${view#bench-stock-}-stock" "$results/vm-bench-${view#bench-stock-}" \
			"unpatched kernel" "this series" ;;
	bench-production)
		render_columns "$results/vm-bench-6.1" "6.1 guest config" \
			"$results/vm-bench-6.1-production" "6.1 production-like" \
			"$results/vm-bench-6.12" "6.12 guest config" \
			"$results/vm-bench-6.12-production" "6.12 production-like" ;;
	production-headline) render_production_headline ;;
	bench-headline) render_headline "$results/vm-bench-6.1" "$results/vm-bench-6.1-stock" ;;
	wine-bench | wine-check) "render_${view/-/_}" "${dir:-$results/$view}" ;;
	wine-headline) render_wine_headline "${dir:-$results/wine-bench}" ;;
	test-counts) render_test_counts ;;
	ci-timings) render_ci_timings "${dir:-$results/ci}" ;;
	*) die "no view '$view' (views: ${views[*]})" ;;
	esac
}

# import SRC DEST FILE...: a run's result files, when that run left them.
import() {
	local src=$1 dest=$results/$2 f
	shift 2
	for f; do [ -f "$src/$f" ] || return 0; done
	mkdir -p "$dest"
	for f; do cp "$src/$f" "$dest/"; done
	say "docs/results/${dest##*/} <- ${src#"$PERWINE_TOP"/}"
}

# fill FILE OUT: FILE with every block rendered anew.
fill() {
	awk -v tmp="$tmp" '
		/^<!-- generated: [a-z0-9.-]+ -->$/ {
			print; view = $3; file = tmp "/" view ".md"
			while ((r = getline line < file) > 0) print line
			if (r < 0) { print FILENAME ": no view " view > "/dev/stderr"; exit 2 }
			close(file); skip = 1; next
		}
		skip && /^<!-- end generated -->$/ { skip = 0 }
		!skip { print }
		END { if (skip) { print FILENAME ": a block has no end line" > "/dev/stderr"; exit 2 } }
	' "$1" >"$2"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mode=fill
case "${1:-}" in
--render) [ $# -ge 2 ] || die "usage: $0 --render VIEW [DIR]"; render "$2" "${3:-}"; exit ;;
--check) mode=check ;;
--import)
	import "$PERWINE_TOP/out/results/bench" vm-bench-6.1 bench-results.csv bench-table.txt meta.txt
	import "$PERWINE_TOP/out/6.12/results/bench" vm-bench-6.12 bench-results.csv bench-table.txt meta.txt
	import "$PERWINE_TOP/out/results/bench-production" vm-bench-6.1-production bench-results.csv \
		bench-table.txt meta.txt cpu-vulnerabilities.txt
	import "$PERWINE_TOP/out/6.12/results/bench-production" vm-bench-6.12-production bench-results.csv \
		bench-table.txt meta.txt cpu-vulnerabilities.txt
	import "$PERWINE_TOP/out/results/bench-stock" vm-bench-6.1-stock bench-results.csv bench-table.txt meta.txt
	import "$PERWINE_TOP/out/6.12/results/bench-stock" vm-bench-6.12-stock bench-results.csv bench-table.txt \
		meta.txt
	import "$PERWINE_TOP/out/results/wine-bench" wine-bench bench.tsv meta.txt
	import "$PERWINE_TOP/out/results/wine-check" wine-check wine-check.tap meta.txt
	import "$PERWINE_TOP/out" ci ci-timings.txt
	;;
"") ;;
*) die "usage: $0 [--import|--check|--render VIEW [DIR]]" ;;
esac

# Only the views some document uses are rendered (each needs its files).
used=$(grep -ho '^<!-- generated: [a-z0-9.-]* -->$' "${docs[@]}" | awk '{ print $3 }' | sort -u)
for v in $used; do
	render "$v" >"$tmp/$v.md"
done

n=0 bad=0
for f in "${docs[@]}"; do
	grep -q '^<!-- generated: ' "$f" || continue
	fill "$f" "$tmp/out"
	rel=${f#"$PERWINE_TOP"/}
	if [ $mode = fill ]; then
		cmp -s "$f" "$tmp/out" || { cp "$tmp/out" "$f"; say "updated $rel"; }
		continue
	fi
	for v in $(grep -o '^<!-- generated: [a-z0-9.-]* -->$' "$f" | awk '{ print $3 }'); do
		n=$((n + 1))
		# the block as the file has it, against the rendered view
		if awk -v v="$v" '$0 == "<!-- generated: " v " -->" { b = 1; next }
			b && /^<!-- end generated -->$/ { exit } b' "$f" | cmp -s - "$tmp/$v.md"; then
			echo "ok $n - $rel: block $v is what its result files give"
		else
			echo "not ok $n - $rel: block $v differs from its result files (scripts/update-docs.sh)"
			bad=$((bad + 1))
		fi
	done
done
if [ $mode = check ]; then
	n=$((n + 1))
	if series_rst "$PERWINE_TOP/kernel/patches/6.1" | cmp -s - "$PERWINE_TOP/docs/perwine.rst"; then
		echo "ok $n - docs/perwine.rst is what kernel/patches/6.1 adds"
	else
		echo "not ok $n - docs/perwine.rst differs from kernel/patches/6.1's (kernel/format-series.sh writes it)"
		bad=$((bad + 1))
	fi
	echo "1..$n"
	echo "$((n - bad)) passed, $bad failed"
	[ $bad -eq 0 ]
fi

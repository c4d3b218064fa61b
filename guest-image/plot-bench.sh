#!/usr/bin/env bash
# Draw the benchmark's CSV (from make vm-bench) as PNG bar charts: the
# cost per call of every row on a log scale (PNG), and next to it
# (PNG with -overhead before .png) the extra cost per native syscall of
# each way of catching syscalls over plain sysinfo, with SUD and
# seccomp as reference bars.  The unit (guest instructions under
# icount, else ns) comes from the CSV.
#
#   guest-image/plot-bench.sh CSV PNG
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

[ $# -eq 2 ] || die "usage: $0 CSV PNG"
csv=$1 png=$2
[ -s "$csv" ] || die "no benchmark results in $csv"
need_packages gnuplot-nox
title=$(awk -F, 'NR == 2 { print "perwine-bench: kernel " $6 ", " $5 }' "$csv")
unit=$(awk -F, 'NR == 2 { print ($9 == "instructions" ? "guest instructions" : "ns") }' "$csv")
overhead_png=${png%.png}-overhead.png
overhead_dat=$(mktemp)
trap 'rm -f "$overhead_dat"' EXIT
# The native-path rows, as extra cost over native sysinfo.
awk -F, '
	{ name = $1; gsub(/"/, "", name) }
	name == "native sysinfo" { base = $2 }
	name ~ /^(perwine native sysinfo|perwine \+ VMA present sysinfo|perwine \+ VMA, 2 call sites.*|SUD allowed sysinfo|seccomp .* sysinfo)$/ {
		n++; row[n] = name; cost[n] = $2 }
	END { for (i = 1; i <= n; i++) printf "\"%s\",%.1f,%s\n", row[i], cost[i] - base,
		(row[i] ~ /^perwine/ ? "0x3b6ea8" : "0xa0a0a0") }' "$csv" > "$overhead_dat"
gnuplot <<EOT
set terminal pngcairo size 1200,700 font ",9"
set output "$png"
set datafile separator ","
set title "$title ($unit per call, log scale; label: ratio to its native row)"
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.8
set logscale y
set yrange [1:*]
set ylabel "$unit per call"
set xtics rotate by -40 left noenhanced
set key off
set bmargin 13
set rmargin 14
set grid ytics
plot "$csv" every ::1 using 2:xticlabels(1) lc rgb "#3b6ea8", \
     "" every ::1 using 0:(\$2 * 1.15):(sprintf("%.2fx", \$3)) with labels font ",7"
EOT
gnuplot <<EOT
set terminal pngcairo size 1000,600 font ",10"
set output "$overhead_png"
set datafile separator ","
set title "$title: extra $unit per native syscall over plain sysinfo (grey: SUD and seccomp, for reference)"
set style fill solid 0.8 border -1
set boxwidth 0.7
set yrange [0:*]
set ylabel "extra $unit per syscall"
set xtics rotate by -30 left noenhanced
set key off
set bmargin 10
set grid ytics
plot "$overhead_dat" using 0:2:3:xticlabels(1) with boxes lc rgb variable, \
     "" using 0:(\$2 + 2):(sprintf("%+.0f", \$2)) with labels font ",9"
EOT
say "benchmark charts: $png, $overhead_png"

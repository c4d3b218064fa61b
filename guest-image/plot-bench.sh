#!/usr/bin/env bash
# Draw the benchmark's CSV (from make vm-bench) as a PNG bar chart:
# ns per call of every row, on a log scale, titled with the kernel and
# the accelerator the guest ran under.
#
#   guest-image/plot-bench.sh CSV PNG
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

[ $# -eq 2 ] || die "usage: $0 CSV PNG"
csv=$1 png=$2
[ -s "$csv" ] || die "no benchmark results in $csv"
need_packages gnuplot-nox
title=$(awk -F, 'NR == 2 { print "perwine-bench: kernel " $6 ", " $5 }' "$csv")
gnuplot <<EOT
set terminal pngcairo size 1200,700 font ",9"
set output "$png"
set datafile separator ","
set title "$title (ns per call, log scale; label: ratio to its native row)"
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.8
set logscale y
set yrange [1:*]
set ylabel "ns per call"
set xtics rotate by -40 left noenhanced
set key off
set bmargin 13
set rmargin 14
set grid ytics
plot "$csv" every ::1 using 2:xticlabels(1) lc rgb "#3b6ea8", \
     "" every ::1 using 0:(\$2 * 1.15):(sprintf("%.2fx", \$3)) with labels font ",7"
EOT
say "benchmark chart: $png"

#!/bin/sh
# perwine-bench once with few calls: it runs, fills every row and its CSV,
# and its numbers are sane.  Never a timing assertion: only that every
# row measured something and that each SIGSYS trap row costs more than
# a native syscall (a trap is a syscall plus a signal delivery), each
# redirect row less than SUD's trap.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require_perwine
bench=${top_builddir:-.}/tests/bench/perwine-bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tap_plan 6

"$bench" 400 3 "$tmp/bench.csv" > "$tmp/out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/out"
tap_check "perwine-bench 400 3 exits 0 (got $rc)" test "$rc" -eq 0
rows=$(grep -c '^"' "$tmp/bench.csv")
tap_check "the CSV has 39 rows (got $rows)" test "$rows" -eq 39
# Each check below also fails on an empty or truncated CSV.  A row's
# name is quoted and may hold a comma: the fields after it are split.
tap_check "every row has a positive cost per call and ratio" \
	awk -F'"' 'NR > 1 { n++; split($3, a, ","); if (!(a[2] > 0 && a[3] > 0)) bad = 1 }
		END { exit bad || n < 39 }' "$tmp/bench.csv"
native=$(awk -F, '$1 == "\"native getppid\"" { print $2 }' "$tmp/bench.csv")
sud=$(awk -F, '$1 == "\"trap: SUD\"" { print $2 }' "$tmp/bench.csv")
# A trap by SIGSYS is a syscall plus a signal delivery.  A redirected one
# runs no syscall body and no signal: it is only known to beat SUD's (on
# a debug kernel it beats a plain getppid too).
tap_check "every SIGSYS trap row is slower than native getppid (${native:-no such row}), the redirect rows faster than SUD's trap (${sud:-no such row})" \
	awk -F'"' -v n="$native" -v s="$sud" 'n > 0 && s > 0 && $2 ~ /^trap:/ {
			t++; split($3, a, ",")
			if ($2 == "trap: perwine redirect" || $2 == "trap: libperwine dispatcher") { r++; if (!(a[2] < s)) bad = 1 }
			else if (!(a[2] > n)) bad = 1
		}
		END { exit bad || t < 7 || r != 2 }' "$tmp/bench.csv"
tap_check "the table reports the targets" grep -q '^targets (this run):$' "$tmp/out"
tap_check "the table names the accelerator and kernel" \
	grep -Eq "^perwine-bench: kernel $(uname -r), accel [a-z]+," "$tmp/out"

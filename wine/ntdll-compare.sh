#!/usr/bin/env bash
# Judge whether one of Wine's conformance tests (ntdll's, or another
# module's) gave the same results in every perwine mode, from the logs
# wine/wine-check.sh leaves: ROUNDS runs per mode,
# RESULTS/MODE/MODULE-TEST.rN.txt (the test's output) and .status (its
# exit status).
#
#   wine/ntdll-compare.sh [--expected FILE] [--pins-to OUT] RESULTS [MODULE:]TEST MODE...
#                                                 (MODULE: ntdll; --pins-to
#                                                 appends the run's results
#                                                 to OUT as --pin prints them)
#   wine/ntdll-compare.sh --pin RESULTS [MODULE:]TEST MODE...
#                                                 only print the run's results
#                                                 as lines of an expected FILE
#   wine/ntdll-compare.sh --ending LOG [MODULE:]TEST      how one run
#                                                 (LOG.txt, LOG.status) ended
#
# A failed check is known by its place (file.c:line; the message often
# holds addresses or timings, and virtual.c:1513, in a loop, fails for
# different zero-bit values from run to run).  Under TCG some checks
# fail in one run and pass in the next, in every mode, stock SUD
# included (measured 2026-12-04: info.c:2777, WaitForDebugEvent's
# timeout), and a test can abort in one round (2026-12-06: glibc's
# malloc in ntdll's virtual test, on the unpatched kernel too).  So a mode
# differs only by what it does in every round and another mode in none:
#   - a check that failed in every round of mode A and in no round of B;
#   - how the test ended (the count of checks executed, or the exit
#     status when it stopped before its summary): no ending in common.
#   - a check that failed in every round of A and of B, in every round of
#     A more than twice as often as in any round of B (a loop's check
#     failing 30 times against 3; virtual.c:1513's 9 to 12 are noise).
# Checks that fail in some rounds only are flaky: counted, listed in
# RESULTS/MODULE-TEST.flaky, not compared.  The modes must be off (stock
# SUD, the reference) and at least two others, and a test that does not
# exist ("Fatal: test 'X' does not exist.") has no verdict.
#
# Modes that agree can still all be wrong (mode off runs the patched Wine
# too), so with --expected each mode is also held to what an earlier run
# pinned (wine/expected-results, written by --pin; tab-separated lines
# "TEST MODES KIND VALUE", MODES a comma-separated list or "*"):
#   ending  how the test may end in those modes, one line each;
#   failed  "CHECK LO HI": a check that failed in every round there, LO to
#           HI times a round;
#   flaky   CHECK: failed in some rounds only, in any mode; not compared.
# A mode differs from its pins by no round ending as pinned (a round that
# aborts, as above, is not enough), by a check failing in every round
# that is not pinned, by a pinned check failing in no round, by a round
# whose count is more than twice HI or under half LO, and by a test or
# mode with no pinned ending.
# Prints one line, "same: DETAILS" or "differ: DETAILS", and writes what
# differs to RESULTS/MODULE-TEST.differences.  Exit 0 same, 1 differ,
# 2 when logs are missing, the modes are not enough or the test did not
# run.
set -euo pipefail
export LC_ALL=C

# split_test [MODULE:]TEST: sets t (the test's name, as its summary line
# gives it), stem (MODULE-TEST, the logs' name) and key (MODULE:TEST, its
# name in an expected file).
split_test() {
	case $1 in
	*:*) t=${1#*:} stem=${1%%:*}-${1#*:} ;;
	*) t=$1 stem=ntdll-$1 ;;
	esac
	key=${stem%%-*}:$t
}

# The test's own summary (include/wine/test.h, run_test()):
#   PID:TEST:[ELAPSED] N tests executed (T marked as todo, F as flaky, X failures), S skipped.
# The last one is the parent's when the test ran to its end, and then the
# exit status is its failure count (at most 255), which flaky checks
# move: that ending is "N executed".  Otherwise the test stopped early
# (children print summaries too), and the exit status is what it ends on.
ending() {
	local line n x rc
	rc=$(cat "$1.status")
	line=$(sed -nE "s/^[0-9a-f]+:$t:[^ ]* ([0-9]+) tests executed \(.* ([0-9]+) failures?\).*/\1 \2/p" "$1.txt" | tail -n 1)
	if [ -n "$line" ]; then
		read -r n x <<<"$line"
		[ "$x" -le 255 ] || x=255
		if [ "$rc" -eq "$x" ]; then
			echo "$n executed"
			return
		fi
	fi
	echo "exit $rc before its summary"
}

if [ "${1:-}" = --ending ]; then
	[ $# -eq 3 ] || { echo "usage: $0 --ending LOG TEST" >&2; exit 2; }
	split_test "$3"
	ending "$2"
	exit 0
fi
expected= pin=0 pins_to=
while :; do
	case ${1:-} in
	--expected)
		[ $# -ge 2 ] && [ -f "$2" ] || { echo "$0: --expected needs a file, not '${2:-}'" >&2; exit 2; }
		expected=$2
		shift 2
		;;
	--pins-to)
		[ $# -ge 2 ] || { echo "$0: --pins-to needs a file" >&2; exit 2; }
		pins_to=$2
		shift 2
		;;
	--pin) pin=1; shift ;;
	*) break ;;
	esac
done
[ $# -ge 3 ] || { echo "usage: $0 [--expected FILE] [--pins-to OUT] | --pin RESULTS TEST MODE..." >&2; exit 2; }
results=$1
split_test "$2"
shift 2
modes=("$@")
[[ " ${modes[*]} " == *" off "* ]] && [ ${#modes[@]} -ge 3 ] ||
	{ echo "$0: the modes must be off and at least two others, not: ${modes[*]}" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for m in "${modes[@]}"; do
	shopt -s nullglob
	logs=("$results/$m/$stem".r*.txt)
	shopt -u nullglob
	[ ${#logs[@]} -gt 0 ] || { echo "$0: no $results/$m/$stem.r*.txt" >&2; exit 2; }
	: >"$work/$m.endings"
	for f in "${logs[@]}"; do
		f=${f%.txt}
		if grep -q "^Fatal: test '$t' does not exist" "$f.txt"; then
			echo "$0: $t did not run: $f.txt says it does not exist" >&2
			exit 2
		fi
		ending "$f" >>"$work/$m.endings"
		# each failed check and how many times it failed in this round
		grep -oE '^[A-Za-z0-9_]+\.c:[0-9]+: Test (failed|succeeded inside todo)' "$f.txt" |
			sed 's/: Test.*//' | sort | uniq -c | awk '{ print $2, $1 }' >"$f.counts" || true
		cut -d' ' -f1 "$f.counts" >"$f.checks"
	done
	sort -u -o "$work/$m.endings" "$work/$m.endings"
	# Rounds each check failed in: stable, failed in every round; seen,
	# in any round.
	cat "$results/$m/$stem".r*.checks | sort | uniq -c >"$work/$m.counts"
	awk -v n=${#logs[@]} '$1 == n { print $2 }' "$work/$m.counts" >"$work/$m.stable"
	awk '{ print $2 }' "$work/$m.counts" >"$work/$m.seen"
	# The stable checks' fewest and most failures in a round, "CHECK LO HI".
	cat "$results/$m/$stem".r*.counts | awk -v n=${#logs[@]} '
		{ rounds[$1]++; if (!($1 in lo) || $2 < lo[$1]) lo[$1] = $2; if ($2 > hi[$1]) hi[$1] = $2 }
		END { for (c in rounds) if (rounds[c] == n) print c, lo[c], hi[c] }' |
		sort -k1,1 >"$work/$m.range"
	echo ${#logs[@]} >"$work/$m.rounds"
done

diffs=$results/$stem.differences
: >"$diffs"
for a in "${modes[@]}"; do
	for b in "${modes[@]}"; do
		[ "$a" != "$b" ] || continue
		comm -23 "$work/$a.stable" "$work/$b.seen" | sed "s/^/failed in every $a round, in no $b round: /" >>"$diffs"
		join "$work/$a.range" "$work/$b.range" | awk -v a="$a" -v b="$b" '$2 > 2 * $5 {
			print "failed " $2 "-" $3 " times in every " a " round, " $4 "-" $5 " in every " b " round: " $1 }' >>"$diffs"
		if [ -z "$(comm -12 "$work/$a.endings" "$work/$b.endings")" ] && [[ "$a" < "$b" ]]; then
			echo "ended differently: $a: $(paste -sd/ "$work/$a.endings"); $b: $(paste -sd/ "$work/$b.endings")" >>"$diffs"
		fi
	done
done

# Failed in some rounds of a mode, not in all: flaky there.
for m in "${modes[@]}"; do comm -23 "$work/$m.seen" "$work/$m.stable"; done | sort -u >"$work/some.rounds"

# write_pins: this run's results as lines of an expected file.  Each
# ending with the modes that had it; each check that failed in every
# round of some modes with those modes, its fewest and most failures
# there; the checks flaky in any mode.
write_pins() {
	for m in "${modes[@]}"; do sed "s/^/$m\t/" "$work/$m.endings"; done |
		awk -F'\t' -v k="$key" '{ ms[$2] = ms[$2] (ms[$2] == "" ? "" : ",") $1 }
			END { for (e in ms) print k "\t" ms[e] "\tending\t" e }' | sort
	for m in "${modes[@]}"; do sed "s/^/$m /" "$work/$m.range"; done |
		awk -v k="$key" '{ c = $2
				ms[c] = ms[c] (ms[c] == "" ? "" : ",") $1
				if (!(c in lo) || $3 < lo[c]) lo[c] = $3
				if ($4 > hi[c]) hi[c] = $4 }
			END { for (c in ms) print k "\t" ms[c] "\tfailed\t" c " " lo[c] " " hi[c] }' | sort -t: -k1,1 -k3,3n
	sed "s/^/$key\t*\tflaky\t/" "$work/some.rounds" | sort -t: -k1,1 -k3,3n
}
if [ $pin -eq 1 ]; then
	write_pins
	exit 0
fi
[ -z "$pins_to" ] || write_pins >>"$pins_to"

# Each mode against its pins.
if [ -n "$expected" ]; then
	for m in "${modes[@]}"; do
		awk -F'\t' -v k="$key" -v m="$m" '!/^#/ && $1 == k && ($2 == "*" || index("," $2 ",", "," m ",")) {
			print $3 "\t" $4 }' "$expected" >"$work/$m.pins"
		awk -F'\t' '$1 == "ending" { print $2 }' "$work/$m.pins" | sort -u >"$work/$m.pin-endings"
		awk -F'\t' '$1 == "flaky" { print $2 }' "$work/$m.pins" | sort -u >"$work/$m.pin-flaky"
		awk -F'\t' '$1 == "failed" { print $2 }' "$work/$m.pins" | sort -k1,1 |
			join -v1 - "$work/$m.pin-flaky" >"$work/$m.pin-failed"
		cut -d' ' -f1 "$work/$m.pin-failed" >"$work/$m.pin-checks"
		if [ ! -s "$work/$m.pin-endings" ]; then
			echo "no ending pinned for $key in mode $m (${expected##*/})"
		elif [ -z "$(comm -12 "$work/$m.endings" "$work/$m.pin-endings")" ]; then
			echo "mode $m ended as no pin says: $(paste -sd/ "$work/$m.endings") (pinned: $(paste -sd/ "$work/$m.pin-endings"))"
		fi >>"$diffs"
		sort -u "$work/$m.pin-checks" "$work/$m.pin-flaky" | comm -23 "$work/$m.stable" - |
			sed "s/^/failed in every $m round, not pinned: /" >>"$diffs"
		comm -23 "$work/$m.pin-checks" "$work/$m.seen" |
			sed "s/^/pinned as failing in mode $m, failed in no round: /" >>"$diffs"
		cat "$results/$m/$stem".r*.counts | sort -k1,1 | join - "$work/$m.pin-failed" |
			awk -v m="$m" '$2 > 2 * $4 || 2 * $2 < $3 {
				print "failed " $2 " times in a " m " round, pinned " $3 "-" $4 ": " $1 }' >>"$diffs"
	done
fi

# Flaky: seen somewhere, failed not in every round of every mode, and no
# difference between modes.
cat "$work"/*.seen | sort -u >"$work/all.seen"
cat "$work"/*.stable | sort | uniq -c | awk -v n=${#modes[@]} '$1 == n { print $2 }' >"$work/all.stable"
comm -23 "$work/all.seen" "$work/all.stable" >"$results/$stem.flaky"
nflaky=$(wc -l <"$results/$stem.flaky")

details=
for m in "${modes[@]}"; do
	details+=" $m: $(paste -sd/ "$work/$m.endings"), $(wc -l <"$work/$m.stable") checks failed in all $(cat "$work/$m.rounds") rounds;"
done
details="${details%;}; $nflaky flaky"
[ -z "$expected" ] || details+="; held to ${expected##*/}"
[ "$nflaky" -eq 0 ] || details+=" ($(head -n 5 "$results/$stem.flaky" | paste -sd' ')$([ "$nflaky" -le 5 ] || echo ' ...'))"
if [ -s "$diffs" ]; then
	echo "differ:$details; $(wc -l <"$diffs") differences, first: $(head -n 1 "$diffs")"
	exit 1
fi
echo "same:$details"

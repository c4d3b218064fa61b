#!/usr/bin/env bash
# The verdict of wine/ntdll-compare.sh on made-up logs: it must call
# modes that differ in what they do every time "differ", and one-off
# failures "same" (flaky).  TAP, then "N passed, N failed".
#
#   wine/tests/ntdll-compare-test.sh
set -euo pipefail
compare=$(cd "$(dirname "$0")/.." && pwd)/ntdll-compare.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0 failed=0

# log DIR MODE ROUND STATUS|n SUMMARY_COUNT|- FAILED_LINE...
# (n: the exit status a finished test has, its failure count); the
# logs are $stem's (MODULE-TEST)
log() {
	local dir=$1 mode=$2 round=$3 status=$4 count=$5 f
	shift 5
	mkdir -p "$dir/$mode"
	f=$dir/$mode/$stem.r$round
	{
		echo "virtual.c:10: Test marked todo: fine"
		for line in "$@"; do echo "virtual.c:$line: Test failed: got 0x$RANDOM"; done
		echo "0100:virtual: 5 tests executed (0 marked as todo, 0 as flaky, 1 failure), 0 skipped."
		[ "$count" = - ] || echo "0020:virtual:1.2 $count tests executed (0 marked as todo, 0 as flaky, $# failures), 0 skipped."
	} >"$f.txt"
	[ "$status" != n ] || status=$#
	echo "$status" >"$f.status"
}

# expect NAME WANT_EXIT WANT_WORD DIR: the verdict on test $spec (held
# to the expected file $pins, if set)
expect() {
	local name=$1 want=$2 word=$3 dir=$4 out rc=0
	n=$((n + 1))
	out=$("$compare" ${pins:+--expected "$pins"} "$dir" "$spec" off dropin vma 2>&1) || rc=$?
	if [ "$rc" -eq "$want" ] && [[ "$out" == "$word"* ]]; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name (exit $rc: $out)"
		failed=$((failed + 1))
	fi
}

stem=ntdll-virtual spec=virtual
d=$work/same
for m in off dropin vma; do for r in 1 2; do log "$d" "$m" "$r" n 100 20 30; done; done
expect "the same failures in every round and mode: same" 0 same: "$d"

d=$work/flaky
for m in off dropin vma; do for r in 1 2; do log "$d" "$m" "$r" n 100 20; done; done
log "$d" vma 2 n 100 20 99
log "$d" off 1 n 100 20 99
expect "a check failing in some rounds only: same, counted flaky" 0 same: "$d"
n=$((n + 1))
if [ "$(cat "$d/ntdll-virtual.flaky")" = virtual.c:99 ]; then
	echo "ok $n - the flaky check is listed"
else
	echo "not ok $n - the flaky check is listed (got: $(cat "$d/ntdll-virtual.flaky"))"
	failed=$((failed + 1))
fi

d=$work/stable-extra
for m in off dropin vma; do for r in 1 2; do log "$d" "$m" "$r" n 100 20; done; done
log "$d" vma 1 n 100 20 77
log "$d" vma 2 n 100 20 77
expect "a check failing in every round of one mode and none of another: differ" 1 differ: "$d"

d=$work/ending
for m in off dropin; do for r in 1 2; do log "$d" "$m" "$r" n 100 20; done; done
for r in 1 2; do log "$d" vma "$r" 5 - 20; done
expect "one mode crashes before its summary every time: differ" 1 differ: "$d"

d=$work/ending-flaky
for m in off dropin vma; do for r in 1 2; do log "$d" "$m" "$r" n 100 20; done; done
log "$d" dropin 2 5 - 20
expect "a crash in one round of one mode, a common ending left: same" 0 same: "$d"

d=$work/missing
for m in off dropin; do log "$d" "$m" 1 n 100; done
expect "a mode without logs: an error, not a verdict" 2 "" "$d"

# times LINE N: LINE N times, as a check in a loop fails
times() { local i; for i in $(seq "$2"); do echo "$1"; done; }

d=$work/count
for m in off dropin; do for r in 1 2; do log "$d" "$m" "$r" n 100 20 $(times 1513 3); done; done
for r in 1 2; do log "$d" vma "$r" n 100 20 $(times 1513 30); done
expect "a check failing 3 times in every round of two modes, 30 in the third: differ" 1 differ: "$d"

d=$work/count-noise
for r in 1 2; do log "$d" off "$r" n 100 20 $(times 1513 $((8 + r))); done
for m in dropin vma; do for r in 1 2; do log "$d" "$m" "$r" n 100 20 $(times 1513 12); done; done
expect "a check failing 9 and 10 times in one mode, 12 in the others (virtual.c:1513's noise): same" 0 same: "$d"

d=$work/no-such-test
for m in off dropin vma; do
	for r in 1 2; do
		mkdir -p "$d/$m"
		echo "Fatal: test 'virtual' does not exist." >"$d/$m/$stem.r$r.txt"
		echo 1 >"$d/$m/$stem.r$r.status"
	done
done
expect "a test that does not exist, the same in every mode: an error, not a verdict" 2 "" "$d"

d=$work/same
n=$((n + 1))
rc=0
out=$("$compare" "$d" "$spec" off dropin 2>&1) || rc=$?
if [ "$rc" -eq 2 ]; then
	echo "ok $n - two modes only: an error, not a verdict"
else
	echo "not ok $n - two modes only: an error, not a verdict (exit $rc: $out)"
	failed=$((failed + 1))
fi

# Another module's test: its own logs, judged alike.
stem=kernel32-virtual spec=kernel32:virtual
d=$work/kernel32
for m in off dropin vma; do for r in 1 2; do log "$d" "$m" "$r" n 100 20; done; done
log "$d" dropin 1 n 100 20 77
log "$d" dropin 2 n 100 20 77
expect "kernel32:virtual, a stable extra failure in one mode: differ" 1 differ: "$d"
spec=virtual
expect "ntdll's virtual asked of kernel32's logs: an error, not a verdict" 2 "" "$d"

# Pins: every mode agrees, and is held to what an earlier run pinned.
stem=ntdll-virtual spec=virtual
pins=$work/expected
d=$work/pinned
for m in off dropin vma; do for r in 1 2; do log "$d" "$m" "$r" n 100 20 $(times 1513 12); done; done
log "$d" dropin 2 n 100 20 $(times 1513 12) 99
"$compare" --pin "$d" "$spec" off dropin vma >"$pins"
n=$((n + 1))
want=$(printf 'ntdll:virtual\toff,dropin,vma\tending\t100 executed
ntdll:virtual\toff,dropin,vma\tfailed\tvirtual.c:20 1 1
ntdll:virtual\toff,dropin,vma\tfailed\tvirtual.c:1513 12 12
ntdll:virtual\t*\tflaky\tvirtual.c:99')
if [ "$(cat "$pins")" = "$want" ]; then
	echo "ok $n - --pin writes each ending, stable check and flaky check once, with its modes"
else
	echo "not ok $n - --pin writes each ending, stable check and flaky check once, with its modes (got: $(cat "$pins"))"
	failed=$((failed + 1))
fi
expect "the run held to its own pins: same" 0 same: "$d"
n=$((n + 1))
: >"$work/pins-to"
if "$compare" --expected "$pins" --pins-to "$work/pins-to" "$d" "$spec" off dropin vma >/dev/null &&
	[ "$(cat "$work/pins-to")" = "$want" ]; then
	echo "ok $n - --pins-to appends, beside the comparison, what --pin prints"
else
	echo "not ok $n - --pins-to appends, beside the comparison, what --pin prints (got: $(cat "$work/pins-to"))"
	failed=$((failed + 1))
fi

d=$work/pin-new-failure
for m in off dropin vma; do for r in 1 2; do log "$d" "$m" "$r" n 100 20 $(times 1513 12) 77; done; done
expect "a check failing in every round of every mode, not pinned: differ" 1 differ: "$d"

d=$work/pin-fixed
for m in off dropin vma; do for r in 1 2; do log "$d" "$m" "$r" n 100 $(times 1513 12); done; done
expect "a pinned check failing in no round of any mode: differ" 1 differ: "$d"

d=$work/pin-ending
for m in off dropin vma; do for r in 1 2; do log "$d" "$m" "$r" 5 - 20 $(times 1513 12); done; done
expect "every mode stops before its summary, as no pin says: differ" 1 differ: "$d"

d=$work/pin-ending-flaky
for m in off dropin vma; do for r in 1 2; do log "$d" "$m" "$r" n 100 20 $(times 1513 12); done; done
log "$d" vma 2 134 - 20
expect "one round stops early, the other ends as pinned: same" 0 same: "$d"

d=$work/pin-count
for m in off dropin vma; do for r in 1 2; do log "$d" "$m" "$r" n 100 20 $(times 1513 30); done; done
expect "a pinned check failing 30 times a round, pinned 12-12: differ" 1 differ: "$d"

d=$work/pin-count-noise
for m in off dropin vma; do for r in 1 2; do log "$d" "$m" "$r" n 100 20 $(times 1513 9) 99; done; done
expect "9 failures a round pinned 12-12, a flaky check failing every round: same" 0 same: "$d"

d=$work/pinned
grep -v vma "$pins" >"$work/expected.no-vma"
pins=$work/expected.no-vma
expect "no pin for one mode: differ" 1 differ: "$d"
spec=exception
for m in off dropin vma; do for r in 1 2; do cp "$d/$m/ntdll-virtual.r$r.txt" "$d/$m/ntdll-exception.r$r.txt"; cp "$d/$m/ntdll-virtual.r$r.status" "$d/$m/ntdll-exception.r$r.status"; done; done
sed -i 's/:virtual:/:exception:/' "$d"/*/ntdll-exception.r*.txt
pins=$work/expected
expect "no pin for the test: differ" 1 differ: "$d"
unset pins

echo "1..$n"
echo "$((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]

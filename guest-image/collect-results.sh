#!/usr/bin/env bash
# Bring the guest's results back from its disk image (debugfs reads the
# ext4 image directly, no mount), fail on any kernel log error, and print
# the summary line "N passed, N failed" counted from the TAP results.
#
#   guest-image/collect-results.sh MODE IMAGE
# PERWINE_RUN_NAME (default MODE) names the results dir, as for boot-guest.sh.
# Exits non-zero when a test failed, the guest did not finish its job,
# its kernel log has a BUG/WARNING/Oops/KASAN/UBSAN/lockdep/RCU-stall/
# hung-task line or a call trace, or the kernel ended tainted.
# In run mode it prints the command's output instead of a summary and
# exits with the command's status.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
export LC_ALL=C

[ $# -eq 2 ] || die "usage: $0 MODE IMAGE"
mode=$1 image=$2
need_packages e2fsprogs
name=${PERWINE_RUN_NAME:-$mode}
dest=$PERWINE_OUT/results/$name
serial=$PERWINE_OUT/logs/guest-$name.log
rm -rf "$dest" "$PERWINE_OUT/results/results"
mkdir -p "$PERWINE_OUT/results"
if debugfs -R "rdump /results $PERWINE_OUT/results" "$image" >/dev/null 2>&1 &&
	[ -d "$PERWINE_OUT/results/results" ]; then
	mv "$PERWINE_OUT/results/results" "$dest"
else
	say "no /results in $image: the guest never got to run its job"
	mkdir -p "$dest"
fi
say "guest results: $dest"

bad=0
status=$(cat "$dest/status" 2>/dev/null || echo "did-not-finish")
if [ "$status" != ok ]; then
	say "guest job '$mode' ended with status '$status'; see $serial and $dest"
	bad=1
fi

# The kernel must never complain, whatever the tests made it do: every
# kind of report the kernel prints with a backtrace or as a warning
# (a BUG() in signal delivery only kills the task, so only the log
# shows it), and a taint at the end of the run.
pattern='BUG:|kernel BUG at|WARNING:|Oops|general protection|invalid opcode:|KASAN|UBSAN'
pattern+='|rcu: INFO:|rcu_.*detected stalls|INFO: task .* blocked|INFO: possible|INFO: trying to register'
pattern+='|INFO: inconsistent lock|Call Trace:|Kernel panic'
# (grep exits 2 when one of its files is missing, matches or not: only
# the logs that exist are searched, and a run without either fails.)
logs=()
for f in "$dest/dmesg.txt" "$serial"; do [ -f "$f" ] && logs+=("$f"); done
if [ ${#logs[@]} -eq 0 ]; then
	say "no kernel log: neither $dest/dmesg.txt nor $serial"
	bad=1
elif grep -E -H -n "$pattern" "${logs[@]}" > "$dest/kernel-errors.txt"; then
	say "kernel log errors (all in $dest/kernel-errors.txt):"
	head -n 20 "$dest/kernel-errors.txt" >&2
	bad=1
fi
tainted=$(cat "$dest/tainted" 2>/dev/null || echo missing)
if [ "$tainted" != 0 ] && [ "$status" != did-not-finish ]; then
	say "the guest kernel ended tainted: /proc/sys/kernel/tainted = $tainted"
	bad=1
fi

# run mode: the command's output and status are the result.
if [ "$mode" = run ]; then
	cat "$dest/cmd.stdout" 2>/dev/null || true
	cat "$dest/cmd.stderr" >&2 2>/dev/null || true
	if [ ! -f "$dest/cmd-status" ]; then
		say "the command never ran; see $serial and $dest"
		exit 1
	fi
	status=$(cat "$dest/cmd-status")
	[ "$bad" -eq 0 ] || { say "run failed; logs: $PERWINE_OUT/logs, results: $dest"; exit 1; }
	[ "$status" -eq 0 ] || say "the command exited with status $status (serial log: $serial)"
	exit "$status"
fi

# bench mode: the CSV goes where plot-bench.sh and make docs expect
# it, and the last line says what ran: the benchmark's own summary and
# each demo's.
if [ "$mode" = bench ]; then
	find "$dest" -name '*.csv' -exec cp {} "$dest/" \; 2>/dev/null || true
	log=$dest/make-bench.log
	demos=$(grep -E '^(nt-dispatch|mini-ntdll): .*[0-9]' "$log" 2>/dev/null | paste -sd ';' -)
	summary=$(grep -E '^bench: ' "$log" 2>/dev/null | tail -n 1)
	if [ -z "$summary" ]; then
		say "the benchmark printed no summary line; see $log"
		bad=1
	else
		# The run's result files: its table as printed, its metadata,
		# and both as Markdown (what make docs puts in the docs).
		bench_table "$log" >"$dest/bench-table.txt"
		(run_meta "$name" "$dest") >"$dest/meta.txt" || bad=1
		"$PERWINE_TOP/scripts/update-docs.sh" --render "bench-$PERWINE_KERNEL" "$dest" >"$dest/bench-results.md" ||
			bad=1
	fi
	[ "$bad" -eq 0 ] || say "run failed; logs: $PERWINE_OUT/logs, results: $dest"
	echo "vm-bench: ${summary:-bench: did not finish}; demos: ${demos:-none ran}"
	exit "$bad"
fi

passed=0 failed=0 skipped=0
mapfile -t trs_files < <(find "$dest" -name '*.trs' | sort)
for trs in "${trs_files[@]}"; do
	while read -r _ result; do
		case $result in
		PASS | XFAIL) passed=$((passed + 1)) ;;
		SKIP) skipped=$((skipped + 1)) ;;
		*) failed=$((failed + 1)) ;;
		esac
	done < <(grep '^:test-result:' "$trs")
done
if [ "$mode" = check ] && [ $((passed + failed)) -eq 0 ]; then
	say "no test results found in $dest"
	bad=1
fi

# The suite is pinned: every test and its number of TAP points are in
# tests/expected-results.KERNEL, so a test dropped from TESTS, a kselftest
# that shrinks or a plan that changes fails the run.  A subset run
# (TESTS=...) checks the tests it ran.  PERWINE_UPDATE_EXPECTED=1
# rewrites the file from this run.
expected=$PERWINE_TOP/tests/expected-results.$PERWINE_KERNEL
if [ "$mode" = check ]; then
	actual=$(for trs in "${trs_files[@]}"; do
		t=${trs#"$dest"/tests/}
		printf '%s %s\n' "${t%.trs}" "$(grep -c '^:test-result:' "$trs")"
	done | sort)
	total=$(awk '{ n += $2 } END { print n + 0 }' <<<"$actual")
	if [ -n "${PERWINE_UPDATE_EXPECTED:-}" ]; then
		{
			echo "# Every test of make check and its number of TAP points, checked by"
			echo "# guest-image/collect-results.sh after each guest run on $PERWINE_KERNEL; regenerate with"
			echo "# PERWINE_KERNEL=$PERWINE_KERNEL PERWINE_UPDATE_EXPECTED=1 make vm-check."
			echo "$actual"
			echo "total $total"
		} > "$expected"
		say "wrote $expected ($total TAP points)"
	elif [ ! -f "$expected" ]; then
		say "no $expected: make one with PERWINE_UPDATE_EXPECTED=1 make vm-check"
		bad=1
	else
		want=$(grep -v -e '^#' -e '^total ' "$expected" | sort)
		if [ -n "${PERWINE_TESTS:-}" ]; then
			want=$(join <(echo "$want") <(cut -d' ' -f1 <<<"$actual") | sort)
		fi
		if [ "$want" != "$actual" ]; then
			say "the results differ from $expected (< expected, > this run):"
			diff <(echo "$want") <(echo "$actual") | grep '^[<>]' >&2 || true
			bad=1
		elif [ -z "${PERWINE_TESTS:-}" ] && [ "$total" != "$(sed -n 's/^total //p' "$expected")" ]; then
			say "$total TAP points, $expected says $(sed -n 's/^total //p' "$expected")"
			bad=1
		fi
	fi
fi
if [ "$failed" -gt 0 ]; then
	say "failed tests (details in $(find "$dest" -name test-suite.log | head -n 1)):"
	grep -l -E '^:test-result: (FAIL|ERROR|XPASS)' "${trs_files[@]}" | sed "s|^$dest/||; s|^|  |; s|\.trs$||" >&2
fi
# The guest has every kernel feature and kselftest: a skip there means
# something is missing, so it fails the run instead of hiding.
if [ "$skipped" -gt 0 ]; then
	say "$skipped test cases skipped in the guest:"
	grep -l '^:test-result: SKIP' "${trs_files[@]}" | sed "s|^$dest/||; s|^|  |; s|\.trs$||" >&2
	bad=1
fi
[ "$bad" -eq 0 ] || say "run failed; logs: $PERWINE_OUT/logs, results: $dest"
echo "$passed passed, $failed failed"
[ "$bad" -eq 0 ] && [ "$failed" -eq 0 ]

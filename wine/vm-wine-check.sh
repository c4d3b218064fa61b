#!/usr/bin/env bash
# make wine-check: real Wine in the perwine guest.  Builds (or reuses)
# Wine with wine/patches/ (wine/build-wine.sh), builds the test programs
# of wine/tests/ with mingw and winegcc, shares the lot with the guest
# and runs wine/wine-check.sh there: Wine's own ntdll and kernel32
# conformance tests and the raw-syscall program under stock SUD
# (WINEPERWINE=off), perwine's default (auto), drop-in and VMA mode, and
# the raw-syscall program again where seccomp refuses the PER_WINE
# personality.  Exits with the guest script's status.
#
#   wine/vm-wine-check.sh BZIMAGE IMAGE
#   PERWINE_WINE_BENCH=1 ...   the syscall benchmark instead, in an
#                              icount guest (instructions per call): the
#                              modes none, proton, off, dropin-sigsys,
#                              dropin, vma-sigsys, vma and auto, then mode off
#                              on the unpatched kernel of the same config
#                              (column stock-sud), and the targets
#                              (wine/bench-targets.sh)
#   WINE_CHECK_MODES=... etc.  wine/wine-check.sh's WINE_CHECK_* knobs, passed
#                              on (more rounds may need a longer PERWINE_TIMEOUT)
#   PERWINE_UPDATE_EXPECTED=1  write the run's conformance results to
#                              wine/expected-results instead of holding
#                              the run to them
#
# A run with no WINE_CHECK_* knob, on the fixed QEMU, holds each
# conformance test to wine/expected-results: how it ends and which checks
# fail, per mode (the modes only compared with each other would all pass
# a change that breaks every mode alike, mode off included).
#
# The guest boots with -cpu max,-smap: under TCG, QEMU 7.2 does the stack
# reads of a user-mode iretq (Wine's syscall dispatcher returns to
# Windows code with one) as supervisor accesses, and with SMAP on the
# guest kernel oopses there, patched or not.  It boots the QEMU of
# guest-image/build-qemu.sh (Debian's 7.2 with the int $0x2d error code
# fixed, so that Wine's exception test gets past test_debug_service and
# reaches test_direct_syscalls); PERWINE_WINE_FIXED_QEMU=0 boots the
# packaged one, where exception stops in test_debug_service in every
# mode.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

[ $# -eq 2 ] || die "usage: $0 BZIMAGE IMAGE"
dir=$("$PERWINE_TOP/wine/build-wine.sh")
build=$dir/build
share=$dir/share
mkdir -p "$share"

# The test programs, built anew each time (seconds): mingw for the
# Windows programs, the build's own winegcc for the ELF builtin.
tests=$PERWINE_TOP/wine/tests
log=$PERWINE_OUT/logs/wine-tests-build.log
mkdir -p "$(dirname "$log")"
say "building wine/tests (log: $log)"
{
	for p in rawsyscall syscallbench; do
		x86_64-w64-mingw32-gcc -std=c11 -O2 -Wall -Wextra -Werror -o "$share/$p.exe" "$tests/$p.c"
	done
	for p in int2d nopersonality abiprobe; do
		gcc -std=c11 -O2 -Wall -Wextra -Werror -o "$share/$p" "$tests/$p.c"
	done
	"$build/tools/winegcc/winegcc" --wine-objdir "$build" -I"$dir/src/include" -shared -nodefaultlibs \
		-o "$share/elfdll.dll" "$tests/elfdll/elfdll.c" "$tests/elfdll/elfdll.spec" -lwinecrt0
} >"$log" 2>&1 || { tail -n 20 "$log" >&2; die "building wine/tests failed; log: $log"; }
cp "$PERWINE_TOP/wine/wine-check.sh" "$PERWINE_TOP/wine/ntdll-compare.sh" "$share/"

env="WINE_TESTS=/mnt/share/share WINE_ELFDLL=/mnt/share/share/elfdll.dll.so RESULTS=/mnt/share/results"
# The lines of test_direct_syscalls() in exception.c: wine-check.sh
# requires that no check there fails.
direct=$(awk '/^static void test_direct_syscalls\(/ { start = NR }
	start && /^}/ { print start "-" NR; exit }' "$dir/src/dlls/ntdll/tests/exception.c")
[ -n "$direct" ] || die "no test_direct_syscalls() in $dir/src/dlls/ntdll/tests/exception.c"
env="$env WINE_DIRECT_SYSCALLS=$direct"
# wine-check.sh's own knobs, set on the host, go to the guest.
for v in WINE_CHECK_TESTS WINE_CHECK_MODES WINE_CHECK_ROUNDS WINE_CHECK_TIMEOUT WINE_CHECK_BENCH_ITERS; do
	[ -z "${!v+set}" ] || env="$env $v=$(printf '%q' "${!v}")"
done
# The TAP points a run gives with no WINE_CHECK_* knob set, pinned: a
# run that gives fewer passes on less, and fails.  21 for the check (the
# six conformance tests; in each of the four modes perwine in play,
# rawsyscall and its ELF-builtin case; rawsyscall with the personality
# refused in modes auto and vma, and trapped in mode auto), 44 for
# the benchmark (in play, rawsyscall, its ELF-builtin case and a
# syscallbench point in each of the eight modes, the three runs with
# the personality refused or trapped; the same four for mode off on the
# stock kernel; five targets); and where
# the CPU gives int $0x2d the right error code (the fixed QEMU, KVM),
# the int2d point and, in the check, test_direct_syscalls in each mode.
args= name=wine-check points=21
if [ -n "${PERWINE_WINE_BENCH:-}" ]; then
	# The benchmark alone, counted in guest instructions.
	export PERWINE_BENCH_CLOCK=icount
	env="$env WINE_CHECK_TESTS=' ' WINE_FIXED_QEMU=0"
	args=--bench name=wine-bench points=44
elif [ "${PERWINE_WINE_FIXED_QEMU:-1}" != 0 ]; then
	PERWINE_QEMU=${PERWINE_QEMU:-$("$PERWINE_TOP/guest-image/build-qemu.sh")}
	export PERWINE_QEMU
	env="$env WINE_FIXED_QEMU=1"
else
	env="$env WINE_FIXED_QEMU=0"
fi
[ -z "$(compgen -v WINE_CHECK_)" ] || points=any
expected=$PERWINE_TOP/wine/expected-results
if [ -z "$args" ] && [ "$points" != any ] && [ "${PERWINE_WINE_FIXED_QEMU:-1}" != 0 ] &&
	[ -z "${PERWINE_UPDATE_EXPECTED:-}" ]; then
	[ -f "$expected" ] || die "no $expected (PERWINE_UPDATE_EXPECTED=1 make wine-check writes it)"
	cp "$expected" "$share/expected-results"
	env="$env WINE_EXPECTED=/mnt/share/share/expected-results"
fi
export PERWINE_CPU=${PERWINE_CPU:-max,-smap}
export PERWINE_SHARE=$dir PERWINE_RUN_NAME=$name
export PERWINE_TIMEOUT=${PERWINE_TIMEOUT:-5400}
# The build tree links some files (nls/*.nls) by their absolute host
# path: the guest gets that path too, pointing at the share.
real=$(realpath "$dir")
export PERWINE_CMD="mkdir -p ${real%/*} && ln -sfn /mnt/share $real && \
$env PERWINE_REQUIRE=1 bash /mnt/share/share/wine-check.sh $args /mnt/share/build"
rm -rf "$dir/results" "$dir/results-stock"
out=$PERWINE_OUT/$name.txt
rc=0
"$PERWINE_TOP/guest-image/vm-run.sh" "$1" "$2" | tee "$out" || rc=$?
if [ -n "$args" ]; then
	# Stock SUD, what Wine users run today: mode off on the unpatched
	# kernel of the same config (make vm-bench-stock's), then the targets.
	PERWINE_KERNEL_FLAVOR=stock "$PERWINE_TOP/kernel/build-kernel.sh" >/dev/null
	say "mode off on the stock kernel (column stock-sud)"
	PERWINE_RUN_NAME=$name-stock PERWINE_CMD="mkdir -p ${real%/*} && ln -sfn /mnt/share $real && \
${env/RESULTS=\/mnt\/share\/results/RESULTS=/mnt/share/results-stock} WINE_CHECK_MODES=off PERWINE_REQUIRE=1 \
bash /mnt/share/share/wine-check.sh $args /mnt/share/build" \
		"$PERWINE_TOP/guest-image/vm-run.sh" "$PERWINE_OUT/bzImage-stock" "$2" | tee -a "$out" || rc=$?
	if [ -f "$dir/results/bench.tsv" ] && [ -f "$dir/results-stock/bench.tsv" ]; then
		awk -F'\t' 'NR > 1 && $1 == "off" { print "stock-sud\t" $2 "\t" $3 }' \
			"$dir/results-stock/bench.tsv" >>"$dir/results/bench.tsv"
	fi
	"$PERWINE_TOP/wine/bench-targets.sh" "$dir/results/bench.tsv" \
		$(($(grep -cE '^(not )?ok [0-9]+ ' "$out" || true) + 1)) | tee -a "$out" || rc=1
fi
# The TAP count, as make vm-check ends (CI adds it up); no points at
# all is a failure.
passed=$(grep -cE '^ok [0-9]+ ' "$out" || true)
failed=$(grep -cE '^not ok [0-9]+ ' "$out" || true)
[ "$passed$failed" != 00 ] || failed=1
if [ "$points" != any ] && grep -qE '^ok [0-9]+ - the CPU gives the #GP of int' "$out"; then
	points=$((points + $([ -n "$args" ] && echo 1 || echo 5)))
fi
if [ "$points" != any ] && [ $((passed + failed)) -ne "$points" ]; then
	say "$name gave $((passed + failed)) TAP points, not the $points a run with no WINE_CHECK_* knob gives"
	failed=$((failed + 1))
fi
[ "$failed" -eq 0 ] || rc=1
# The run's result files beside the guest's (what make docs puts in the
# docs): the TAP points or the benchmark's rows, the metadata, Markdown.
dest=$PERWINE_OUT/results/$name
mkdir -p "$dest"
if [ -n "$args" ]; then
	cp "$dir/results/bench.tsv" "$dest/" 2>/dev/null || { say "the benchmark left no bench.tsv"; rc=1; }
else
	grep -E '^(not )?ok [0-9]+ ' "$out" >"$dest/wine-check.tap" || true
	cp "$dir/results/expected-results" "$dest/" 2>/dev/null || true
	if [ -n "${PERWINE_UPDATE_EXPECTED:-}" ]; then
		if [ -s "$dir/results/expected-results" ]; then
			# The run's pins, and the flaky checks pinned before: a
			# check that fails now and then may not have in this run.
			{
				cat "$dir/results/expected-results"
				[ ! -f "$expected" ] || awk -F'\t' '$3 == "flaky"' "$expected"
			} | awk '!seen[$0]++' >"$expected.new"
			mv "$expected.new" "$expected"
			say "wrote $expected from this run"
		else
			say "the run left no expected-results"
			rc=1
		fi
	fi
fi
(run_meta "$name" "$dest") >"$dest/meta.txt" || rc=1
"$PERWINE_TOP/scripts/update-docs.sh" --render "$name" "$dest" >"$dest/results.md" || rc=1
echo "$passed passed, $failed failed"
exit "$rc"

#!/usr/bin/env bash
# Run Wine's own conformance tests (ntdll's, kernel32's) and
# wine/tests/rawsyscall.exe under each perwine mode of the patched Wine
# (WINEPERWINE=off|auto|dropin|vma), in the guest, and compare: TAP on stdout,
# exit 0 only if every point passes.
#
#   wine/wine-check.sh [--bench] [--link] [WINE_DIR]
#
# WINE_DIR (or $WINE_DIR): a Wine install prefix (bin/wine,
# lib/wine/x86_64-windows/) or a Wine build tree (loader/wine,
# dlls/*/x86_64-windows/, as wine/build-wine.sh leaves it, or the
# directory above its build/).
# Environment:
#   WINE_TESTS      directory with rawsyscall.exe (and syscallbench.exe for
#                   --bench); default: the current directory.  If it holds
#                   nopersonality (wine/tests/nopersonality.c), rawsyscall.exe
#                   runs once more in perwine modes (personality_runs) under that seccomp
#                   filter, which refuses the PER_WINE personality: Wine must
#                   use PERWINE_FLAG_ACTIVATE where the kernel has it, else
#                   fall back to stock SUD, and still catch every raw
#                   syscall; if it holds abiprobe (wine/tests/abiprobe.c),
#                   that says which ABI v3 flags the kernel has (otherwise:
#                   none), and rawsyscall.exe checks the trap mechanism
#   WINE_NTDLL_TEST ntdll_test.exe; default: $WINE_TESTS/ntdll_test.exe, else
#                   the build tree's dlls/ntdll/tests/x86_64-windows/ (and
#                   so for another MODULE_test.exe of WINE_CHECK_TESTS)
#   WINE_ELFDLL     the ELF builtin for case (d) (wine/tests/elfdll, built with
#                   winegcc); default: $WINE_TESTS/elfdll.dll.so if present
#   RESULTS         where the logs go, a folder per mode; default ./wine-check-results
#   WINE_CHECK_MODES      default "off auto dropin vma" ("none proton off
#                         dropin-sigsys dropin vma-sigsys vma auto" with
#                         --bench); the conformance tests
#                         need off and two others (else their points fail)
#   WINE_CHECK_TESTS      conformance tests, [MODULE:]TEST (MODULE: ntdll),
#                         default "exception virtual thread info
#                         kernel32:thread kernel32:virtual"
#   WINE_CHECK_TIMEOUT    seconds per Wine run, default 300 (a run takes
#                         under 2 min under TCG; a test that aborts waits
#                         for a debugger the prefix does not have, as
#                         ntdll's virtual test does now and then when
#                         glibc's malloc finds its heap broken)
#   WINE_CHECK_ROUNDS     runs of each conformance test per mode, default 2
#                         (wine/ntdll-compare.sh judges them)
#   WINE_EXPECTED         a file of pinned results (wine/expected-results):
#                         each conformance test must also end, and fail, in
#                         each mode as it pins.  Every run writes its own
#                         as RESULTS/expected-results
#   WINE_CHECK_BENCH_ITERS  syscallbench iterations, default 20000
#   WINE_DIRECT_SYSCALLS  FIRST-LAST, the lines of test_direct_syscalls() in
#                         exception.c (a raw syscall from VirtualAlloc'd
#                         code): no check there may fail, in any mode
#   PERWINE_REQUIRE=1     a skipped point fails (as in the guest's make check),
#                         and so does a CPU that gives int $0x2d the wrong
#                         error code (wine/tests/int2d), or no int2d
#   WINE_FIXED_QEMU=0     the guest runs a QEMU without the int $0x2d fix on
#                         purpose (make wine-bench, PERWINE_WINE_FIXED_QEMU=0):
#                         then the int2d point is left out
# --bench  also run syscallbench.exe in each mode and print its rows
# --link   symlink the builtins into system32 instead of copying them
#
# The prefix is made without wineboot (WINEDLLOVERRIDES=wineboot.exe=d):
# an empty drive_c/windows/system32 holding the x86_64-windows builtins,
# since Wine's PE loader loads a builtin only when a file of its name is
# in system32 (find_builtin_without_file() in dlls/ntdll/loader.c finds
# one without a file only while the prefix is bootstrapped).  No
# registry: results are compared between modes, not with Windows.
set -euo pipefail

die() { printf 'wine-check: error: %s\n' "$*" >&2; exit 2; }
say() { printf '# %s\n' "$*"; }

bench=0 link=0
while [ $# -gt 0 ]; do
	case $1 in
	--bench) bench=1 ;;
	--link) link=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	--) shift; break ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
	shift
done
[ $# -le 1 ] || die "usage: $0 [--bench] [--link] [WINE_DIR]"
wine_dir=${1:-${WINE_DIR:-}}
[ -n "$wine_dir" ] || die "no Wine: $0 WINE_DIR, or WINE_DIR=... (an install prefix or a build tree)"
[ -d "$wine_dir" ] || die "$wine_dir is not a directory"
wine_dir=$(cd "$wine_dir" && pwd)
[ -d "$wine_dir/build/loader" ] && wine_dir=$wine_dir/build	# wine/build-wine.sh's directory

# The loader, the server and the PE builtins, for either layout.
pe_files=()
if [ -x "$wine_dir/bin/wine" ]; then
	wine=$wine_dir/bin/wine
	wineserver=$wine_dir/bin/wineserver
	pe_dir=
	for d in "$wine_dir"/lib/wine/x86_64-windows "$wine_dir"/lib64/wine/x86_64-windows; do
		[ -d "$d" ] && pe_dir=$d && break
	done
	[ -n "$pe_dir" ] || die "$wine_dir has bin/wine but no lib/wine/x86_64-windows (a 64-bit PE build is needed)"
	shopt -s nullglob
	pe_files=("$pe_dir"/*.dll "$pe_dir"/*.exe "$pe_dir"/*.drv)
	shopt -u nullglob
	build_tests=
elif [ -x "$wine_dir/loader/wine" ]; then
	wine=$wine_dir/loader/wine
	wineserver=$wine_dir/server/wineserver
	shopt -s nullglob
	pe_files=("$wine_dir"/dlls/*/x86_64-windows/*.dll "$wine_dir"/dlls/*/x86_64-windows/*.drv
		"$wine_dir"/programs/*/x86_64-windows/*.exe)
	shopt -u nullglob
	build_tests=$wine_dir/dlls
else
	die "$wine_dir has neither bin/wine (an install) nor loader/wine (a build tree)"
fi
[ -x "$wineserver" ] || die "no wineserver at $wineserver"
[ ${#pe_files[@]} -gt 0 ] || die "no x86_64-windows builtins under $wine_dir (a PE build is needed)"

tests=$(cd "${WINE_TESTS:-.}" && pwd)
# The conformance tests, each as MODULE:TEST, and where MODULE_test.exe is.
read -r -a conf_tests <<<"${WINE_CHECK_TESTS:-exception virtual thread info kernel32:thread kernel32:virtual}"
declare -A test_exe=()
for i in "${!conf_tests[@]}"; do
	[[ "${conf_tests[i]}" == *:* ]] || conf_tests[i]=ntdll:${conf_tests[i]}
	m=${conf_tests[i]%%:*}
	[[ "$m" =~ ^[a-z0-9_]+$ ]] && [[ "${conf_tests[i]#*:}" =~ ^[a-z0-9_]+$ ]] ||
		die "WINE_CHECK_TESTS: '${conf_tests[i]}' is not [MODULE:]TEST"
	[ -z "${test_exe[$m]:-}" ] || continue
	exe=
	[ "$m" != ntdll ] || exe=${WINE_NTDLL_TEST:-}
	[ -n "$exe" ] || exe=$tests/${m}_test.exe
	[ -f "$exe" ] || [ -z "$build_tests" ] || exe=$build_tests/$m/tests/x86_64-windows/${m}_test.exe
	[ -f "$exe" ] || die "no ${m}_test.exe (in $tests${build_tests:+ or $build_tests/$m/tests/x86_64-windows}$([ "$m" != ntdll ] || echo ', or WINE_NTDLL_TEST'))"
	test_exe[$m]=$exe
done
[ -f "$tests/rawsyscall.exe" ] || die "no rawsyscall.exe in $tests (build wine/tests/rawsyscall.c with x86_64-w64-mingw32-gcc)"
[ $bench -eq 0 ] || [ -f "$tests/syscallbench.exe" ] || die "no syscallbench.exe in $tests"
elfdll=${WINE_ELFDLL:-}
[ -n "$elfdll" ] || [ ! -f "$tests/elfdll.dll.so" ] || elfdll=$tests/elfdll.dll.so
[ -z "$elfdll" ] || [ -f "$elfdll" ] || die "WINE_ELFDLL=$elfdll: no such file"
[ -z "$elfdll" ] || elfdll=$(cd "$(dirname "$elfdll")" && pwd)/$(basename "$elfdll")

results=${RESULTS:-$PWD/wine-check-results}
mkdir -p "$results"
results=$(cd "$results" && pwd)
default_modes="off auto dropin vma"
# the benchmark adds the baselines (none, proton) and the perwine modes without the redirect
[ $bench -eq 0 ] || default_modes="none proton off dropin-sigsys dropin vma-sigsys vma auto"
read -r -a modes <<<"${WINE_CHECK_MODES:-$default_modes}"
run_timeout=${WINE_CHECK_TIMEOUT:-300}
rounds=${WINE_CHECK_ROUNDS:-2}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "WINE_CHECK_ROUNDS=$rounds: not a positive number"
compare=$(cd "$(dirname "$0")" && pwd)/ntdll-compare.sh
[ -x "$compare" ] || die "no $compare"
pins=()
if [ -n "${WINE_EXPECTED:-}" ]; then
	[ -f "$WINE_EXPECTED" ] || die "WINE_EXPECTED=$WINE_EXPECTED: no such file"
	pins=(--expected "$WINE_EXPECTED")
fi
bench_iters=${WINE_CHECK_BENCH_ITERS:-20000}
# The flags of perwine ABI v3 the kernel has (wine/tests/abiprobe):
# where it has PERWINE_FLAG_REDIRECT, both perwine modes return traps to
# Wine without a signal (rawsyscall.exe checks it); where it has
# PERWINE_FLAG_ACTIVATE, they run where the personality is refused.
abi=
if [ -x "$tests/abiprobe" ]; then
	abi=" $("$tests/abiprobe" | tr '\n' ' ')"
	RAWSYSCALL_REDIRECT=$([[ "$abi" == *" redirect "* ]] && echo 1 || echo 0)
	export RAWSYSCALL_REDIRECT
	say "kernel: perwine ABI v3 flags:${abi:- none}"
fi
activate=0
[[ "$abi" != *" activate "* ]] || activate=1
# rawsyscall.exe once more where seccomp refuses the PER_WINE personality,
# MODE:HOW (nopersonality, or nopersonality --trap: refused by SIGSYS, which
# Wine's probes meet before Wine's own SIGSYS handler is installed); where
# the kernel has PERWINE_FLAG_ACTIVATE each is judged as its mode, else as
# stock SUD.
personality_runs=(auto:no vma:no auto:trap)

# A prefix of our own, on local disk (the share is 9p), gone at the end.
prefix=$(mktemp -d "${TMPDIR:-/tmp}/wine-check.XXXXXX")
export WINEPREFIX=$prefix/prefix
export WINEDLLOVERRIDES="wineboot.exe=d${WINEDLLOVERRIDES:+;$WINEDLLOVERRIDES}"
export WINETEST_COLOR=0 WINETEST_INTERACTIVE=0
export HOME=${HOME:-$prefix}
unset DISPLAY WAYLAND_DISPLAY WINEARCH
cleanup() {
	WINEPERWINE=off "$wineserver" -k >/dev/null 2>&1 || true
	rm -rf "$prefix"
}
trap cleanup EXIT

sys32=$WINEPREFIX/drive_c/windows/system32
mkdir -p "$sys32"
if [ $link -eq 1 ]; then
	ln -s "${pe_files[@]}" "$sys32/"
else
	cp "${pe_files[@]}" "$sys32/"
fi
say "wine-check: $wine ($(basename "${pe_files[0]}") and $((${#pe_files[@]} - 1)) more builtins in system32)"
say "tests: ${test_exe[*]} $tests/rawsyscall.exe; ELF builtin: ${elfdll:-none}; results: $results"

# sample_perwine LOG: until killed, five times a second, a line in
# LOG.perwine: how many threads of the guest have "PerWine: on" in their
# /proc status, and the largest VmNoSys: (kB).  Whether perwine was in
# play while Wine ran is read from there, not from Wine's results, which
# a fallback to SUD would leave the same.
# Threads come and go between the glob and cat: nothing here may stop
# the loop (set -e, pipefail), and TERM ends it between samples.
sample_perwine() {
	set +e
	trap 'exit 0' TERM
	while :; do
		cat /proc/[0-9]*/task/[0-9]*/status 2>/dev/null |
			awk '$1 == "PerWine:" && $2 == "on" { on++ }
				$1 == "VmNoSys:" && $2 + 0 > nosys { nosys = $2 + 0 }
				END { print on + 0, nosys + 0 }'
		sleep 0.2
	done >"$1.perwine"
}

# run_wine MODE LOG PROGRAM ARGS...: one Wine process, in the program's
# folder; stdout in LOG.out, stderr in LOG.err, exit status in LOG.status,
# perwine's state sampled during the run in LOG.perwine (not with
# $nosample set: the benchmark counts every guest instruction).  With
# $wrap set, Wine runs under that command, split at spaces
# (wrap="PROGRAM ARG" run_wine ...).
run_wine() {
	local mode=$1 log=$2 prog=$3 rc=0 sampler=
	shift 3
	if [ -z "${nosample:-}" ]; then
		sample_perwine "$log" &
		sampler=$!
	fi
	(cd "$(dirname "$prog")" &&
		WINEPERWINE=$mode exec timeout -k 10 "$run_timeout" ${wrap:-} "$wine" "$(basename "$prog")" "$@") \
		</dev/null >"$log.out" 2>"$log.err" || rc=$?
	if [ -n "$sampler" ]; then
		kill "$sampler" 2>/dev/null || true
		wait "$sampler" 2>/dev/null || true
	fi
	echo "$rc" >"$log.status"
	# Wine writes CRLF through msvcrt's text mode.
	tr -d '\r' <"$log.out" >"$log.txt"
	[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || echo "wine-check: killed after ${run_timeout}s" >>"$log.txt"
}

for mode in "${modes[@]}"; do
	dir=$results/$mode
	mkdir -p "$dir"
	rm -f "$dir"/*.r[0-9]*.*
	for spec in "${conf_tests[@]}"; do
		m=${spec%%:*} t=${spec#*:}
		for r in $(seq "$rounds"); do
			say "mode $mode: ${m}_test.exe $t, round $r of $rounds"
			run_wine "$mode" "$dir/$m-$t.r$r" "${test_exe[$m]}" "$t"
		done
	done
	say "mode $mode: rawsyscall.exe"
	if [ -n "$elfdll" ]; then
		run_wine "$mode" "$dir/rawsyscall" "$tests/rawsyscall.exe" "Z:${elfdll//\//\\}"
	else
		run_wine "$mode" "$dir/rawsyscall" "$tests/rawsyscall.exe"
	fi
	for run in "${personality_runs[@]}"; do
		[ -x "$tests/nopersonality" ] && [ "${run%:*}" = "$mode" ] || continue
		how=${run#*:}
		say "mode $mode: rawsyscall.exe where the PER_WINE personality is refused ($how)"
		# seh's err and trace lines say whether and why Wine fell back,
		# or that it used PERWINE_FLAG_ACTIVATE.
		WINEDEBUG=err+seh,trace+seh RAWSYSCALL_EXPECT=$([ $activate -eq 1 ] && echo "$mode" || echo off) \
			wrap="$tests/nopersonality$([ "$how" = no ] || echo " --$how")" \
			run_wine "$mode" "$dir/rawsyscall-${how}personality" "$tests/rawsyscall.exe"
	done
	if [ $bench -eq 1 ]; then
		say "mode $mode: syscallbench.exe $bench_iters"
		nosample=1 run_wine "$mode" "$dir/syscallbench" "$tests/syscallbench.exe" "$bench_iters"
	fi
	# The next mode starts with a server of its own.
	timeout 60 "$wineserver" -w 2>/dev/null || "$wineserver" -k 2>/dev/null || true
done

# --- TAP -----------------------------------------------------------------
n=0 failed=0 skipped=0
out=$results/wine-check.tap
: >"$out"
emit() { echo "$*" | tee -a "$out"; }
point() {	# point OK|FAIL|SKIP DESCRIPTION [LOG]
	local verdict=$1 desc=$2 log=${3:-}
	n=$((n + 1))
	if [ "$verdict" = SKIP ] && [ -n "${PERWINE_REQUIRE:-}" ]; then
		verdict=FAIL desc="$desc (skipped, and PERWINE_REQUIRE is set)"
	fi
	case $verdict in
	OK) emit "ok $n - $desc" ;;
	SKIP) emit "ok $n - # SKIP $desc"; skipped=$((skipped + 1)) ;;
	*)
		emit "not ok $n - $desc"
		failed=$((failed + 1))
		[ -z "$log" ] || emit "# log: $log"
		;;
	esac
}

# What the CPU says of "int $0x2d" decides how far exception gets
# (wine/tests/int2d.c: Debian's QEMU 7.2 gives the wrong #GP error code
# under TCG, and exception then stops before test_direct_syscalls).
# Only a CPU that gets it right lets exception reach test_direct_syscalls,
# and only then is that test required below; otherwise this says why not.
# Under PERWINE_REQUIRE a CPU that gets it wrong, or no int2d, fails,
# unless the host said it boots a QEMU without the fix on purpose
# (WINE_FIXED_QEMU=0).
int2d_ok=0 int2d="no $tests/int2d"
if [ -x "$tests/int2d" ] && int2d=$("$tests/int2d" 2>&1); then
	int2d_ok=1
	point OK "the CPU gives the #GP of int \$0x2d Windows' error code ($int2d)"
elif [ -n "${PERWINE_REQUIRE:-}" ] && [ "${WINE_FIXED_QEMU:-}" != 0 ]; then
	point FAIL "int \$0x2d: $int2d: exception cannot reach test_direct_syscalls (a QEMU without the fix? then WINE_FIXED_QEMU=0)"
else
	emit "# $int2d: exception cannot reach test_direct_syscalls on this CPU (WINE_FIXED_QEMU=${WINE_FIXED_QEMU:-unset})"
fi

# perwine in play: in each mode's runs (those where the personality is
# refused aside), some sample saw PER_WINE threads in drop-in and VMA
# mode, and PROT_NOSYSCALL memory in VMA mode, and none saw a PER_WINE
# thread in mode off (stock SUD).  A Wine that fell back to SUD, or one
# without wine/patches, gives the same test results: this tells them
# apart.
for mode in "${modes[@]}"; do
	files=()
	shopt -s nullglob
	for f in "$results/$mode"/*.perwine; do
		[ "${f%personality.perwine}" = "$f" ] && files+=("$f")
	done
	shopt -u nullglob
	# (a here-string: the guest has no /dev/fd for "< <(...)")
	read -r samples on nosys <<<"$(cat "${files[@]}" /dev/null |
		awk '{ n++ } $1 > 0 { on++ } $2 > 0 { nosys++ } END { print n + 0, on + 0, nosys + 0 }')"
	seen="$on of $samples samples with PER_WINE threads, $nosys with PROT_NOSYSCALL memory, in ${#files[@]} runs"
	in_play=0
	case $mode in
	off | none | proton) [ "$samples" -eq 0 ] || [ "$on" -ne 0 ] || in_play=1 ;;
	vma*) [ "$on" -eq 0 ] || [ "$nosys" -eq 0 ] || in_play=1 ;;
	*) [ "$on" -eq 0 ] || in_play=1 ;;
	esac
	if [ "$in_play" -eq 1 ]; then
		point OK "mode $mode: perwine in play as the mode says ($seen)"
	else
		point FAIL "mode $mode: perwine not in play as the mode says ($seen)" "$results/$mode"
	fi
done

# Conformance tests: the same results in every mode, judged by wine/ntdll-compare.sh
# over $rounds rounds per mode: a mode differs by a check that fails in
# every round of it and in no round of another, or by how the test ends
# (exception stops early under TCG in test_debug_service in every mode).
# Checks that fail in some rounds only are flaky there, counted and
# listed, not compared.
# Each comparison also appends the run's results as pins to
# RESULTS/expected-results (wine/expected-results, when the host asks).
if [ ${#conf_tests[@]} -gt 0 ]; then
	{
		echo "# Wine's conformance tests in make wine-check: how each ended, and the"
		echo "# checks that failed in every round (LO-HI times a round), in each mode;"
		echo "# wine/ntdll-compare.sh holds later runs to them.  From the run of"
		echo "# $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -r), $rounds rounds per mode."
		echo "# Regenerate: PERWINE_UPDATE_EXPECTED=1 make wine-check"
	} >"$results/expected-results"
fi
for spec in "${conf_tests[@]}"; do
	m=${spec%%:*} t=${spec#*:}
	rc=0
	verdict=$("$compare" "${pins[@]}" --pins-to "$results/expected-results" "$results" "$spec" "${modes[@]}" 2>&1) || rc=$?
	case $rc in
	0) point OK "$m $t: the same results in every mode (${verdict#same: })" ;;
	1) point FAIL "$m $t: the modes differ (${verdict#differ: })" "$results/$m-$t.differences" ;;
	*) point FAIL "$m $t: no verdict: $verdict" ;;
	esac
	[ ! -s "$results/$m-$t.flaky" ] || emit "# flaky: $m $t: $(paste -sd' ' "$results/$m-$t.flaky")"
done

# exception's test_direct_syscalls(): the test ran to its summary in
# every round of every mode (so the raw syscall from VirtualAlloc'd code
# was issued), and no check of that function failed.
if [ "$int2d_ok" -eq 1 ] && [[ " ${conf_tests[*]} " == *" ntdll:exception "* ]]; then
	for mode in "${modes[@]}"; do
		if [ -z "${WINE_DIRECT_SYSCALLS:-}" ]; then
			point SKIP "mode $mode: exception's test_direct_syscalls (WINE_DIRECT_SYSCALLS unset)"
			continue
		fi
		first=${WINE_DIRECT_SYSCALLS%-*} last=${WINE_DIRECT_SYSCALLS#*-}
		bad=
		for r in $(seq "$rounds"); do
			log=$results/$mode/ntdll-exception.r$r.txt
			end=$("$compare" --ending "${log%.txt}" exception)
			if [ "${end% executed}" = "$end" ]; then
				bad+=" round $r: $end;"
				continue
			fi
			n_failed=$(awk -F: -v a="$first" -v b="$last" \
				'$1 == "exception.c" && $2 + 0 >= a && $2 + 0 <= b && /Test failed/' "$log" | wc -l)
			[ "$n_failed" -eq 0 ] || bad+=" round $r: $n_failed failed;"
		done
		if [ -z "$bad" ]; then
			point OK "mode $mode: exception's test_direct_syscalls (exception.c:$WINE_DIRECT_SYSCALLS) passes in all $rounds rounds"
		else
			point FAIL "mode $mode: exception's test_direct_syscalls (exception.c:$WINE_DIRECT_SYSCALLS):${bad%;}" "$results/$mode"
		fi
	done
fi

# rawsyscall_passed LOG ELF: whether the rawsyscall run of LOG.txt and
# LOG.status passed every point it must; sets counted (its points, for
# the point's text), and what to what went wrong.  The one skip allowed
# is that of the ELF-builtin cases in a run given no ELF library (ELF 0:
# the nopersonality runs, or no WINE_ELFDLL); any other skip fails.
rawsyscall_passed() {
	local tap=$1.txt rc plan points skips bad why unexpected
	rc=$(cat "$1.status")
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$tap" | head -n 1)
	points=$(grep -cE '^(not )?ok [0-9]+ ' "$tap" || true)
	skips=$(grep -cE '^ok [0-9]+ .*# SKIP' "$tap" || true)
	counted="$points points"
	[ "$skips" -eq 0 ] || counted="$points points, $skips of them skipped"
	bad=$(grep -E '^not ok [0-9]+ ' "$tap" | grep -vc '# TODO' || true)
	unexpected=$(grep -E '^ok [0-9]+ .*# SKIP' "$tap" |
		if [ "$2" = 0 ]; then grep -vE '^ok [0-9]+ - elf [^#]*# SKIP no ELF library given'; else cat; fi |
		head -n 1 || true)
	[ "$rc" -eq 0 ] && [ -n "$plan" ] && [ "$points" -eq "$plan" ] && [ "$bad" -eq 0 ] &&
		[ -z "$unexpected" ] && return 0
	why=$(grep -m1 -E '^(Bail out!|not ok [0-9]+ [^#]*$)' "$tap" || true)
	# (no "#" in a point's text: TAP would read a directive)
	[ -z "$unexpected" ] || why="a skip not allowed here: ${unexpected//#/}"
	what="exit $rc, $points of ${plan:-?} points, $bad failed${why:+: $why}"
	return 1
}

# rawsyscall: every required point in every mode, and case (d) as the mode says.
for mode in "${modes[@]}"; do
	tap=$results/$mode/rawsyscall.txt
	if rawsyscall_passed "${tap%.txt}" "$([ -n "$elfdll" ] && echo 1 || echo 0)"; then
		point OK "rawsyscall, mode $mode: every required case passes ($counted)"
	else
		point FAIL "rawsyscall, mode $mode: $what" "$tap"
	fi

	elf_line=$(grep -m1 -E '^(not )?ok [0-9]+ - elf load: ' "$tap" || true)
	elf_skip=$(sed -n 's/^ok [0-9]* - elf load: .*# SKIP //p' <<<"$elf_line")
	if [ "${elf_line#ok }" = "$elf_line" ] || [ -n "$elf_skip" ]; then
		if [ -z "$elfdll" ]; then
			point SKIP "mode $mode: case (d) needs an ELF builtin (WINE_ELFDLL; build wine/tests/elfdll with winegcc)"
		else
			point FAIL "mode $mode: case (d): $elfdll did not load as an ELF builtin${elf_skip:+: $elf_skip}" "$tap"
		fi
		continue
	fi
	todo_fail=$(grep -cE '^not ok [0-9]+ - elf .*# TODO' "$tap" || true)
	todo_pass=$(grep -cE '^ok [0-9]+ - elf .*# TODO' "$tap" || true)
	case $mode in
	off | dropin* | none)
		# Wine's policy: dispatch off for the process once an ELF builtin
		# loads (and none has no dispatch).  The hole must show, else
		# case (d) tests nothing.
		if [ "$todo_fail" -gt 0 ] && [ "$todo_pass" -eq 0 ]; then
			point OK "mode $mode: after the ELF builtin loads, all $todo_fail trapping cases reach Linux, as under Wine's SUD policy"
		else
			point FAIL "mode $mode: after the ELF builtin loads, $todo_pass raw syscalls were still caught and $todo_fail reached Linux (expected: all reach Linux)" "$tap"
		fi
		;;
	*)
		elf_bad=$(grep -cE '^not ok [0-9]+ - elf ' "$tap" || true)
		if [ "$elf_bad" -eq 0 ] && [ "$todo_fail$todo_pass" = 00 ]; then
			point OK "mode $mode: raw syscalls stay caught after the ELF builtin loads, and its own run natively"
		else
			point FAIL "mode $mode: after the ELF builtin loads, $elf_bad cases fail" "$tap"
		fi
		;;
	esac
done

# Where the PER_WINE personality is refused (the personality rule of
# Docker's default seccomp profile), a perwine mode must use
# PERWINE_FLAG_ACTIVATE where the kernel has it: every raw syscall
# caught, judged as the mode itself (perwine on), perwine's threads
# sampled, and Wine's log saying so (perwine_usable's trace line).
# Without the flag it must fall back to stock SUD: judged as mode off
# (which also checks that the process is not PER_WINE), and Wine's log
# must give the refused personality as the reason (select_perwine_mode's
# err line, perwine_usable's trace line).
nopersonality_reason() {
	if [ $activate -eq 1 ]; then
		grep -q 'trace:seh:perwine_usable the PER_WINE personality was refused, using PERWINE_FLAG_ACTIVATE' "$1.err" &&
			awk '$1 > 0 { on++ } END { exit !on }' "$1.perwine"
	else
		grep -q 'err:seh:select_perwine_mode perwine not usable' "$1.err" &&
			grep -q 'trace:seh:perwine_usable the PER_WINE personality was refused' "$1.err"
	fi
}
if [ -x "$tests/nopersonality" ]; then
	for run in "${personality_runs[@]}"; do
		mode=${run%:*} how="PER_WINE refused by seccomp"
		[[ " ${modes[*]} " == *" $mode "* ]] || continue
		log=$results/$mode/rawsyscall-${run#*:}personality
		[ "${run#*:}" = no ] || how="PER_WINE trapped by seccomp (SIGSYS)"
		if ! rawsyscall_passed "$log" 0; then
			point FAIL "mode $mode, $how: $what" "$log.txt"
		elif ! nopersonality_reason "$log"; then
			if [ $activate -eq 1 ]; then
				point FAIL "mode $mode, $how: every raw syscall caught, but Wine's log does not say it used PERWINE_FLAG_ACTIVATE, or no PER_WINE thread was seen" "$log.err"
			else
				point FAIL "mode $mode, $how: every raw syscall caught, but Wine's log does not say it fell back because of the personality" "$log.err"
			fi
		elif [ $activate -eq 1 ]; then
			point OK "mode $mode, $how: Wine uses PERWINE_FLAG_ACTIVATE, every raw syscall caught as the mode needs ($counted)"
		else
			point OK "mode $mode, $how: Wine says so and falls back to SUD, every raw syscall caught ($counted)"
		fi
	done
fi

if [ $bench -eq 1 ]; then
	bench_tsv=$results/bench.tsv
	printf 'mode\tname\tns_per_call\n' >"$bench_tsv"
	for mode in "${modes[@]}"; do
		f=$results/$mode/syscallbench.txt
		awk -F'\t' -v m="$mode" '$1 == "row" { print m "\t" $2 "\t" $3 }' "$f" >>"$bench_tsv"
		rc=$(cat "$results/$mode/syscallbench.status")
		rows=$(grep -c '^row	' "$f" || true)
		if [ "$rc" -eq 0 ] && [ "$rows" -gt 0 ] && ! grep -q '	FAILED$' "$f"; then
			point OK "syscallbench, mode $mode: $rows rows measured"
		else
			point FAIL "syscallbench, mode $mode: exit $rc, $rows rows, $(grep -c '	FAILED$' "$f" || true) failed" "$f"
		fi
	done
	# One line per row name, one column per mode.
	say "syscallbench: ns per call, best of 5 rounds of $bench_iters (under -icount shift=0: guest instructions per call)"
	awk -F'\t' -v modes="${modes[*]}" '
		NR == 1 { next }
		!($2 in seen) { seen[$2] = 1; order[++k] = $2 }
		{ v[$1 SUBSEP $2] = $3 }
		END {
			nm = split(modes, m, " ")
			line = sprintf("# %-44s", "row")
			for (i = 1; i <= nm; i++) line = line sprintf(" %12s", m[i])
			print line
			for (j = 1; j <= k; j++) {
				line = sprintf("# %-44s", order[j])
				for (i = 1; i <= nm; i++) {
					x = v[m[i] SUBSEP order[j]]
					line = line sprintf(" %12s", x == "" ? "-" : x)
				}
				print line
			}
			# What each mode adds to Wine without dispatch (mode none).
			has_none = 0
			for (i = 1; i <= nm; i++) has_none += m[i] == "none"
			if (!has_none) exit
			print "# interception cost: the row minus mode none"
			for (j = 1; j <= k; j++) {
				base = v["none" SUBSEP order[j]]
				if (base == "") continue
				line = sprintf("# %-44s", order[j])
				for (i = 1; i <= nm; i++) {
					x = v[m[i] SUBSEP order[j]]
					line = line sprintf(" %12s", m[i] == "none" || x == "" ? "-" : sprintf("%+.1f", x - base))
				}
				print line
			}
		}' "$bench_tsv" | tee -a "$out"
	say "machine-readable: $bench_tsv (mode, row, ns per call)"
fi

emit "1..$n"
say "wine-check: $((n - failed - skipped)) passed, $failed failed, $skipped skipped; results in $results"
[ "$failed" -eq 0 ]

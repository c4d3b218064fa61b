#!/bin/sh
# perwine-run: sets PER_WINE keeping the personality flags, execs, passes
# the exit status through, and fails as env(1) does (125/126/127).
. "${top_srcdir:-.}/tests/tap.sh"
tap_require_perwine
run=${top_builddir:-.}/userland/tools/perwine-run
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tap_plan 14

"$run" --query > "$tmp/q" 2>&1
tap_check "--query: exit 0 and 'available'" \
	sh -c 'test "$1" -eq 0 && grep -q "^perwine: *available$" "$2"' sh $? "$tmp/q"
tap_check "--query of a plain shell: personality 0x00000000" grep -q '^personality: *0x00000000$' "$tmp/q"
# The guest's kernels have ABI v3: traps come back without a signal.
tap_check "--query says traps come by redirect" grep -q '^traps: *redirect (no signal)$' "$tmp/q"
PERWINE_REDIRECT=0 "$run" --query > "$tmp/q0" 2>&1
tap_check "--query under PERWINE_REDIRECT=0 says SIGSYS" grep -q '^traps: *SIGSYS$' "$tmp/q0"
"$run" "$run" --query > "$tmp/q2" 2>&1
tap_check "under perwine-run the personality is PER_WINE (0x00000011)" \
	grep -q '^personality: *0x00000011$' "$tmp/q2"
setarch x86_64 -R "$run" "$run" --query > "$tmp/q3" 2>&1
tap_check "the ADDR_NO_RANDOMIZE flag of setarch -R is kept (0x00040011)" \
	grep -q '^personality: *0x00040011$' "$tmp/q3"
"$run" --trap-self -v true 2> "$tmp/self"
tap_check "--trap-self -v: exit 0, says it emulated getppid" \
	sh -c 'test "$1" -eq 0 && grep -q "trapped and emulated getppid" "$2"' sh $? "$tmp/self"
"$run" sh -c 'exit 7'
tap_check "the program's exit status comes through (7)" test $? -eq 7
"$run" /nonexistent/program 2> "$tmp/e1"
tap_check "a missing program: 127 and a message" \
	sh -c 'test "$1" -eq 127 && grep -q "/nonexistent/program" "$2"' sh $? "$tmp/e1"
: > "$tmp/not-exec"
"$run" "$tmp/not-exec" 2> /dev/null
tap_check "a program that cannot run: 126" test $? -eq 126
"$run" 2> "$tmp/e2"
tap_check "no program: 125 and 'no PROGRAM given'" \
	sh -c 'test "$1" -eq 125 && grep -q "no PROGRAM given" "$2"' sh $? "$tmp/e2"
"$run" --bogus true 2> /dev/null
tap_check "an unknown option: 125" test $? -eq 125
"$run" --help > "$tmp/h"
tap_check "--help: exit 0 with a usage" sh -c 'test "$1" -eq 0 && grep -q "^Usage:" "$2"' sh $? "$tmp/h"
tap_check "--version names the package version" sh -c '"$1" --version | grep -qx "perwine-run [0-9.]*"' sh "$run"

#!/usr/bin/env bash
# The developer loop's own check (run by .ci/run): make vm-run with a
# shared folder works end to end, and its bad inputs stop early with a
# clear message.  Prints TAP and ends with "N passed, N failed".
#
#   guest-image/check-vm-run.sh
set -uo pipefail
. "$(dirname "$0")/../scripts/common.sh"

n=0 passed=0 failed=0
ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"; passed=$((passed + 1))
	else
		echo "not ok $n - $2"; failed=$((failed + 1))
	fi
}

share=$(mktemp -d)
trap 'rm -rf "$share"' EXIT
token=$RANDOM$RANDOM
cat > "$share/probe.sh" <<EOS
#!/bin/sh
# Runs in the guest, in the shared folder.
{ echo "token $token"; uname -r; pkg-config --modversion perwine; } > from-guest.txt
echo "probe: hello from \$(uname -r)"
exit 7
EOS
echo "1..7"
# vm-run needs the guest kernel and image: make vm-check has built them.

# One boot: the command's output and status, a file written in the guest.
out=$(PERWINE_SHARE=$share PERWINE_CMD='sh probe.sh' PERWINE_RUN_NAME=run-check \
	"$PERWINE_TOP/guest-image/vm-run.sh" "$PERWINE_OUT/bzImage-guest" "$PERWINE_OUT/guest.img" \
	2>"$share/.stderr")
rc=$?
ok $((rc == 7 ? 0 : 1)) "guest-image/vm-run.sh exits with the command's status 7 (got $rc)"
grep -q 'the command exited with status 7' "$share/.stderr"
ok $? "the status is named on stderr"
[ "$out" = "probe: hello from $(cat "$PERWINE_OUT/kselftests-guest/kernelrelease")" ]
ok $? "the command's output, and only it, comes through ($out)"
grep -qx "token $token" "$share/from-guest.txt" 2>/dev/null &&
	grep -q -- '-perwine$' "$share/from-guest.txt" &&
	[ "$(sed -n 3p "$share/from-guest.txt")" = "$(sed -n 's/^AC_INIT(\[perwine\], \[\([^]]*\)\].*/\1/p' "$PERWINE_TOP/configure.ac")" ]
ok $? "the guest wrote into the share: token, perwine kernel, installed libperwine version"

# make vm-run, as the README shows it, fails (make exits 2) with the status named.
msg=$(PERWINE_SHARE=$share make --no-print-directory -C "$PERWINE_TOP" vm-run CMD= 2>&1)
rc=$?
grep -q "no command: make vm-run CMD='...'" <<<"$msg" && [ "$rc" -eq 2 ]
ok $? "make vm-run without a command stops with a clear message"

# Bad inputs stop before anything is built or booted.
msg=$(PERWINE_SHARE=/nonexistent/dir make --no-print-directory -C "$PERWINE_TOP" vm-run CMD=true 2>&1)
grep -q 'PERWINE_SHARE=/nonexistent/dir is not a directory' <<<"$msg"
ok $? "a missing share stops with a clear message"
msg=$(PERWINE_EXTRA_PACKAGES='no-such-package-perwine' "$PERWINE_TOP/guest-image/build-rootfs.sh" 2>&1)
grep -q "no package 'no-such-package-perwine'" <<<"$msg"
ok $? "a package that does not exist stops with a clear message"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

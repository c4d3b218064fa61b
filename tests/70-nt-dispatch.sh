#!/bin/sh
# The nt-dispatch example, line by line: each "Windows" syscall trapped
# by the right check (vma or selector), emulated, and its status
# returned; the Unix side native; NtTerminateProcess ends the process.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require_perwine
prog=${top_builddir:-.}/userland/examples/nt-dispatch
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

date='[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} UTC'
cat > "$tmp/expected" <<EOT
^nt-dispatch: perwine available \\(kernel $(uname -r)\\)\$
^== Windows code in a PROT_NOSYSCALL mapping, selector NATIVE ==\$
^Hello from the Windows side!\$
^  \\[vma\\] NtWriteFile\\(handle=1, length=29\\) = STATUS_SUCCESS\$
^  \\[vma\\] NtQuerySystemTime\\(\\) = STATUS_SUCCESS, $date\$
^  \\[vma\\] syscall 0xfff = STATUS_INVALID_SYSTEM_SERVICE\$
^  Windows code returned 0x0\$
^== Windows code in a normal mapping, selector TRAP ==\$
^Hello from the Windows side!\$
^  \\[selector\\] NtWriteFile\\(handle=1, length=29\\) = STATUS_SUCCESS\$
^  \\[selector\\] NtQuerySystemTime\\(\\) = STATUS_SUCCESS, $date\$
^  \\[selector\\] syscall 0xfff = STATUS_INVALID_SYSTEM_SERVICE\$
^  Windows code returned 0x0\$
^== Unix side, selector NATIVE: syscalls run natively ==\$
^  getppid\\(\\) = [1-9][0-9]*, emulated calls before and after: 6, 6\$
^== Windows code ends the process ==\$
^  \\[vma\\] NtTerminateProcess\\(handle=-1, status=0\\): exiting\$
^nt-dispatch: 7 syscalls emulated\$
EOT
want=$(wc -l < "$tmp/expected")
tap_plan $((want + 2))

"$prog" > "$tmp/out" 2> "$tmp/err"
rc=$?
tap_check "nt-dispatch exits with NtTerminateProcess's status 0 (got $rc)" test "$rc" -eq 0
n=0
while IFS= read -r pattern; do
	n=$((n + 1))
	line=$(sed -n "${n}p" "$tmp/out")
	tap_check "line $n: '$line'" sh -c 'printf "%s\n" "$1" | grep -Eq "$2"' sh "$line" "$pattern"
done < "$tmp/expected"
got=$(wc -l < "$tmp/out")
tap_check "exactly $want lines, nothing on stderr (got $got lines)" \
	sh -c 'test "$1" -eq "$2" && test ! -s "$3"' sh "$got" "$want" "$tmp/err"
sed 's/^/# /' "$tmp/err"

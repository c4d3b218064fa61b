#!/usr/bin/env bash
# make vm-bench on the unpatched ("stock") kernel: the same config, the
# same guest image and the same benchmark, so that Syscall User
# Dispatch and seccomp as distributions ship them stand beside the
# series (scripts/update-docs.sh's bench-stock views and the README's
# headline).  Builds the stock kernel as make vm-x86-selftests does.
#
#   guest-image/vm-bench-stock.sh IMAGE
# Results: $PERWINE_OUT/results/bench-stock (bench-results.csv,
# bench-table.txt, meta.txt), imported by make docs.
#
# Every perwine row fails there (PERWINE_BENCH_FORCE=1): the run must
# measure the rows that need no perwine, and nothing more.
set -euo pipefail
export LC_ALL=C
. "$(dirname "$0")/../scripts/common.sh"

[ $# -eq 1 ] || die "usage: $0 IMAGE"
image=$1
name=bench-stock
dest=$PERWINE_OUT/results/$name

PERWINE_KERNEL_FLAVOR=stock "$PERWINE_TOP/kernel/build-kernel.sh"
say "the benchmark on the stock kernel (icount; about 10 minutes)"
# As bench mode runs it (guest-init.sh): 20000 calls, the minimum of 9.
cmd='make -s -C /root/build tests/bench/perwine-bench >/results/bench-build.log 2>&1 &&
PERWINE_BENCH_FORCE=1 PERWINE_BENCH_CLOCK=icount /root/build/tests/bench/perwine-bench 20000 9 \
	/results/bench-results.csv >/results/bench.log 2>&1; echo "perwine-bench exited $?"'
rc=0
PERWINE_RUN_NAME=$name PERWINE_BENCH_CLOCK=icount PERWINE_CMD=$cmd \
	"$PERWINE_TOP/guest-image/vm-run.sh" "$PERWINE_OUT/bzImage-stock" "$image" || rc=$?
[ "$rc" -eq 0 ] || die "the stock guest failed (status $rc); logs: $PERWINE_OUT/logs/guest-$name.log, $dest"

log=$dest/bench.log
[ -f "$log" ] || die "the benchmark did not run; see $dest/bench-build.log"
grep -q '^perwine-bench: kernel .*-stock,' "$log" || die "$log: not a run on the stock kernel"
# Its rows that need no perwine must measure; the others fail.
for row in 'native sysinfo' 'SUD allowed sysinfo' 'seccomp allow-all sysinfo' 'trap: SUD' \
	'trap: seccomp RET_TRAP'; do
	grep -q "^\"$row\"," "$dest/bench-results.csv" || die "$log: row '$row' was not measured"
done
bench_table "$log" >"$dest/bench-table.txt"
(run_meta "$name" "$dest") >"$dest/meta.txt"
say "stock kernel: $(grep '^bench: ' "$log") (the perwine rows fail here by design)"
say "results: $dest (make docs imports them)"

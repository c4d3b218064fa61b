#!/bin/sh
# Upstream Syscall User Dispatch keeps working on the perwine kernel:
# the 6.1 tree's own sud_test, its cases reported as TAP test points.
exec "${top_srcdir:-.}/tests/run-kselftest.sh" syscall_user_dispatch sud_test

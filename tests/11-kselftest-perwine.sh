#!/bin/sh
# The series' own kselftest (tools/testing/selftests/perwine), built
# against the perwine kernel's uapi headers, its cases as TAP points.
exec "${top_srcdir:-.}/tests/run-kselftest.sh" perwine perwine_test

#!/bin/sh
# The dispatcher tests of 61-lib-dispatch once more, with traps taken by
# SIGSYS where the kernel could redirect them (PERWINE_REDIRECT=0): both
# ways must give the callback the same.
PERWINE_REDIRECT=0
export PERWINE_REDIRECT
exec "${top_builddir:-.}/tests/61-lib-dispatch"

#!/bin/sh
# usage: expect_output.sh EXIT_CODE REGEX COMMAND [ARG...]
# Runs COMMAND; passes only when it exits with EXIT_CODE *and* its output (stdout +
# stderr) matches the extended REGEX. CTest's PASS_REGULAR_EXPRESSION alone ignores
# the exit status, so tests that check both go through this.
want=$1 regex=$2
shift 2
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$want" ]; then echo "expect_output: exit status $rc, expected $want" >&2; exit 1; fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then echo "expect_output: no line matches /$regex/" >&2; exit 1; fi

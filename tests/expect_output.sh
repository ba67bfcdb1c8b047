#!/bin/sh
# usage: expect_output.sh EXIT_CODE REGEX COMMAND [ARG...]
# Runs COMMAND; passes only when it exits with EXIT_CODE *and* its output (stdout +
# stderr) matches the extended REGEX. CTest's PASS_REGULAR_EXPRESSION alone ignores
# the exit status, so tests that check both go through this.
want=$1 regex=$2
shift 2
# The explorer runs under it too: Qt wants a runtime directory and, without one, leaves
# $TMPDIR/runtime-$USER behind. One of its own, removed afterwards.
runtime=
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  runtime=$(mktemp -d "${TMPDIR:-/tmp}/collage-test-runtime.XXXXXX") || exit 1
  export XDG_RUNTIME_DIR="$runtime"
fi
out=$("$@" 2>&1)
rc=$?
[ -n "$runtime" ] && rm -rf "$runtime"
printf '%s\n' "$out"
if [ "$rc" -ne "$want" ]; then echo "expect_output: exit status $rc, expected $want" >&2; exit 1; fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then echo "expect_output: no line matches /$regex/" >&2; exit 1; fi

#!/bin/sh
# Runs a test (a GUI one: Qt) with its own XDG_RUNTIME_DIR, removed afterwards: unset, Qt falls back to
# $TMPDIR/runtime-$USER and leaves it behind.
dir=$(mktemp -d "${TMPDIR:-/tmp}/collage-gui-runtime.XXXXXX") || exit 1
XDG_RUNTIME_DIR=$dir "$@"
rc=$?
rm -rf "$dir"
exit $rc

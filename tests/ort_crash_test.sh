#!/usr/bin/env bash
# usage: ort_crash_test.sh COLLAGE MODEL FAKE_ORT_LIBRARY
# ONNX Runtime dying inside a kernel (FAKE_ORT_LIBRARY: loads, then SIGSEGV in every Run) while
# `tune` measures its candidates: each is lost with the signal named, the tune goes on and the
# placement it writes, verified against the native reference, uses none of them.
set -euo pipefail
collage=$1 model=$2 fake=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/collage-ort-crash.XXXXXX")
trap 'rm -rf "$work"' EXIT
export COLLAGE_ORT_LIBRARY=$fake
"$collage" candidates "$model" | grep -Eq '^onnxruntime +[1-9]' ||
  { echo "the crashing library did not load as ONNX Runtime 1.30.0" >&2; "$collage" candidates "$model" >&2; exit 1; }
set +e
"$collage" tune "$model" --backends onnxruntime --no-cost-db --repeat 3 -o "$work/placement.json" \
  > "$work/out.txt" 2> "$work/err.txt"
rc=$?
set -e
cat "$work/out.txt" "$work/err.txt"
[ $rc -eq 0 ] || { echo "tune exited $rc, expected 0" >&2; exit 1; }
grep -q "^candidate onnxruntime .*crashed: SIGSEGV.*the tune goes on without it" "$work/err.txt" ||
  { echo "no candidate reported lost to the crash" >&2; exit 1; }
grep -q "verified against the native reference: ok" "$work/out.txt" ||
  { echo "the placement was not verified" >&2; exit 1; }
if grep -q '"backend": "onnxruntime"' "$work/placement.json"; then
  echo "a crashing candidate was placed" >&2
  exit 1
fi
echo "ort_crash_test: every ONNX Runtime candidate lost to the crash, the tune finished without them"

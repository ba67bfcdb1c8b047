#!/usr/bin/env bash
# usage: ort_artifact_test.sh COLLAGE COLLAGE_RUN MODEL
# An artifact whose placement runs on ONNX Runtime: exported and run where the library is, then
# refused with exit 2 naming what to install where it is not (COLLAGE_ORT_LIBRARY pointing
# nowhere). Skipped (77) when this machine has no ONNX Runtime to tune with.
set -euo pipefail
collage=$1 run=$2 model=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/collage-ort-artifact.XXXXXX")
trap 'rm -rf "$work"' EXIT
if "$collage" candidates "$model" | grep -q '^onnxruntime *unavailable'; then
  echo "skipped: no ONNX Runtime library on this machine"
  exit 77
fi
"$collage" tune "$model" --backends onnxruntime --no-cost-db --repeat 3 -o "$work/placement.json" > /dev/null
grep -q '"backend": "onnxruntime"' "$work/placement.json" || { echo "nothing placed on onnxruntime" >&2; exit 1; }
"$collage" export "$model" --placement "$work/placement.json" -o "$work/model.collage" > /dev/null
"$run" "$work/model.collage" --repeat 2 > /dev/null
set +e
out=$(COLLAGE_ORT_LIBRARY=/nonexistent/libonnxruntime.so.1 "$run" "$work/model.collage" 2>&1)
rc=$?
set -e
echo "$out"
[ $rc -eq 2 ] || { echo "collage-run without ONNX Runtime: exit $rc, expected 2" >&2; exit 1; }
grep -q "ONNX Runtime library not loaded from /nonexistent/libonnxruntime.so.1.*install it" <<<"$out" ||
  { echo "the message does not say what to install" >&2; exit 1; }
echo "ort_artifact_test: runs with ONNX Runtime, refused clearly without it"

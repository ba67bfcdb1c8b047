#!/bin/sh
# usage: sample_e2e_test.sh BUILD_DIR WORK_DIR SAMPLE
# A zoo sample end to end as a user runs it: generate it, `collage tune` (every backend,
# placement verified against the native reference), `collage export` (the artifact reloaded
# and checked bitwise), then `collage-run` on the artifact.
set -eu
build=$1 work=$2 sample=$3
mkdir -p "$work"
"$build/resources/collage-samples" "$work" --only "$sample" > /dev/null
model="$work/$sample.onnx"
out=$("$build/app/collage" tune "$model" --no-cost-db --repeat 3 -o "$work/$sample.json" 2>&1) ||
  { printf '%s\n' "$out"; echo "$sample: tune failed" >&2; exit 1; }
printf '%s\n' "$out" | grep -q "verified against the native reference: ok" ||
  { printf '%s\n' "$out"; echo "$sample: the placement disagrees with the native reference" >&2; exit 1; }
out=$("$build/app/collage" export "$model" --placement "$work/$sample.json" -o "$work/$sample.collage" 2>&1) ||
  { printf '%s\n' "$out"; echo "$sample: export failed" >&2; exit 1; }
printf '%s\n' "$out" | grep -q "bitwise equal" ||
  { printf '%s\n' "$out"; echo "$sample: the artifact disagrees with the in-process run" >&2; exit 1; }
"$build/app/runtime/collage-run" "$work/$sample.collage" --repeat 2 --output-dir "$work/${sample}_out" | tail -1
echo "$sample: tuned, verified, exported and run as an artifact"

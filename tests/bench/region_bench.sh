#!/usr/bin/env bash
# Benchmark (not part of the test suite): a graph-level backend's potential on whole models.
# Every node the backend supports goes into regions as large as convexity allows (one region
# for a CNN: no layout conversion anywhere inside), timed by collage_region_eval against ONNX
# Runtime (onnxruntime-node, intraOpNumThreads THREADS) in alternating turns A B B A, REPEAT
# runs per turn; each side's figure is the median of its turn medians. The region's outputs
# are checked against the native reference by collage_region_eval (max abs error printed).
# usage: tests/bench/region_bench.sh [SAMPLE ...]
#   env: BUILD (build dir), REPEAT (default 20), THREADS (default 1), BACKEND (default onednn-region)
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/bench/ort_setup.sh
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet50 resnext50 googlenet mobilenet_v2 squeezenet dcgan_generator resnet3d)
repeat=${REPEAT:-20} threads=${THREADS:-1} backend=${BACKEND:-onednn-region}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }
printf "%-16s %10s %9s %8s  %s (%s threads)\n" model region_ms ort_ms speedup "$backend" "$threads"
for m in "${models[@]}"; do
  "$build/resources/collage-samples" "$bench" --only "$m" > /dev/null
  model="$bench/$m.onnx"
  a=() b=() detail=""
  for turn in A B B A; do
    if [ $turn = A ]; then
      line=$("$build/tests/collage_region_eval" "$model" "$backend" "$repeat" "$threads")
      a+=("$(echo "$line" | sed -n 's/.*: median \([0-9.]*\) ms.*/\1/p')")
      detail=$(echo "$line" | sed 's/.*threads; //')
    else
      b+=("$(node tests/bench/ort_run.js "$model" "$bench/ort_$m" "$repeat" "$threads" | sed -n 's/^ort median \([0-9.]*\) ms.*/\1/p')")
    fi
  done
  ra=$(printf "%s\n" "${a[@]}" | median) ob=$(printf "%s\n" "${b[@]}" | median)
  printf "%-16s %10.3f %9.3f %7.2fx  %s\n" "$m" "$ra" "$ob" "$(echo "$ob / $ra" | bc -l)" "$detail"
done

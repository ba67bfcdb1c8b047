#!/usr/bin/env bash
# Benchmark (not part of the test suite): per sample model, the op-level placement
# over all backends vs each single library (+ native for what it cannot run) vs
# ONNX Runtime (CPU, 1 thread), measured side by side in one run. Medians over
# repeats; every placement is verified against the native reference by `tune`,
# and the mixed placement's outputs are compared with ONNX Runtime's.
# usage: tests/bench/run_bench.sh [MODEL_NAMES...]   (default: the four small samples)
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/install_deps.sh
bash scripts/build.sh default
bench=build/bench
mkdir -p "$bench"
if [ ! -d "$bench/node_modules/onnxruntime-node" ]; then
  (cd "$bench" && npm install onnxruntime-node --ignore-scripts --no-audit --no-fund > npm.log 2>&1)
fi
export NODE_PATH="$PWD/$bench/node_modules"
export COLLAGE_COST_DB="$bench/costs.sqlite"
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet_small mobilenet_small transformer_small inception_small)
repeat=${REPEAT:-50}
printf "%-18s %9s %9s %9s %9s %9s %9s %8s %8s\n" model native onednn blas xnnpack collage ort vs_best vs_ort
for m in "${models[@]}"; do
  ./build/resources/collage-samples "$bench" --only "$m" > /dev/null
  model="$bench/$m.onnx"
  declare -A ms=()
  for backends in native onednn,native blas,native xnnpack,native onednn,blas,xnnpack,native; do
    out=$(./build/app/collage tune "$model" --backends "$backends" --repeat "$repeat" -o "$bench/$m.$backends.json" 2>/dev/null)
    echo "$out" | grep -q "verified against the native reference: ok" || { echo "$m $backends: verification failed" >&2; exit 1; }
    ms[$backends]=$(echo "$out" | sed -n 's/.*measured median \([0-9.]*\) ms.*/\1/p')
  done
  ort_out=$(node tests/bench/ort_run.js "$model" "$bench/ort_$m" "$repeat")
  ort=$(echo "$ort_out" | sed -n 's/^ort median \([0-9.]*\) ms.*/\1/p')
  inputs=$(echo "$ort_out" | sed -n 's/^inputs //p')
  outputs=$(echo "$ort_out" | sed -n 's/^outputs //p')
  args=()
  for i in $inputs; do args+=(--input "$i"); done
  ./build/app/collage run "$model" --placement "$bench/$m.onednn,blas,xnnpack,native.json" "${args[@]}" \
    --output-dir "$bench/collage_$m" > /dev/null
  for o in $outputs; do
    ./build/app/collage compare "$bench/collage_$m/$o.pb" "$bench/ort_$m/ort_$o.pb" > /dev/null ||
      { echo "$m: output $o disagrees with ONNX Runtime" >&2; exit 1; }
  done
  best=$(printf "%s\n" "${ms[onednn,native]}" "${ms[blas,native]}" "${ms[xnnpack,native]}" | sort -g | head -1)
  mixed=${ms[onednn,blas,xnnpack,native]}
  printf "%-18s %9s %9s %9s %9s %9s %9s %7.2fx %7.2fx\n" "$m" "${ms[native]}" "${ms[onednn,native]}" "${ms[blas,native]}" \
    "${ms[xnnpack,native]}" "$mixed" "$ort" "$(echo "$best / $mixed" | bc -l)" "$(echo "$ort / $mixed" | bc -l)"
done
echo "latencies in ms (median of $repeat runs, 1 thread); vs_best = best single library / collage; vs_ort = ORT / collage"

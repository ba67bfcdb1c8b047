#!/usr/bin/env bash
# Benchmark (not part of the test suite): how long the explorer takes to open large models and
# how long it takes to paint a frame while zooming and panning (tests/bench/explorer_open_eval.cc).
# The models come from the C++ sample builder: gpt2_small (GPT-2-small size, ~660 MB of weights),
# llama_decoder_8k (12 Llama-style layers written out head by head, ~8,000 nodes), encoder_10k.
# Runs offscreen (raster painting, as on a machine without GPU).
# usage: tests/bench/explorer_open_bench.sh [SAMPLE ...]
#   env: BUILD (build dir, default build), ROUNDS (default 3)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(gpt2_small llama_decoder_8k encoder_10k)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR="$work/runtime" COLLAGE_COST_DB="$work/costs.sqlite"
mkdir -m 700 "$work/runtime"
for m in "${models[@]}"; do
  "$build/resources/collage-samples" "$work" --only "$m" > /dev/null
  "$build/tests/collage_explorer_open_eval" "$work/$m.onnx" "${ROUNDS:-3}" | sed "s|$work/||"
  rm -f "$work/$m.onnx"
done

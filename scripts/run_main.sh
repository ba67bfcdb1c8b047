#!/usr/bin/env bash
# The main job: install, build, run the pipeline on the bundled sample model with the
# embedded SQLite cost DB (import -> candidates -> measure -> op-level search ->
# graph-level refinement -> verified placement -> compiled artifact run by the
# standalone runtime), then open the explorer on it. Without a display the explorer runs
# under xvfb-run and saves a screenshot instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh default
model="${1:-resources/models/resnet_small.onnx}"
out=build/main-job
mkdir -p "$out"
export COLLAGE_COST_DB="${COLLAGE_COST_DB:-$out/costs.sqlite}"
./build/app/collage info "$model"
./build/app/collage candidates "$model"
./build/app/collage tune "$model" --refine --budget 60s -o "$out/placement.json"
./build/app/collage run "$model" --placement "$out/placement.json" --repeat 10 --output-dir "$out/outputs"
./build/app/collage export "$model" --placement "$out/placement.json" -o "$out/model.collage"
./build/app/runtime/collage-run "$out/model.collage" --repeat 10 --output-dir "$out/artifact-outputs"
if [ -n "${DISPLAY:-}" ]; then
  ./build/app/collage-explorer "$model" --placement "$out/placement.json"
else
  xvfb-run -a -s "-screen 0 1600x1000x24" ./build/app/collage-explorer "$model" --tune --screenshot "$out/explorer.png"
fi

#!/usr/bin/env bash
# The main job: install, build, then the explorer pipeline on the bundled sample model:
# import -> candidates -> measure (SQLite cost DB) -> search -> verified placement.
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
./build/app/collage tune "$model" -o "$out/placement.json"
./build/app/collage run "$model" --placement "$out/placement.json" --repeat 10 --output-dir "$out/outputs"

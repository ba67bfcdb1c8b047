#!/usr/bin/env bash
# The main job: install, build, then the explorer pipeline on the bundled sample model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh default
model="${1:-resources/models/resnet_small.onnx}"
./build/app/collage info "$model"
./build/app/collage run "$model" --repeat 5 --output-dir build/main-job-outputs

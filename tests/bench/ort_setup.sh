# Sourced by the benchmarks that run ONNX Runtime (peer_bench.sh, region_bench.sh), from the
# repository root: builds unless BUILD names an existing build directory, installs
# onnxruntime-node (npm, --ignore-scripts) into $build/bench-peer once, sets build, bench, NODE_PATH.
build=${BUILD:-build}
if [ -z "${BUILD:-}" ]; then bash scripts/install_deps.sh; bash scripts/build.sh default; fi
bench=$build/bench-peer
mkdir -p "$bench"
if [ ! -d "$bench/node_modules/onnxruntime-node" ]; then
  (cd "$bench" && npm install onnxruntime-node --ignore-scripts --no-audit --no-fund > npm.log 2>&1)
fi
export NODE_PATH="$PWD/$bench/node_modules"

# Sourced by the benchmarks that run ONNX Runtime (peer_bench.sh, collage_table.sh, ...), from the
# repository root: builds unless BUILD names an existing build directory, installs
# onnxruntime-node (npm, --ignore-scripts) into $build/bench-peer once, sets build, bench, NODE_PATH.
# The peer is the very ORT version the onnxruntime backend loads (install_deps.sh's ORT_VERSION), so
# the two sides never differ by an ORT release.
build=${BUILD:-build}
if [ -z "${BUILD:-}" ]; then bash scripts/install_deps.sh; bash scripts/build.sh default; fi
bench=$build/bench-peer
mkdir -p "$bench"
ort_version=$(sed -n 's/^ORT_VERSION=//p' scripts/install_deps.sh)
if ! grep -qs "\"version\": \"$ort_version\"" "$bench/node_modules/onnxruntime-node/package.json"; then
  (cd "$bench" && npm install "onnxruntime-node@$ort_version" --ignore-scripts --no-audit --no-fund > npm.log 2>&1)
fi
export NODE_PATH="$PWD/$bench/node_modules"

#!/usr/bin/env bash
# Installs every Debian 12 package the project builds, tests and runs with.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libprotobuf-dev protobuf-compiler libonnx-dev
  libsqlite3-dev libpq-dev postgresql libgtest-dev nlohmann-json3-dev
  libjpeg-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev
  qtbase5-dev libqt5charts5-dev libqt5svg5-dev libgraphviz-dev
  libdnnl-dev ocl-icd-opencl-dev libopenblas-openmp-dev libxnnpack-dev libpthreadpool-dev
  xvfb xauth bc clang-format
)
# ONNX Runtime's CPU library, as the npm package onnxruntime-node ships it (its install script,
# which downloads GPU providers, is skipped): the onnxruntime backend loads it at run time.
# Optional: without it (no npm, no registry) everything builds and runs, the backend unavailable.
ORT_VERSION=1.30.0
ort_dir="$(dirname "$0")/../third_party/onnxruntime-node"
if ! grep -qs "\"version\": \"$ORT_VERSION\"" "$ort_dir/node_modules/onnxruntime-node/package.json"; then
  if command -v npm > /dev/null; then
    echo "install_deps: installing onnxruntime-node $ORT_VERSION into third_party/onnxruntime-node"
    mkdir -p "$ort_dir"
    npm install --prefix "$ort_dir" "onnxruntime-node@$ORT_VERSION" --ignore-scripts --no-audit --no-fund \
      --loglevel=error > /dev/null ||
      echo "install_deps: onnxruntime-node not installed: the onnxruntime backend stays unavailable" >&2
  else
    echo "install_deps: npm not found: the onnxruntime backend stays unavailable" >&2
  fi
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install_deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

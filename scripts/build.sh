#!/usr/bin/env bash
# Configures and builds one CMake preset (default: "default"; also "asan", "debug").
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
cmake --preset "$preset" > /dev/null
cmake --build --preset "$preset" -j "$(nproc)"

#!/usr/bin/env bash
# The whole test suite: install, build, run every test with CTest.
# `--asan` runs it again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh default
export QT_QPA_PLATFORM=offscreen
ctest --preset default -j "$(nproc)"
if [ "${1:-}" = "--asan" ]; then
  bash scripts/build.sh asan
  ctest --preset asan -j "$(nproc)"
fi

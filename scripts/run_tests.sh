#!/usr/bin/env bash
# The whole test suite: install, build, run every test with CTest.
# `--asan` runs it again under AddressSanitizer + UndefinedBehaviorSanitizer.
# Tests that need what this CPU lacks skip themselves (GTEST_SKIP with the reason); the
# summary at the end names each with its reason.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh default
export QT_QPA_PLATFORM=offscreen

# Runs one preset; prints its skipped tests with their reasons and the counts.
run_preset() {
  local preset=$1 dir=$2 status=0
  ctest --preset "$preset" -j "$(nproc)" 2>&1 | tee "$dir/ctest-summary.log" || status=$?
  bash scripts/skip_report.sh "$dir/ctest-summary.log" "$dir/Testing/Temporary/LastTest.log"
  return $status
}

run_preset default build
if [ "${1:-}" = "--asan" ]; then
  bash scripts/build.sh asan
  run_preset asan build-asan
fi

#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan+UBSan, build-fuzz/) and runs each one.
#   tests/fuzz/run.sh [SECONDS] [HARNESS...]
# SECONDS per harness (default 60); the ONNX importer and run_path get it as is, and so do the small
# harnesses unless FUZZ_RUNS (executions) is set. Logs and crash inputs go to
# ${FUZZ_OUT:-build-fuzz/out}/<harness>/; the growing corpora to build-fuzz/corpus/<harness>/.
# FUZZ_FLAGS adds libFuzzer flags (e.g. "-fork=1 -ignore_crashes=1" to keep going after a finding).
# A crash input, once fixed, belongs in tests/fuzz/regressions/<harness>/ (replayed by the unit tests).
# Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_EACH=${1:-60}
shift || true
ALL=(onnx_import placement_json cost_json artifact tensor_proto run_path)
HARNESSES=("${@:-${ALL[@]}}")
ONNX_DATA=${COLLAGE_CONFORMANCE_DIR:-tests/data/onnx}
OUT=${FUZZ_OUT:-build-fuzz/out}

if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCOLLAGE_FUZZ=ON -DCOLLAGE_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" >/dev/null
fi
cmake --build build-fuzz -j2 --target "${HARNESSES[@]/#/fuzz_}"

# Seed corpora: the committed seeds and regressions, plus the zoo model, the ONNX conformance
# models vendored in tests/data/onnx and the small PyTorch exports (import; control flow among them),
# and the conformance models' .pb inputs/outputs (tensor_proto).
seed_dirs() {
  local h=$1
  for d in tests/fuzz/seeds/$h tests/fuzz/regressions/$h; do [ -d "$d" ] && echo "$d"; done
  case $h in
    onnx_import)
      mkdir -p build-fuzz/seeds/onnx_import
      cp -n resources/models/*.onnx build-fuzz/seeds/onnx_import/ 2>/dev/null || true
      find "$ONNX_DATA" tests/data/exports -name model.onnx -size -64k | while read -r f; do
        cp -n "$f" "build-fuzz/seeds/onnx_import/$(echo "$f" | md5sum | cut -c1-16).onnx"
      done
      echo build-fuzz/seeds/onnx_import ;;
    tensor_proto)
      mkdir -p build-fuzz/seeds/tensor_proto
      # head closes the pipe early (find gets SIGPIPE): not a failure under pipefail.
      find "$ONNX_DATA/node" -name '*.pb' -size -4k | head -3000 | while read -r f; do
        cp -n "$f" "build-fuzz/seeds/tensor_proto/$(echo "$f" | md5sum | cut -c1-16).pb"
      done || true
      echo build-fuzz/seeds/tensor_proto ;;
    run_path) seed_dirs onnx_import ;;  # the importer's seeds, executed
  esac
}

max_len() {
  case $1 in
    onnx_import) echo 65536 ;;
    run_path) echo 65536 ;;
    placement_json) echo 16384 ;;
    *) echo 4096 ;;
  esac
}

status=0
for h in "${HARNESSES[@]}"; do
  mkdir -p "build-fuzz/corpus/$h" "$OUT/$h"
  limit=(-max_total_time="$SECONDS_EACH")
  if [ "$h" != onnx_import ] && [ "$h" != run_path ] && [ -n "${FUZZ_RUNS:-}" ]; then limit=(-runs="$FUZZ_RUNS" -max_total_time="$SECONDS_EACH"); fi
  echo "== $h (${limit[*]})"
  mapfile -t seeds < <(seed_dirs "$h")
  # Stops at the first finding; its input lands in $OUT/$h/ (crash-*, timeout-*, oom-*).
  # Import may evaluate a node to learn its shape: seconds under ASan for a big conformance input.
  timeout=10; [ "$h" = onnx_import ] && timeout=30
  [ "$h" = run_path ] && timeout=30
  if ! build-fuzz/tests/fuzz/fuzz_"$h" -rss_limit_mb=2048 -timeout=$timeout -max_len="$(max_len "$h")" \
      "${limit[@]}" ${FUZZ_FLAGS:-} -print_final_stats=1 -artifact_prefix="$OUT/$h/" \
      "build-fuzz/corpus/$h" "${seeds[@]}" >"$OUT/$h/log.txt" 2>&1; then
    status=1
    echo "   FINDING: see $OUT/$h/log.txt"
  fi
  grep -E '^#[0-9]+.*cov:' "$OUT/$h/log.txt" | tail -1 || true
  grep -E 'stat::number_of_executed_units' "$OUT/$h/log.txt" | tail -1 || true
done
exit $status

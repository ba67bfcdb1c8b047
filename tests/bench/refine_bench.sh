#!/usr/bin/env bash
# Benchmark of the graph-level search (not part of the test suite): per sample
# model, in one run at one thread, with a fresh cost DB: the op-level placement's
# measured latency, the refined placement's, the improvement, the refine time,
# generations run and the generation that reached the final best, and the regions
# moved to graph-level backends. Both placements are verified against the native
# reference by `tune`. When the OpenCV evaluation tool was built (libopencv-dnn-dev
# installed), also OpenCV DNN on the whole model: the largest region a second
# graph-level backend could be given.
# usage: tests/bench/refine_bench.sh [SAMPLE ...]   env: BUILD (build dir), BUDGET (default 60s)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
if [ -z "${BUILD:-}" ]; then bash scripts/install_deps.sh; bash scripts/build.sh default; fi
bench=$build/bench-refine
mkdir -p "$bench"
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet_small mobilenet_small transformer_small inception_small resnext_small
                                   dcgan_generator resnet3d bert_encoder mobilenet_v2 resnet50)
printf "%-17s %9s %9s %6s %9s %8s %5s %5s %6s %9s  %s\n" model oplevel refined gain chosen refine_s gens best evals opencv regions
for m in "${models[@]}"; do
  "$build/resources/collage-samples" "$bench" --only "$m" > /dev/null
  model="$bench/$m.onnx"
  db="$bench/$m.costs.sqlite"
  rm -f "$db" "$db-wal" "$db-shm"
  out=$("$build/app/collage" tune "$model" --cost-db "$db" --refine --budget "${BUDGET:-60s}" 2>/dev/null)
  [ "$(echo "$out" | grep -c "verified against the native reference: ok")" = 2 ] ||
    { echo "$m: verification failed" >&2; echo "$out" >&2; exit 1; }
  op=$(echo "$out" | sed -n 's/^predicted .* measured median \([0-9.]*\) ms.*/\1/p')
  ref=$(echo "$out" | sed -n 's/^refined placement: measured median \([0-9.]*\) ms.*/\1/p')
  # When kernels moved, tune times both placements alternated: that pair is the fair ratio.
  ab=$(echo "$out" | sed -n 's/^side by side .*: op-level \([0-9.]*\) ms, refined \([0-9.]*\) ms.*/\1 \2/p')
  [ -z "$ab" ] || read -r op ref <<< "$ab"
  line=$(echo "$out" | grep '^refine: ')
  secs=$(echo "$line" | sed -n 's/.* in \([0-9.]*\) s$/\1/p')
  gens=$(echo "$line" | sed -n 's/.*kernels, \([0-9]*\) generations.*/\1/p')
  best=$(echo "$line" | sed -n 's/.*best reached in generation \([0-9]*\).*/\1/p')
  evals=$(echo "$line" | sed -n 's/.*), \([0-9]*\) evaluations.*/\1/p')
  regions=$(echo "$out" | sed -n 's/^  moved [a-z0-9-]*: \([0-9]*\) nodes\{0,1\}:.*/\1/p' | paste -sd, -)
  ocv=-
  if [ -x "$build/tests/collage_opencv_eval" ]; then
    ocv=$("$build/tests/collage_opencv_eval" "$model" 20 2>/dev/null | sed -n 's/^opencv median \([0-9.]*\) ms.*/\1/p')
    [ -n "$ocv" ] || ocv=fails
  fi
  chosen=refined
  echo "$out" | grep -q "keeping the op-level one" && chosen=op-level
  [ -n "$regions" ] || chosen=unchanged  # nothing moved: the refined placement is the op-level one
  echo "$out" | sed -n '/graph-level kernels now/,/^refined placement/p' | sed '1d;$d' > "$bench/$m.regions.txt"
  if [ "$chosen" = unchanged ]; then  # one placement: a second measurement of it would only show noise
    printf "%-17s %9.3f %9s %6s %9s %8.1f %5s %5s %6s %9s  %s\n" "$m" "$op" - - "$chosen" "$secs" "$gens" "$best" \
      "$evals" "$ocv" none
    continue
  fi
  printf "%-17s %9.3f %9.3f %5.2fx %9s %8.1f %5s %5s %6s %9s  %s\n" "$m" "$op" "$ref" "$(echo "$op / $ref" | bc -l)" \
    "$chosen" "$secs" "$gens" "$best" "$evals" "$ocv" "$regions"
done
echo "ms = median of 20 runs at 1 thread (of 20 alternating runs each when kernels moved); gain = oplevel / refined; chosen = what tune writes (op-level when the"
echo "refined placement is not faster re-measured); refine_s = graph-level search time;"
echo "best = generation that reached the final best (0 = a seed: op-level or all-offloaded to one backend); regions = nodes per"
echo "graph-level region that took moved kernels (details in $bench/*.regions.txt); opencv = OpenCV DNN on the whole model (fails = cannot import)."

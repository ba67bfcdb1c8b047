#!/usr/bin/env bash
# Benchmark (not part of the test suite): where one model's time goes, by kind of work, in oneDNN's
# graph-level backend and in ONNX Runtime. The backend (default onednn-region; only oneDNN's print their
# primitives) takes the whole model as in region_bench.sh; oneDNN's own per-primitive times
# (DNNL_VERBOSE=1) of its last run are summed per primitive and implementation. ONNX Runtime's profiler gives, per op type, the sum of each node's median
# kernel time. Both at THREADS threads, after warm-up; each line is one kind of work in ms.
# usage: tests/bench/layer_profile.sh MODEL.onnx|SAMPLE
#   env: BUILD (build dir), REPEAT (default 10), THREADS (default 1), BACKEND (default onednn-region)
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/bench/ort_setup.sh
[ $# -eq 1 ] || { echo "usage: $0 MODEL.onnx|SAMPLE" >&2; exit 2; }
repeat=${REPEAT:-10} threads=${THREADS:-1} backend=${BACKEND:-onednn-region}
if [[ "$1" == *.onnx ]]; then
  model="$1" m=$(basename "$1" .onnx)
else
  "$build/resources/collage-samples" "$bench" --only "$1" > /dev/null
  model="$bench/$1.onnx" m=$1
fi
echo "$backend, $threads thread(s), the last of $repeat runs (oneDNN's per-primitive times):"
# The last run: the lines after the previous occurrence of the last primitive's line (its times cut off).
DNNL_VERBOSE=1 "$build/tests/collage_region_eval" "$model" "$backend" "$repeat" "$threads" 2>&1 |
  grep '^onednn_verbose,exec' |
  awk -F, '{ key = $0; sub(/,[^,]*$/, "", key); keys[NR] = key; kind[NR] = $4 " " $5; ms[NR] = $NF }
    END {
      start = 1
      for (i = NR - 1; i >= 1; i--) if (keys[i] == keys[NR]) { start = i + 1; break }
      for (i = start; i <= NR; i++) { sum[kind[i]] += ms[i]; count[kind[i]]++ }
      for (k in sum) printf "%.3f\t%s\t%d\n", sum[k], k, count[k]
    }' | sort -g -r | awk -F'\t' '{ printf "  %-44s %9.3f ms  %4d primitives\n", $2, $1, $3; total += $1 }
                              END { printf "  %-44s %9.3f ms\n", "total", total }'
dir="$bench/profile_$m"
rm -rf "$dir"
echo "ONNX Runtime, $threads intra-op thread(s) (per op type, the sum of each node's median kernel time):"
PROFILE=1 node tests/bench/ort_run.js "$model" "$dir" "$repeat" "$threads" |
  awk '/^ort op / { printf "  %-44s %9.3f ms  %4d nodes\n", $3, $4, $5; total += $4 }
       END { printf "  %-44s %9.3f ms\n", "total", total }'
rm -rf "$dir"

#!/usr/bin/env bash
# Benchmark (not part of the test suite): per sample model, measured in one run at
# one thread: the native kernels alone, each single library (+ native for what it
# cannot run), the Collage op-level placement over all backends, and ONNX Runtime
# (CPU, onnxruntime-node). Medians over repeats; every placement is verified
# against the native reference by `tune`, and the Collage placement's outputs are
# compared with ONNX Runtime's on the same inputs. Also: cold and warm `tune`
# times (fresh vs reused cost DB) and the search time.
# usage: tests/bench/run_bench.sh [SAMPLE ...]   (default: every sample but the 1000-node one); env BUILD=dir
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/bench/ort_setup.sh  # BUILD=dir: use an existing build instead of installing and building
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet_small mobilenet_small transformer_small inception_small resnext_small
                                   dcgan_generator resnet3d bert_encoder mobilenet_v2 resnet50)
repeat=${REPEAT:-30}
field() { sed -n "s/.*$1 \([0-9.]*\) .*/\1/p" | head -1; }
printf "%-17s %8s %8s %8s %8s %8s %8s %7s %7s %7s %8s %8s %7s\n" model native onednn blas xnnpack collage ort \
  vs_best vs_ort add_err cold_s warm_s srch_ms
log_best=0; log_ort=0; n=0
for m in "${models[@]}"; do
  "$build"/resources/collage-samples "$bench" --only "$m" > /dev/null
  model="$bench/$m.onnx"
  db="$bench/$m.costs.sqlite"
  rm -f "$db" "$db-wal" "$db-shm"
  all=onednn,blas,xnnpack,native
  t0=$(date +%s.%N)
  "$build"/app/collage tune "$model" --backends "$all" --cost-db "$db" --repeat 3 > /dev/null 2>&1
  cold=$(echo "$(date +%s.%N) - $t0" | bc -l)
  declare -A ms=()
  for backends in $all native onednn,native blas,native xnnpack,native; do
    t0=$(date +%s.%N)
    out=$("$build"/app/collage tune "$model" --backends "$backends" --cost-db "$db" --repeat "$repeat" -o "$bench/$m.$backends.json" 2>/dev/null)
    [ "$backends" = "$all" ] && warm=$(echo "$(date +%s.%N) - $t0" | bc -l) && search=$(echo "$out" | field "search") &&
      pred=$(echo "$out" | sed -n 's/^predicted \([0-9.]*\) ms.*/\1/p')
    echo "$out" | grep -q "verified against the native reference: ok" || { echo "$m $backends: verification failed" >&2; exit 1; }
    ms[$backends]=$(echo "$out" | field "measured median")
  done
  ort_out=$(node tests/bench/ort_run.js "$model" "$bench/ort_$m" "$repeat")
  ort=$(echo "$ort_out" | field "ort median")
  args=()
  for i in $(echo "$ort_out" | sed -n 's/^inputs //p'); do args+=(--input "$i"); done
  "$build"/app/collage run "$model" --placement "$bench/$m.$all.json" "${args[@]}" --output-dir "$bench/collage_$m" > /dev/null
  for o in $(echo "$ort_out" | sed -n 's/^outputs //p'); do
    "$build"/app/collage compare "$bench/collage_$m/$o.pb" "$bench/ort_$m/ort_$o.pb" --rtol 1e-3 --atol 1e-3 > /dev/null ||
      { echo "$m: output $o disagrees with ONNX Runtime" >&2; exit 1; }
  done
  best=$(printf "%s\n" "${ms[onednn,native]}" "${ms[blas,native]}" "${ms[xnnpack,native]}" | sort -g | head -1)
  mixed=${ms[$all]}
  vb=$(echo "$best / $mixed" | bc -l); vo=$(echo "$ort / $mixed" | bc -l)
  log_best=$(echo "$log_best + l($vb)" | bc -l); log_ort=$(echo "$log_ort + l($vo)" | bc -l); n=$((n + 1))
  printf "%-17s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %6.2fx %6.2fx %+6.0f%% %8.1f %8.2f %7.1f\n" "$m" "${ms[native]}" \
    "${ms[onednn,native]}" "${ms[blas,native]}" "${ms[xnnpack,native]}" "$mixed" "$ort" "$vb" "$vo" \
    "$(echo "100 * ($mixed - $pred) / $pred" | bc -l)" "$cold" "$warm" "$search"
done
printf "geomean: collage vs best single library %.2fx, vs ONNX Runtime %.2fx over %d models\n" \
  "$(echo "e($log_best / $n)" | bc -l)" "$(echo "e($log_ort / $n)" | bc -l)" "$n"
echo "latencies: median ms of $repeat runs, 1 thread. vs_best = best single library / collage, vs_ort = ORT / collage,"
echo "add_err = (measured - predicted) / predicted, cold_s/warm_s = whole tune with an empty/filled cost DB, srch_ms = search time."

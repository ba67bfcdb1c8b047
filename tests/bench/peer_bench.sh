#!/usr/bin/env bash
# Benchmark (not part of the test suite): what a user ships against ONNX Runtime. Per sample, at THREADS
# threads (both sides): `collage tune --refine` with a fresh cost DB writes the placement, `collage export` compiles
# it, then the artifact (collage-run) and ONNX Runtime (CPU, onnxruntime-node) are timed in alternating
# turns, A B B A, REPEAT runs each per turn, on the same inputs; each side's figure is the median of its
# turn medians, so drift of the machine hits both alike. The artifact's outputs are checked against ORT's.
# add_err is the additive error (measured - predicted) `tune` reports for the op-level placement. Each
# tune's stderr (its contests and why it kept what it kept) is left in $build/bench-peer/MODEL.tune.log.
# usage: tests/bench/peer_bench.sh [SAMPLE | MODEL.onnx | modern ...]
#   SAMPLE: a zoo model the C++ builder writes (collage-samples); MODEL.onnx: any model file;
#   modern: the modern zoo, real PyTorch exports (tests/bench/export_modern_zoo.py, Debian's
#   python3-torch/torchvision, written once into $build/bench-peer/modern/).
# env: BUILD (build dir), REPEAT (default 30), BUDGET (default 60s), THREADS (default 1),
#      ACCURACY (a budget, e.g. cosine=0.999,max-rel=5e-2: tune --accuracy, so int8 kernels take part;
#      the artifact's outputs are then held to that budget against ORT's fp32 ones, and reported;
#      `export --qdq` writes the int8 MatMuls and Gemms as ONNX integer ops, and ORT on that model is timed
#      as a third side, the int8 peer)
#      SHAPES=dynamic: import with --shapes dynamic (detectors: shapes decided as the model runs)
#      ROUNDS (default 1): the alternating turns are run this many times over (on a noisy machine,
#      more turns make each side's median steadier)
#      TURN_MS (default 25): a model predicted faster runs more than REPEAT runs a turn, so that a turn
#      lasts about this long (up to 200 runs; both sides alike)
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/bench/ort_setup.sh
modern=(efficientnet_b0 mobilenet_v3_large regnet_y_800mf convnext_tiny densenet121 bert_base vit_b_16 gpt2_small)
models=()
for a in "$@"; do
  if [ "$a" = modern ]; then
    for m in "${modern[@]}"; do models+=("$bench/modern/$m.onnx"); done
  else
    models+=("$a")
  fi
done
if printf '%s\n' "${models[@]}" | grep -q "^$bench/modern/"; then
  /usr/bin/python3 -c "import torch, torchvision" 2> /dev/null ||
    bash -c 'SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo; DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-torch python3-torchvision python3-onnx' > /dev/null
  /usr/bin/python3 tests/bench/export_modern_zoo.py "$bench/modern" "${modern[@]}" >&2
fi
[ ${#models[@]} -gt 0 ] ||
  models=(resnet50 resnext50 mobilenet_v2 googlenet squeezenet bert_encoder dcgan_generator resnet3d
          vit_small gpt_block lstm_classifier segmentation_head resnet_small_opset18 resnet_small_fp16
          bert_encoder_fp16)
repeat=${REPEAT:-30}
threads=${THREADS:-1}
[[ "$threads" =~ ^[1-9][0-9]*$ ]] || { echo "THREADS must be a positive integer, not '$threads'" >&2; exit 2; }
# The two CPUs' round trip (tests/bench/core_round_trip.cc) before and after a model's turns: ~90 ns
# when the host keeps this machine's vCPUs close, several times that when it has moved them apart,
# which slows runs of several threads (their kernels synchronise at every parallel region).
round_trip() { "$build/tests/collage_core_round_trip" | sed -n 's/^round trip \([0-9]*\) ns.*/\1/p'; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }
printf "%-17s %10s %9s %8s %9s %8s %8s  %s\n" model collage_ms ort_ms speedup placement add_err tune_s \
  "turns (threads: $threads)"
log_sum=0; n=0
for m in "${models[@]}"; do
  if [[ "$m" == *.onnx ]]; then
    model="$m" m=$(basename "$m" .onnx)
  else
    "$build/resources/collage-samples" "$bench" --only "$m" > /dev/null
    model="$bench/$m.onnx"
  fi
  db="$bench/$m.costs.sqlite"
  rm -f "$db" "$db-wal" "$db-shm"
  t0=$(date +%s.%N)
  accuracy_args=()
  [ -n "${ACCURACY:-}" ] && accuracy_args=(--accuracy "$ACCURACY")
  out=$("$build/app/collage" tune "$model" --shapes "${SHAPES:-static}" --threads "$threads" --cost-db "$db" --refine --budget "${BUDGET:-60s}" \
          "${accuracy_args[@]}" -o "$bench/$m.json" 2>"$bench/$m.tune.log") ||
    { echo "$m: tune failed: $(echo "$out" | grep -E '^verified|error' | head -2)" >&2; exit 1; }
  tune_s=$(echo "$(date +%s.%N) - $t0" | bc -l)
  echo "$out" | grep -q "verified against the native reference: ok" || { echo "$m: verification failed" >&2; exit 1; }
  chosen=refined
  echo "$out" | grep -q "keeping the op-level one" && chosen=op-level
  echo "$out" | grep -q "^  moved " || chosen=op-level
  lib=$(echo "$out" | sed -n 's/^\([a-z0-9-]*\) alone (its kernels, native for the rest) is faster.*/\1/p')
  [ -n "$lib" ] && chosen="$lib-alone"
  # The op-level placement's additive error: its measured end-to-end latency against the sum of its
  # kernels' isolated costs, the error of the op-level search's cost model (a refined placement's
  # "prediction" sums op-level costs of kernels that now run inside regions, so it says little).
  add_err=$(echo "$out" | sed -n 's/^additive error (measured - predicted): .* ms (\([-+0-9.]*%\))$/\1/p' | head -1)
  [ -n "$add_err" ] || { echo "$m: no additive error in the tune output" >&2; exit 1; }
  qdq_args=()
  [ -n "${ACCURACY:-}" ] && qdq_args=(--qdq "$bench/$m.qdq.onnx")
  "$build/app/collage" export "$model" --shapes "${SHAPES:-static}" --placement "$bench/$m.json" -o "$bench/$m.collage" "${qdq_args[@]}" |
    grep -q "bitwise equal" || { echo "$m: export check failed" >&2; exit 1; }
  ort_out=$(node tests/bench/ort_run.js "$model" "$bench/ort_$m" 3 "$threads")
  args=()
  for i in $(echo "$ort_out" | sed -n 's/^inputs //p'); do args+=(--input "$i"); done
  run_out=$("$build/app/runtime/collage-run" "$bench/$m.collage" "${args[@]}" --output-dir "$bench/collage_$m")
  echo "$run_out" | grep -q "kernels, $threads threads\?," ||
    { echo "$m: the artifact does not carry $threads thread(s): $(echo "$run_out" | head -1)" >&2; exit 1; }
  # float16 outputs: both sides round at different points (we compute in fp32 inside each kernel), so
  # the check allows fp16's own resolution (2^-10 relative) accumulated over the model.
  read -r -a types <<< "$(echo "$ort_out" | sed -n 's/^output_types //p')"
  k=0 reached=""
  for o in $(echo "$ort_out" | sed -n 's/^outputs //p'); do
    if [ -n "${ACCURACY:-}" ]; then
      cmp=$("$build/app/collage" compare "$bench/collage_$m/$o.pb" "$bench/ort_$m/ort_$o.pb" --accuracy "$ACCURACY") ||
        { echo "$m: output $o is outside the budget against ONNX Runtime: $cmp" >&2; exit 1; }
      reached+=" $o: $(echo "$cmp" | sed -n 's/.*\(max-rel [^,]*, cosine [^,]*\).*/\1/p')"
      k=$((k + 1))
      continue
    fi
    tol=(--rtol 1e-3 --atol 1e-3)
    [ "${types[$k]:-}" = float16 ] && tol=(--rtol 2e-2 --atol 2e-2)
    "$build/app/collage" compare "$bench/collage_$m/$o.pb" "$bench/ort_$m/ort_$o.pb" "${tol[@]}" > /dev/null ||
      { echo "$m: output $o disagrees with ONNX Runtime" >&2; exit 1; }
    k=$((k + 1))
  done
  # Ten runs of a 0.1 ms model fall inside a process's first milliseconds, which on a 2-thread virtual
  # machine ran 1.5x slower in one process of three or four (docs/benchmarks.md): a short turn runs longer.
  predicted=$(grep -o '"predicted_ms": *[0-9.e+-]*' "$bench/$m.json" | head -1 | sed 's/.*: *//')
  reps=$(awk -v r="$repeat" -v p="${predicted:-0}" -v t="${TURN_MS:-25}" \
    'BEGIN { n = p > 0 ? int(t / p + 0.999) : r; if (n > 200) n = 200; print (n > r ? n : r) }')
  a=() b=() c=() round="A B B A A B B A"
  [ -n "${ACCURACY:-}" ] && round="A B C C B A A B C C B A"
  turns=""
  for ((r = 0; r < ${ROUNDS:-1}; r++)); do turns+=" $round"; done
  if [ -n "${ACCURACY:-}" ]; then
    qdq_out=$(node tests/bench/ort_run.js "$bench/$m.qdq.onnx" "$bench/ortqdq_$m" 3 "$threads")
    for o in $(echo "$ort_out" | sed -n 's/^outputs //p'); do
      cmp=$("$build/app/collage" compare "$bench/ortqdq_$m/ort_$o.pb" "$bench/ort_$m/ort_$o.pb" --accuracy "$ACCURACY") || true
      reached+="; ORT on the QDQ model: $(echo "$cmp" | sed -n 's/.*\(max-rel [^,]*, cosine [^,]*\).*/\1/p')"
    done
  fi
  trip_before=$(round_trip)
  for turn in $turns; do
    if [ $turn = C ]; then
      c+=("$(node tests/bench/ort_run.js "$bench/$m.qdq.onnx" "$bench/ortqdq_$m" "$reps" "$threads" |
               sed -n 's/^ort median \([0-9.]*\) ms.*/\1/p')")
    elif [ $turn = A ]; then
      a+=("$("$build/app/runtime/collage-run" "$bench/$m.collage" "${args[@]}" --repeat "$reps" |
               sed -n 's/.*: median \([0-9.]*\) ms.*/\1/p')")
    else
      b+=("$(node tests/bench/ort_run.js "$model" "$bench/ort_$m" "$reps" "$threads" | sed -n 's/^ort median \([0-9.]*\) ms.*/\1/p')")
    fi
  done
  trips="; round trip $trip_before-$(round_trip) ns"
  ca=$(printf "%s\n" "${a[@]}" | median) ob=$(printf "%s\n" "${b[@]}" | median)
  # The model's arithmetic (multiply-adds as 2) over each side's time: against the machine's FMA peak,
  # how much either side leaves.
  flops=$("$build/app/collage" info "$model" --shapes "${SHAPES:-static}" | sed -n 's/^FLOPs: .* (\([0-9]*\))$/\1/p')
  rates=$(awk -v f="${flops:-0}" -v c="$ca" -v o="$ob" \
    'BEGIN { if (f > 0) printf "; GFLOP/s collage %.1f, ORT %.1f", f / c * 1e-6, f / o * 1e-6 }')
  spread=$(printf "%s\n" "${a[@]}" | sort -g | sed -n '1p;$p' | paste -sd- -)
  log_sum=$(echo "$log_sum + l($ob / $ca)" | bc -l); n=$((n + 1))
  # Paired: the median of the ratios of neighbouring turns (the k-th turn of each side), so a machine
  # whose speed changes between turns (not within one) cancels out of each ratio.
  paired() { for ((i = 0; i < ${#a[@]}; i++)); do eval "echo \"\${$1[$i]} / ${a[$i]}\"" | bc -l; done | median; }
  pairs=$(printf "; paired %.2fx" "$(paired b)")
  qdq=""
  if [ ${#c[@]} -gt 0 ]; then
    oc=$(printf "%s\n" "${c[@]}" | median)
    qdq=$(printf "; ORT on the QDQ model %.3f ms (%.2fx, paired %.2fx)" "$oc" "$(echo "$oc / $ca" | bc -l)" "$(paired c)")
  fi
  printf "%-17s %10.3f %9.3f %7.2fx %9s %8s %8.1f  collage %s ms over %d turns of %d runs%s%s%s%s%s\n" "$m" "$ca" \
    "$ob" "$(echo "$ob / $ca" | bc -l)" "$chosen" "$add_err" "$tune_s" "$spread" "${#a[@]}" "$reps" "$pairs" "$rates" "$trips" \
    "${reached:+; against ORT:$reached}" "$qdq"
done
printf "geomean speed-up over ONNX Runtime: %.2fx over %d models\n" "$(echo "e($log_sum / $n)" | bc -l)" "$n"
echo "threads: $threads. collage_ms = the exported artifact run by collage-run (tuned and run at $threads thread(s));"
echo "ort_ms = onnxruntime-node, $threads intra-op thread(s), 1 inter-op; both the median of $((4 * ${ROUNDS:-1})) alternating turn medians"
echo "of $repeat runs (more for a model under ${TURN_MS:-25} ms a turn, up to 200); speedup = ort / collage (paired: the median of the ratios of the k-th turns of the two sides);"
echo "GFLOP/s = the model's arithmetic (collage info's FLOPs, a multiply-add counts 2) over each side's median time;"
echo "round trip = two CPUs passing a flag back and forth, before and after the turns (~90 ns close; far more: vCPUs apart, several threads slower);"
echo "placement = what tune --refine wrote (op-level, refined, or LIB-alone: one library's kernels, faster side by side); add_err = tune's additive error"
echo "(measured - predicted) of the op-level placement; tune_s = the whole tune --refine (cold cost DB, budget ${BUDGET:-60s});"
if [ -n "${ACCURACY:-}" ]; then
  echo "tuned under --accuracy $ACCURACY (int8 kernels allowed); outputs held to that budget against ORT's fp32 ones."
else
  echo "outputs checked against ORT (rtol/atol 1e-3)."
fi

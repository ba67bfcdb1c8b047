#!/usr/bin/env bash
# Benchmark (not part of the test suite): Collage's headline table. Per model, at THREADS threads:
# each fp32 backend alone (an op-level backend: the op-level search over its candidates, native filling
# what it lacks; a graph-level one: its regions over all it takes, native for the rest), ONNX Runtime
# alone (onnxruntime-node, the peer), Collage op-level (every backend) and Collage refined (`tune
# --refine`), each exported and run by collage-run, and the speed-up of Collage refined over the best
# single backend (ONNX Runtime alone counted among them) and over ONNX Runtime. One tune with a fresh
# cost DB measures every candidate; the single-backend searches reuse its costs. The sides are timed in
# ROUNDS rounds, each side REPEAT runs a round, in rotating order; each figure is the median of its
# round medians; sides whose placements have the same kernels are timed once. The refined artifact's
# outputs are checked against ONNX Runtime's.
# usage: tests/bench/collage_table.sh SAMPLE|MODEL.onnx|modern ...
#   modern: the modern zoo, real PyTorch exports (as peer_bench.sh writes them once)
# env: BUILD (build dir), REPEAT (default 20), ROUNDS (default 3), THREADS (default 1), BUDGET (default 60s),
#   ROUND_MS (default 100: a model predicted faster runs more than REPEAT runs a round, up to 200)
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/bench/ort_setup.sh
repeat=${REPEAT:-20} rounds=${ROUNDS:-3} threads=${THREADS:-1}
collage="$build/app/collage" run="$build/app/runtime/collage-run"
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }
# The fp32 op-level backends this machine can run (collage --help lists each with its precision).
mapfile -t singles < <("$collage" --help | sed -n 's/^  \([a-z0-9-]*\) (fp32)$/\1/p' | grep -vE 'region|graph|^native$')
# The fp32 graph-level ones alone: the refine over that backend and native only (its seed "every node it
# takes goes to it, native for the rest" against what little else it may find).
mapfile -t wholes < <("$collage" --help | sed -n 's/^  \([a-z0-9-]*\) (fp32)$/\1/p' | grep -E 'region|graph')
# Those searched only from some thread count on ("(fp32, at 2+ threads)": onnxruntime-serial), at that count.
mapfile -t from_threads < <("$collage" --help | sed -n 's/^  \([a-z0-9-]*\) (fp32, at \([0-9]*\)+ threads)$/\1 \2/p' |
  awk -v t="$threads" '$2 <= t { print $1 }')
singles=(native "${singles[@]}" "${from_threads[@]}" "${wholes[@]}")
printf "%-16s" model; for b in "${singles[@]}"; do printf " %11s" "$b"; done
printf " %11s %11s %11s %11s %8s %8s\n" best_single ort_alone op_level refined vs_best vs_ort
modern=(efficientnet_b0 mobilenet_v3_large regnet_y_800mf convnext_tiny densenet121 bert_base vit_b_16 gpt2_small)
models=()
for a in "$@"; do
  if [ "$a" = modern ]; then
    for mm in "${modern[@]}"; do models+=("$bench/modern/$mm.onnx"); done
  else
    models+=("$a")
  fi
done
if printf '%s\n' "${models[@]}" | grep -q "^$bench/modern/"; then
  /usr/bin/python3 -c "import torch, torchvision" 2> /dev/null ||
    bash -c 'SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo; DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-torch python3-torchvision python3-onnx' > /dev/null
  /usr/bin/python3 tests/bench/export_modern_zoo.py "$bench/modern" "${modern[@]}" >&2
fi
log_best=0 log_ort=0 n=0
for m in "${models[@]}"; do
  if [[ "$m" == *.onnx ]]; then
    model="$m" m=$(basename "$m" .onnx)
  else
    "$build/resources/collage-samples" "$bench" --only "$m" > /dev/null
    model="$bench/$m.onnx"
  fi
  dir="$bench/table_$m" db="$bench/table_$m/costs.sqlite"
  rm -rf "$dir" && mkdir -p "$dir"
  out=$("$collage" tune "$model" --threads "$threads" --cost-db "$db" --refine --budget "${BUDGET:-60s}" \
          -o "$dir/refined.json" 2>/dev/null)
  echo "$out" | grep -q "verified against the native reference: ok" || { echo "$m: verification failed" >&2; exit 1; }
  "$collage" tune "$model" --threads "$threads" --cost-db "$db" --contest-rounds 0 -o "$dir/op_level.json" > /dev/null 2>&1
  sides=(op_level refined)
  for b in "${singles[@]}"; do
    if printf '%s\n' "${wholes[@]}" | grep -qx "$b"; then
      "$collage" tune "$model" --threads "$threads" --cost-db "$db" --contest-rounds 0 --backends "$b" \
        --repeat 3 --refine --population 2 --generations 1 --patience 1 --budget "${BUDGET:-60s}" \
        -o "$dir/$b.json" > /dev/null 2>&1
    else
      "$collage" tune "$model" --threads "$threads" --cost-db "$db" --contest-rounds 0 --backends "$b" \
        -o "$dir/$b.json" > /dev/null 2>&1
    fi
    sides+=("$b")
  done
  for s in "${sides[@]}"; do
    "$collage" export "$model" --placement "$dir/$s.json" -o "$dir/$s.collage" > /dev/null
  done
  ort_out=$(node tests/bench/ort_run.js "$model" "$dir/ort" 3 "$threads")
  args=()
  for i in $(echo "$ort_out" | sed -n 's/^inputs //p'); do args+=(--input "$i"); done
  "$run" "$dir/refined.collage" "${args[@]}" --output-dir "$dir/out" > /dev/null
  # float16 outputs: both sides round at different points, so fp16's own resolution is allowed.
  read -r -a types <<< "$(echo "$ort_out" | sed -n 's/^output_types //p')"
  k=0
  for o in $(echo "$ort_out" | sed -n 's/^outputs //p'); do
    tol=(--rtol 1e-3 --atol 1e-3)
    [ "${types[$k]:-}" = float16 ] && tol=(--rtol 2e-2 --atol 2e-2)
    "$collage" compare "$dir/out/$o.pb" "$dir/ort/ort_$o.pb" "${tol[@]}" > /dev/null ||
      { echo "$m: output $o disagrees with ONNX Runtime" >&2; exit 1; }
    k=$((k + 1))
  done
  # A round of a small model is at least ROUND_MS long (both sides alike): 5 runs of 1 ms are noise.
  predicted=$(grep -o '"predicted_ms": *[0-9.e+-]*' "$dir/refined.json" | head -1 | sed 's/.*: *//')
  reps=$(awk -v r="$repeat" -v p="$predicted" -v t="${ROUND_MS:-100}" \
    'BEGIN { n = p > 0 ? int(t / p + 0.999) : r; if (n > 200) n = 200; print (n > r ? n : r) }')
  # Sides whose placements have the same kernels are one program: timed once, the others take its
  # times (refined is often one library's whole graph; timing it twice would report noise as a ratio).
  declare -A times=() first_of=() same_as=()
  all=(ort)
  for s in "${sides[@]:2}" op_level refined; do  # a Collage side the same as a single backend is it
    key=$(node -e 'const p = JSON.parse(require("fs").readFileSync(process.argv[1]));
      console.log(JSON.stringify(p.kernels.map(k => [k.backend, k.label, k.nodes])))' "$dir/$s.json" | md5sum)
    if [ -n "${first_of[$key]:-}" ]; then same_as[$s]=${first_of[$key]}; else first_of[$key]=$s all+=("$s"); fi
  done
  for ((r = 0; r < rounds; ++r)); do
    for ((k = 0; k < ${#all[@]}; ++k)); do  # rotate the order each round
      s=${all[$(((k + r) % ${#all[@]}))]}
      if [ "$s" = ort ]; then
        t=$(node tests/bench/ort_run.js "$model" "$dir/ort" "$reps" "$threads" | sed -n 's/^ort median \([0-9.]*\) ms.*/\1/p')
      else
        t=$("$run" "$dir/$s.collage" "${args[@]}" --repeat "$reps" | sed -n 's/.*: median \([0-9.]*\) ms.*/\1/p')
      fi
      times[$s]+="$t "
    done
  done
  for s in "${!same_as[@]}"; do times[$s]=${times[${same_as[$s]}]}; done
  ms() { printf "%s\n" ${times[$1]} | median; }
  best="" best_ms=""
  printf "%-16s" "$m"
  for b in "${singles[@]}"; do
    t=$(ms "$b"); printf " %11.3f" "$t"
    if [ -z "$best_ms" ] || (($(echo "$t < $best_ms" | bc -l))); then best=$b best_ms=$t; fi
  done
  ort=$(ms ort) op=$(ms op_level) ref=$(ms refined)
  # ONNX Runtime alone runs the whole model as one backend: it is a single backend too.
  if (($(echo "$ort < $best_ms" | bc -l))); then best=ort_alone best_ms=$ort; fi
  printf " %11s %11.3f %11.3f %11.3f %7.2fx %7.2fx\n" "$best" "$ort" "$op" "$ref" \
    "$(echo "$best_ms / $ref" | bc -l)" "$(echo "$ort / $ref" | bc -l)"
  [ -n "${same_as[refined]:-}" ] && echo "  (refined: the same kernels as ${same_as[refined]}, timed once)"
  log_best=$(echo "$log_best + l($best_ms / $ref)" | bc -l) log_ort=$(echo "$log_ort + l($ort / $ref)" | bc -l)
  n=$((n + 1))
  unset times first_of same_as
done
printf "geomean over %d models: Collage refined %.2fx the best single backend, %.2fx ONNX Runtime alone\n" "$n" \
  "$(echo "e($log_best / $n)" | bc -l)" "$(echo "e($log_ort / $n)" | bc -l)"
echo "ms: median of $rounds round medians, $repeat runs a round (more for a model under ${ROUND_MS:-100} ms a round), $threads thread(s); single backends: an op-level"
echo "search over that backend's candidates (a graph-level one: its regions), native for the rest; ort_alone:"
echo "onnxruntime-node, the model as it is; sides with the same kernels are one program, timed once"

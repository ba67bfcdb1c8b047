#!/bin/bash
# Shape buckets (docs/shape-buckets.md): one `collage tune --dim seq=16,32,64,128,256` against five
# separate one-shape tunes of the same model, each with a fresh cost DB, and then per bucket:
#   - size: the bucketed artifact against one one-shape artifact (the weights are stored once);
#   - latency: the bucketed artifact (collage-run --dim) vs the separately tuned one-shape artifact
#     vs ONNX Runtime running the symbolic model at that shape (ort_run.js, DIMS=...), alternated
#     A B C C B A A B C C B A, medians of the turns' medians;
#   - correctness: both artifacts' outputs against ORT's on ORT's inputs (rtol/atol 1e-3).
# usage: bash tests/bench/bucket_bench.sh [MODEL.onnx]
#   MODEL: default the BERT-base encoder exported with a symbolic sequence dim
#          (export_modern_zoo.py bert_base_dynseq)
# env: BUILD (build dir), DIM (default seq), VALUES (default 16,32,64,128,256), THREADS (default 1),
#      REPEAT (runs per turn, default 10), REFINE (1: tune --refine --budget $BUDGET, default off),
#      REUSE (1: keep the last run's tunes, exports and tune times; time the artifacts again)
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/bench/ort_setup.sh
model=${1:-$bench/modern/bert_base_dynseq.onnx}
if [ "$#" -eq 0 ] && [ ! -f "$model" ]; then
  /usr/bin/python3 -c "import torch" 2> /dev/null ||
    bash -c 'SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo; DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-torch python3-torchvision python3-onnx' > /dev/null
  /usr/bin/python3 tests/bench/export_modern_zoo.py "$bench/modern" bert_base_dynseq >&2
fi
dim=${DIM:-seq}
values=${VALUES:-16,32,64,128,256}
threads=${THREADS:-1}
repeat=${REPEAT:-10}
[[ "$threads" =~ ^[1-9][0-9]*$ ]] || { echo "THREADS must be a positive integer, not '$threads'" >&2; exit 2; }
out=$build/bench-buckets
mkdir -p "$out"
collage=$build/app/collage
run=$build/app/runtime/collage-run
refine=()
[ "${REFINE:-0}" = 1 ] && refine=(--refine --budget "${BUDGET:-30s}")
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2)}'; }
now() { date +%s.%N; }

fresh_db() { rm -f "$1" "$1-wal" "$1-shm"; }
tune() {  # tune DB OUT.json DIM_SPEC -> prints seconds
  local t0 t1
  t0=$(now)
  "$collage" tune "$model" --dim "$3" --threads "$threads" --cost-db "$1" "${refine[@]}" -o "$2" \
    > "$2.log" 2>&1 || { echo "tune --dim $3 failed: $(tail -3 "$2.log")" >&2; exit 1; }
  grep -q "verified against the native reference: ok" "$2.log" || { echo "tune --dim $3: not verified" >&2; exit 1; }
  t1=$(now)
  echo "$t1 - $t0" | bc -l
}
export_checked() {  # export PLACEMENT OUT.collage [--dim ...] (a one-shape placement's own dims)
  "$collage" export "$model" --placement "$1" -o "$2" "${@:3}" > "$2.log" 2>&1 ||
    { echo "export $1 failed: $(tail -3 "$2.log")" >&2; exit 1; }
  if grep -q "disagree" "$2.log"; then echo "export $1: the artifact disagrees with the in-process run" >&2; exit 1; fi
}

echo "model $model, --dim $dim=$values, $threads thread(s)${refine:+, tune ${refine[*]}}" >&2
declare -A t_one
# REUSE=1: the tunes and exports of the last run (and their times, tune_times.txt), to time again.
if [ "${REUSE:-0}" = 1 ]; then
  source "$out/tune_times.txt"
else
  fresh_db "$out/all.sqlite"
  t_all=$(tune "$out/all.sqlite" "$out/all.json" "$dim=$values")
  export_checked "$out/all.json" "$out/all.collage"
  echo "t_all=$t_all" > "$out/tune_times.txt"
  for v in ${values//,/ }; do
    fresh_db "$out/one_$v.sqlite"
    t_one[$v]=$(tune "$out/one_$v.sqlite" "$out/one_$v.json" "$dim=$v")
    echo "t_one[$v]=${t_one[$v]}" >> "$out/tune_times.txt"
    export_checked "$out/one_$v.json" "$out/one_$v.collage" --dim "$dim=$v"
  done
fi
sum=0
for v in ${values//,/ }; do sum=$(echo "$sum + ${t_one[$v]}" | bc -l); done
size_all=$(stat -c %s "$out/all.collage")

printf "%-10s %10s %10s %10s %9s %9s %11s %11s %10s %22s %11s\n" bucket bucketed_ms one_ms ort_ms vs_one vs_ort \
  one_tune_s one_size_MiB diff "paired_vs_one (range)" paired_vs_ort
for v in ${values//,/ }; do
  ort_dir=$out/ort_$v
  ort_out=$(DIMS="$dim=$v" node tests/bench/ort_run.js "$model" "$ort_dir" 3 "$threads")
  args=()
  for i in $(echo "$ort_out" | sed -n 's/^inputs //p'); do args+=(--input "$i"); done
  for side in all one; do
    pick=(--dim "$dim=$v")  # the one-shape artifact has one plan, its shapes its own
    artifact=$out/all.collage
    [ $side = one ] && artifact=$out/one_$v.collage pick=()
    "$run" "$artifact" "${pick[@]}" "${args[@]}" --output-dir "$out/${side}_out_$v" > /dev/null
    for o in $(echo "$ort_out" | sed -n 's/^outputs //p'); do
      "$collage" compare "$out/${side}_out_$v/$o.pb" "$ort_dir/ort_$o.pb" --rtol 1e-3 --atol 1e-3 > /dev/null ||
        { echo "$dim=$v: the $side artifact's output $o disagrees with ONNX Runtime" >&2; exit 1; }
    done
  done
  a=() b=() c=()
  for turn in A B C C B A A B C C B A; do
    case $turn in
      A) a+=("$("$run" "$out/all.collage" --dim "$dim=$v" "${args[@]}" --repeat "$repeat" |
                sed -n 's/.*: median \([0-9.]*\) ms.*/\1/p')") ;;
      B) b+=("$("$run" "$out/one_$v.collage" "${args[@]}" --repeat "$repeat" |
                sed -n 's/.*: median \([0-9.]*\) ms.*/\1/p')") ;;
      C) c+=("$(DIMS="$dim=$v" node tests/bench/ort_run.js "$model" "$ort_dir" "$repeat" "$threads" |
                sed -n 's/^ort median \([0-9.]*\) ms.*/\1/p')") ;;
    esac
  done
  ma=$(printf "%s\n" "${a[@]}" | median) mb=$(printf "%s\n" "${b[@]}" | median)
  mc=$(printf "%s\n" "${c[@]}" | median)
  # Paired: the i-th A turn sits next to the i-th B turn (and two turns from the i-th C), so each
  # ratio b_i/a_i is taken within seconds and the machine's slow drift cancels out of it.
  pairs=() pairs_ort=()
  for i in "${!a[@]}"; do
    pairs+=("$(echo "${b[$i]} / ${a[$i]}" | bc -l)")
    pairs_ort+=("$(echo "${c[$i]} / ${a[$i]}" | bc -l)")
  done
  pv=$(printf "%s\n" "${pairs[@]}" | median) po=$(printf "%s\n" "${pairs_ort[@]}" | median)
  prange=$(printf "%s\n" "${pairs[@]}" | sort -g | sed -n '1p;$p' | xargs printf "%.3f-%.3f" 2> /dev/null)
  # Whether the bucket's placement is the separately tuned one (kernel for kernel).
  same=$("$collage" diff "$out/all.json" "$out/one_$v.json" --dim "$dim=$v" --model "$model" 2> /dev/null |
           grep -c "^identical" || true)
  printf "%-10s %10.3f %10.3f %10.3f %8.3fx %8.2fx %11.1f %11.2f %10s %8.3fx (%s) %10.2fx\n" "$dim=$v" "$ma" "$mb" "$mc" \
    "$(echo "$mb / $ma" | bc -l)" "$(echo "$mc / $ma" | bc -l)" "${t_one[$v]}" \
    "$(echo "$(stat -c %s "$out/one_$v.collage") / 1048576" | bc -l)" \
    "$([ "$same" = 1 ] && echo same || echo differs)" "$pv" "$prange" "$po"
done
printf "bucketed artifact: %.2f MiB (%s buckets); one-shape artifacts above\n" \
  "$(echo "$size_all / 1048576" | bc -l)" "$(echo "$values" | tr ',' '\n' | wc -l)"
printf "tune time: one tune of every bucket %.1f s; five separate tunes %.1f s in all (%.2fx)\n" "$t_all" "$sum" \
  "$(echo "$sum / $t_all" | bc -l)"
echo "bucketed_ms = the bucketed artifact (collage-run --dim), one_ms = the separately tuned one-shape artifact,"
echo "ort_ms = ONNX Runtime on the symbolic model at that shape; medians over 4 turns of $repeat runs each,"
echo "alternated; vs_one = one_ms / bucketed_ms, vs_ort = ort_ms / bucketed_ms (> 1: collage faster);"
echo "paired_* = the median (and range) of the per-turn ratios, each taken between neighbouring turns."

#!/usr/bin/env bash
# Benchmark of compiled artifacts (not part of the test suite): per sample model,
# at one thread: tune (op-level, cost DB kept in the bench dir), export, then the
# artifact's size, load time, latency with collage-run vs the in-process run of the
# same placement (`collage run --placement`, which also verifies it against the
# native reference), alternated A/B/A/B with the lower median of each kept, and
# intermediate memory: static plan arena vs the dynamic pool vs no reuse. Ends with
# the runtime library's size and its linked libraries.
# usage: tests/bench/artifact_bench.sh [SAMPLE ...]   env: BUILD (build dir), REPEAT (default 30)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
if [ -z "${BUILD:-}" ]; then bash scripts/install_deps.sh; bash scripts/build.sh default; fi
bench=$build/bench-artifact
mkdir -p "$bench"
repeat=${REPEAT:-30}
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet_small mobilenet_small transformer_small inception_small resnext_small
                                   dcgan_generator resnet3d bert_encoder mobilenet_v2 resnet50)
num() { sed -n "s/$1/\1/p" | head -1; }
printf "%-17s %9s %8s %8s %10s %10s %7s %10s %10s %10s\n" model size_MiB load_ms parse_ms inproc_ms artifact_ms ratio \
  arena_MiB pool_MiB noreuse_MiB
for m in "${models[@]}"; do
  "$build/resources/collage-samples" "$bench" --only "$m" > /dev/null
  model="$bench/$m.onnx"
  "$build/app/collage" tune "$model" --cost-db "$bench/$m.costs.sqlite" -o "$bench/$m.json" > /dev/null 2>&1
  out=$("$build/app/collage" export "$model" --placement "$bench/$m.json" -o "$bench/$m.collage")
  echo "$out" | grep -q "bitwise equal\|within 1e-5" || { echo "$m: export check failed: $out" >&2; exit 1; }
  size=$(stat -c %s "$bench/$m.collage")
  best_in=""; best_art=""; load=""
  for round in 1 2; do
    in=$("$build/app/collage" run "$model" --placement "$bench/$m.json" --repeat "$repeat" | num '^median \([0-9.]*\) ms.*')
    art_out=$("$build/app/runtime/collage-run" "$bench/$m.collage" --repeat "$repeat")
    art=$(echo "$art_out" | num '.*: median \([0-9.]*\) ms.*')
    l=$(echo "$art_out" | num '.*loaded in \([0-9.]*\) ms.*')
    parse=$(echo "$art_out" | num '.*parse \([0-9.]*\) ms.*')
    best_in=$(printf "%s\n%s\n" "${best_in:-$in}" "$in" | sort -g | head -1)
    best_art=$(printf "%s\n%s\n" "${best_art:-$art}" "$art" | sort -g | head -1)
    load=$(printf "%s\n%s\n" "${load:-$l}" "$l" | sort -g | head -1)
  done
  arena=$(echo "$art_out" | num '.*arena \([0-9.]*\) MiB.*')
  noreuse=$(echo "$art_out" | num '.*without reuse \([0-9.]*\) MiB.*')
  pool=$("$build/app/runtime/collage-run" "$bench/$m.collage" --no-memory-plan | num '.*pool peak \([0-9.]*\) MiB.*')
  printf "%-17s %9.2f %8.1f %8.1f %10.3f %10.3f %6.2fx %10.2f %10.2f %10.2f\n" "$m" "$(echo "$size / 1048576" | bc -l)" \
    "$load" "$parse" "$best_in" "$best_art" "$(echo "$best_in / $best_art" | bc -l)" "$arena" "$pool" "$noreuse"
done
echo "load = whole load (lower of two), parse = its read + verify + parse part (the rest builds kernels);"
echo "ms = lower of two medians of $repeat runs at 1 thread; ratio = in-process / artifact (>1: the artifact is faster);"
echo "arena = static memory plan, pool = the executor's dynamic best-fit pool (peak live), noreuse = every buffer fresh."
so=$(readlink -f "$build/app/runtime/libcollage_runtime.so")
echo "runtime library: $(basename "$so") $(stat -c %s "$so") bytes; linked libraries:"
ldd "$so" | sed 's/ (0x[0-9a-f]*)//'

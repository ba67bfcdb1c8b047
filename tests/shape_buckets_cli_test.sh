#!/bin/sh
# usage: shape_buckets_cli_test.sh COLLAGE COLLAGE_RUN MODEL.onnx (a model with the symbolic dim "batch")
# Shape buckets end to end through the command-line tools: one tune for batch 1 and 2 writes one
# placement file (version 2), export one artifact (format 2.x) whose plans collage-run picks per
# shape; a bucket that is not there, repeated values and several shapes for a one-shape command
# are exit 2 naming the problem. Works in its own temporary directory.
collage=$1 run=$2 model=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/collage_buckets_cli.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect CODE REGEX CMD...: the exit code and a line of stdout+stderr matching REGEX.
expect() {
  want=$1 regex=$2
  shift 2
  out=$("$@" 2>&1)
  rc=$?
  [ "$rc" -eq "$want" ] || fail "exit $rc (expected $want): $*
$out"
  printf '%s\n' "$out" | grep -Eq -- "$regex" || fail "no line matches /$regex/: $*
$out"
}
tune="--backends xnnpack,native --no-cost-db --in-process --repeat 2"
expect 0 "2 shape buckets \(batch=1; batch=2\) tuned in" "$collage" tune "$model" --dim batch=1,2 $tune -o "$dir/p.json"
grep -q '"version": 2' "$dir/p.json" || fail "the bucketed placement is not version 2"
[ "$(grep -c '"format": "collage-placement"' "$dir/p.json")" -eq 3 ] || fail "expected a placement per bucket"
expect 0 "in 2 shape buckets" "$collage" export "$model" --placement "$dir/p.json" -o "$dir/m.collage"
[ "$(printf '%s\n' "$out" | grep -c "reloaded and run: outputs bitwise equal")" -eq 2 ] ||
  fail "each bucket's plan must be checked after the reload: $out"
expect 0 "format 2\.[0-9]+, .* 2 shape buckets \(batch=1; batch=2; [0-9]+ converted weights shared between them\)" "$run" "$dir/m.collage"
printf '%s\n' "$out" | grep -q "bucket batch=1: output logits: float32 \[1,10\]" || fail "batch 1 did not run: $out"
printf '%s\n' "$out" | grep -q "bucket batch=2: output logits: float32 \[2,10\]" || fail "batch 2 did not run: $out"
expect 0 "^logits: float32 \[2,10\]|output logits: float32 \[2,10\]" "$run" "$dir/m.collage" --dim batch=2 --output-dir "$dir/out"
[ -s "$dir/out/logits.pb" ] || fail "--dim batch=2 wrote no output"
# Refusals, each naming the buckets there are or the problem.
expect 2 "no plan for batch=3; its buckets: batch=1; batch=2" "$run" "$dir/m.collage" --dim batch=3
expect 2 "has no placement for batch=3; its buckets: batch=1; batch=2" \
  "$collage" export "$model" --placement "$dir/p.json" --dim batch=3 -o "$dir/x.collage"
[ ! -e "$dir/x.collage" ] || fail "a refused export left a file"
# Measured in worker processes (the default) with --refine: one session serves both buckets, so
# only the first bucket starts a worker, and each bucket's refined placement is verified.
expect 0 "2 shape buckets \(batch=1; batch=2\) tuned in" "$collage" tune "$model" --dim batch=1,2 \
  --backends xnnpack-graph,native --no-cost-db --repeat 2 --refine --budget 2s -o "$dir/refined.json"
[ "$(printf '%s\n' "$out" | grep -c "measure worker(s)")" -eq 1 ] || fail "the second bucket started a worker: $out"
[ "$(printf '%s\n' "$out" | grep -c "^refine: ")" -eq 2 ] || fail "expected a refine per bucket: $out"
[ "$(printf '%s\n' "$out" | grep -c "verified against the native reference: ok")" -eq 4 ] ||
  fail "expected each bucket's op-level and refined placements verified: $out"
expect 2 "lists 1 twice" "$collage" tune "$model" --dim batch=1,1 $tune
expect 2 "this command takes one" "$collage" info "$model" --dim batch=1,2
expect 2 "name one with --dim" "$collage" run "$model" --placement "$dir/p.json"
# One bucket of the file: export, profile, and where the placement changes with the shape.
expect 0 "end to end: median" "$collage" profile "$model" --placement "$dir/p.json" --dim batch=2 --repeat 2
expect 0 "^predicted: A" "$collage" diff "$dir/p.json" "$dir/p.json" --bucket-a batch=1 --bucket-b batch=2 --model "$model"
expect 2 "needs --model" "$collage" diff "$dir/p.json" "$dir/p.json" --bucket-a batch=1 --bucket-b batch=2
# A one-shape tune still writes version 1, and its artifact is format 1.x.
expect 0 "placement written to" "$collage" tune "$model" --dim batch=2 $tune -o "$dir/one.json"
grep -q '"buckets"' "$dir/one.json" && fail "a one-shape placement must stay version 1"
expect 0 "bitwise equal" "$collage" export "$model" --placement "$dir/one.json" --dim batch=2 -o "$dir/one.collage"
expect 0 "format 1\.[0-9]+," "$run" "$dir/one.collage"
echo "shape buckets through the CLI: ok"

#!/bin/sh
# Ctrl+C during `collage tune --refine` ends the search with the best placement found so
# far, which is still verified against the native reference and written (exit 0).
# usage: cli_interrupt_test.sh COLLAGE MODEL WORKDIR
set -u
collage=$1 model=$2 dir=$3
mkdir -p "$dir" && rm -f "$dir/p.json" "$dir/out" "$dir/err"
"$collage" tune "$model" --backends xnnpack-graph,xnnpack,native --no-cost-db --repeat 3 --refine --budget 10m \
  --generations 100000 --patience 100000 -o "$dir/p.json" > "$dir/out" 2> "$dir/err" &
pid=$!
# Wait for the event (the first generation reported), polling; give up after 120 s.
polls=0
until grep -q "^refining: generation 1," "$dir/err"; do
  if ! kill -0 "$pid" 2> /dev/null; then echo "tune ended before refining:"; cat "$dir/err"; exit 1; fi
  polls=$((polls + 1))
  if [ "$polls" -gt 1200 ]; then kill "$pid"; echo "no generation reported in 120 s"; exit 1; fi
  sleep 0.1
done
kill -INT "$pid"
wait "$pid"
rc=$?
cat "$dir/out"
[ "$rc" -eq 0 ] || { echo "exit status $rc after Ctrl+C:"; tail -5 "$dir/err"; exit 1; }
grep -q "^refine interrupted" "$dir/out" || { echo "no 'refine interrupted' line"; exit 1; }
[ "$(grep -c 'verified against the native reference: ok' "$dir/out")" -eq 2 ] || { echo "not verified twice"; exit 1; }
grep -q '"kernels"' "$dir/p.json" || { echo "no placement written"; exit 1; }
echo "cli_interrupt_test: ok"

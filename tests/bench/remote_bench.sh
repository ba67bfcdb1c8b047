#!/bin/sh
# usage: BUILD=build tests/bench/remote_bench.sh [MODEL] [REPEAT]
# A cold tune of one zoo model (default resnet50) measured five ways on this machine:
# into a fresh SQLite file in-process (--in-process) and isolated in a measure worker
# process (the default), into a fresh PostgreSQL database measuring
# locally (--remote with 0 workers falls back), and with 1 and 2 local `collage worker`s
# (--threads 1 each) serving that database's queue. Each configuration gets a fresh
# database; the configurations alternate for REPEAT rounds (default 2). Prints the
# measuring time (what the tune reports) and the whole command's wall time.
set -eu
build=${BUILD:-build} model_name=${1:-resnet50} repeat=${2:-2}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/collage_remote_bench.XXXXXX)
chmod 755 "$work"  # the server runs as the postgres user when we are root
workers=""
cleanup() {
  for p in $workers; do kill "$p" 2>/dev/null || true; done
  sh "$here/../pg_server.sh" stop "$work/pg"
  rm -rf "$work"
}
trap cleanup EXIT
url=$(sh "$here/../pg_server.sh" start "$work/pg")
"$build/resources/collage-samples" "$work" --only "$model_name" > /dev/null
model="$work/$model_name.onnx"
fresh_db() {  # runs in a $(...) subshell: the name comes from a counter file
  db=$(($(cat "$work/dbs" 2>/dev/null || echo 0) + 1))
  echo "$db" > "$work/dbs"
  psql -q "$url" -c "CREATE DATABASE bench$db" > /dev/null
  echo "$url" | sed "s|/postgres?|/bench$db?|"
}
run() {  # run CONFIG LOCATION [--remote]: prints "CONFIG measure_s wall_s"
  config=$1 location=$2
  shift 2
  t0=$(date +%s.%N)
  out=$("$build/app/collage" tune "$model" --cost-db "$location" "$@" -o "$work/p.json" 2> "$work/err.txt")
  t1=$(date +%s.%N)
  measure=$(echo "$out" | sed -n 's/^tune: .* in \([0-9.]*\) s;.*/\1/p')
  measured=$(echo "$out" | sed -n 's/^tune: [0-9]* candidates (\([0-9]*\) measured.*/\1/p')
  printf "%-22s %8s s measuring (%s kernels) %8.1f s wall\n" "$config" "$measure" "$measured" \
    "$(echo "$t1 - $t0" | bc)"
}
with_workers() {  # with_workers N: a fresh DB, N workers serving it, one remote tune
  n=$1 location=$(fresh_db)
  workers=""
  i=0
  while [ $i -lt "$n" ]; do
    i=$((i + 1))
    "$build/app/collage" worker --cost-db "$location" --threads 1 --name "bench-$i" > "$work/w$i.log" 2>&1 &
    workers="$workers $!"
  done
  # Registered before the tune starts (else it measures locally).
  until [ "$("$build/app/collage" workers --cost-db "$location" | grep -c ' yes ')" -ge "$n" ]; do sleep 0.2; done
  run "postgresql, $n workers" "$location" --remote
  for p in $workers; do kill "$p"; wait "$p" 2>/dev/null || true; done
  workers=""
}
echo "cold tune of $model_name, 1 thread, $(nproc) cores; $repeat rounds"
r=0
while [ $r -lt "$repeat" ]; do
  r=$((r + 1))
  rm -f "$work/costs.sqlite"*
  run "sqlite, in-process" "$work/costs.sqlite" --in-process
  rm -f "$work/costs.sqlite"*
  run "sqlite, isolated" "$work/costs.sqlite"
  run "postgresql, 0 workers" "$(fresh_db)" --remote
  with_workers 1
  with_workers 2
done

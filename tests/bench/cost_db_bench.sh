#!/bin/sh
# usage: BUILD=build tests/bench/cost_db_bench.sh [N]
# PostgreSQL against SQLite per stored cost, on this machine: a throw-away server
# (tests/pg_server.sh, unix socket, fsync on like SQLite's commits) and a fresh SQLite
# file in one temp dir.
set -eu
build=${BUILD:-build} n=${1:-500}
work=$(mktemp -d /tmp/collage_costdb_bench.XXXXXX)
chmod 755 "$work"  # the server runs as the postgres user when we are root
trap 'sh "$(dirname "$0")/../pg_server.sh" stop "$work/pg"; rm -rf "$work"' EXIT
url=$(PG_SERVER_FSYNC=on sh "$(dirname "$0")/../pg_server.sh" start "$work/pg")
"$build/tests/collage_cost_db_eval" "$n" "$work/costs.sqlite" "$url"

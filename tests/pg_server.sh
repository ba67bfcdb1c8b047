#!/bin/sh
# usage: pg_server.sh start DIR | restart DIR | stop DIR
# A throw-away PostgreSQL server for tests and benchmarks (Debian's `postgresql` package):
# initdb + pg_ctl in DIR, listening only on a unix socket in DIR/sock (no TCP port), trust
# authentication for the `postgres` user. initdb refuses to run as root, so as root the
# server runs as the unprivileged `postgres` user the package creates. `start` prints the
# connection URL of the `postgres` database; `stop` stops the server and removes DIR.
set -eu
cmd=$1 dir=$2
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] && [ -x "$bin/initdb" ] || { echo "pg_server: no PostgreSQL server installed (Debian package postgresql)" >&2; exit 3; }
as_server() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case $cmd in
  start)
    if [ "$(id -u)" -eq 0 ] && ! id postgres > /dev/null 2>&1; then
      echo "pg_server: running as root and there is no 'postgres' user to run the server as" >&2; exit 3
    fi
    mkdir -p "$dir/sock"
    [ "$(id -u)" -eq 0 ] && chown -R postgres "$dir"
    as_server "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync > "$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
    # The port only names the socket file; nothing listens on TCP. Tests skip fsync (-F);
    # PG_SERVER_FSYNC=on keeps it, for benchmarks against SQLite's durable commits.
    nofsync="-F"; [ "${PG_SERVER_FSYNC:-off}" = on ] && nofsync=""
    as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-k $dir/sock -c listen_addresses='' -p 5432 $nofsync" start > /dev/null ||
      { cat "$dir/server.log" >&2; exit 1; }
    echo "postgresql://postgres@/postgres?host=$dir/sock&port=5432"
    ;;
  restart)  # the same server and data, e.g. to test reconnecting clients
    as_server "$bin/pg_ctl" -D "$dir/data" -m fast -w restart > /dev/null 2>&1 || { cat "$dir/server.log" >&2; exit 1; }
    ;;
  stop)
    [ -d "$dir/data" ] && as_server "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop > /dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
  *) echo "usage: pg_server.sh start DIR | restart DIR | stop DIR" >&2; exit 2 ;;
esac

# Sourced by bench/scaleout/run.sh and events.sh: a throwaway PostgreSQL in $TMP (trust auth on
# 127.0.0.1, fsync on: the defaults; socket in $TMP/sock; as `nobody` when run as root).
# Needs PG_BIN and TMP; sets PG_USER, PG_PORT, PG_PID and defines as_pg, free_port, sql and
# stop_postgres (for the caller's EXIT trap).

# as_pg CMD...: PostgreSQL refuses to run as root.
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u nobody -- "$@"; else "$@"; fi; }
PG_USER=$(if [[ $(id -u) == 0 ]]; then echo nobody; else id -un; fi)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# sql DB QUERY: one query, unaligned output.
sql() { psql -X -q -At -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d "$1" -c "$2"; }

# start_postgres: initdb, start, wait until it accepts connections (exits with its log if not).
PG_PID=""
start_postgres() {
  local i
  mkdir -p "$TMP/pg" "$TMP/sock"
  [[ $(id -u) == 0 ]] && chown nobody "$TMP/pg" "$TMP/sock"
  as_pg "$PG_BIN/initdb" -D "$TMP/pg" --auth=trust -U "$PG_USER" -E UTF8 --locale=C.UTF-8 >"$TMP/initdb.log" 2>&1 ||
    { cat "$TMP/initdb.log" >&2; exit 1; }
  PG_PORT=$(free_port)
  as_pg "$PG_BIN/postgres" -D "$TMP/pg" -p "$PG_PORT" -c listen_addresses=127.0.0.1 \
    -c unix_socket_directories="$TMP/sock" -c max_connections=200 >"$TMP/pg.log" 2>&1 &
  PG_PID=$!
  for ((i = 0; i < 100; i++)); do
    "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && break
    sleep 0.1
  done
  "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" || { cat "$TMP/pg.log" >&2; exit 1; }
}

# stop_postgres: PG_PID is the subshell around runuser: stop the postmaster itself (fast).
stop_postgres() {
  if [[ -n $PG_PID ]]; then
    as_pg "$PG_BIN/pg_ctl" -D "$TMP/pg" -m fast -w stop >/dev/null 2>&1 || true
    wait "$PG_PID" 2>/dev/null || true
  fi
}

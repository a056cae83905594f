#!/usr/bin/env bash
# Scale-out benchmark (issue 21): durable branch_create + branch_return pairs on 1 contextd over
# SQLite, then on 1, 2 and 3 contextd instances sharing one throwaway PostgreSQL 15, in the same
# run, and on the same instances the foundation's HTTP load (bench/http/run.sh: tools/call of the
# conformance fixture test_simple_text, which writes nothing); then a kill -9 of one of two
# instances under load, and a count in the database of what the load generator saw acknowledged;
# then the same kill with sessions failing over to the survivor (failover.mjs, node).
#
#   bench/scaleout/run.sh                 # RUNS=2 DURATION=5 WARMUP=1 CONC=12
#                                         # HTTP_SESSIONS=16 HTTP_CONC=32 (HTTP=0: pairs only)
#                                         # FAILOVER_SESSIONS=12 (FAILOVER=0: no failover run)
#   BUILD=build/release CONTEXTD=... LOAD=... bench/scaleout/run.sh
#
# mcp_load drives one endpoint, so N instances get N mcp_load processes at once, each with CONC/N
# sessions and CONC/N in flight (the remainder to the first ones). pairs/s is their sum; p99 is the
# largest of their p99s (a bound, not the p99 of the merged samples). Every instance gets its own
# fresh database for each run (CREATE DATABASE), SQLite its own fresh data dir.
# Build first: cmake --preset release && cmake --build --preset release --target contextd-conformance mcp_load
# (the test binary: contextd plus the conformance fixtures that `--conformance-fixtures` registers)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build/release}
CONTEXTD=${CONTEXTD:-$BUILD/src/cli/contextd-conformance}
LOAD=${LOAD:-$BUILD/bench/http/mcp_load}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
RUNS=${RUNS:-2}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
CONC=${CONC:-12}
HTTP=${HTTP:-1}
FAILOVER=${FAILOVER:-1}
FAILOVER_SESSIONS=${FAILOVER_SESSIONS:-12}
HTTP_SESSIONS=${HTTP_SESSIONS:-16}
HTTP_CONC=${HTTP_CONC:-32}
KILL_DURATION=${KILL_DURATION:-8}
KILL_AFTER=${KILL_AFTER:-3}
for f in "$CONTEXTD" "$LOAD" "$PG_BIN/initdb" "$PG_BIN/postgres"; do
  [[ -x $f ]] || { echo "missing $f" >&2; exit 1; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/contextd-scaleout.XXXXXX")
chmod 755 "$TMP"
PIDS=()
source bench/scaleout/lib.sh
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  stop_postgres
  rm -rf "$TMP"
}
trap cleanup EXIT

start_postgres
echo "postgres $(sql postgres 'SHOW server_version') on 127.0.0.1:$PG_PORT, fsync=$(sql postgres 'SHOW fsync'), synchronous_commit=$(sql postgres 'SHOW synchronous_commit')"
echo "contextd $CONTEXTD ($(git rev-parse --short HEAD)), $(nproc) cores, RUNS=$RUNS DURATION=$DURATION WARMUP=$WARMUP CONC=$CONC HTTP=$HTTP HTTP_SESSIONS=$HTTP_SESSIONS HTTP_CONC=$HTTP_CONC"

DB_SEQ=0
# config BACKEND: writes a config file for a fresh store into CFG (and DB for postgres).
config() {
  local f
  DB_SEQ=$((DB_SEQ + 1))
  f=$TMP/config$DB_SEQ.yaml
  {
    echo "context_folding:"
    echo "  branch_creation_rate_limit: 1000000/second"
    echo "  max_concurrent_branches_per_instance: 10000"
    if [[ $1 == postgres ]]; then
      DB=bench$DB_SEQ
      sql postgres "CREATE DATABASE $DB" >/dev/null
      echo "store:"
      echo "  backend: postgres"
      echo "  postgres:"
      echo "    url: \"postgresql://$PG_USER@127.0.0.1:$PG_PORT/$DB\""
    fi
  } >"$f"
  CFG=$f
}

# start CONFIG I: starts instance I, sets URLS[I] and PIDS[I].
URLS=()
start() {
  local cfg=$1 i=$2 url="" k
  rm -rf "$TMP/data$i"
  : >"$TMP/err$i"  # a previous instance's log would name its dead URL
  "$CONTEXTD" serve --config "$cfg" --data-dir "$TMP/data$i" --listen 127.0.0.1:0 \
    --conformance-fixtures --log-level warn 2>"$TMP/err$i" &
  PIDS[i]=$!
  for ((k = 0; k < 200; k++)); do
    url=$(grep -o 'http://[^ ]*/mcp' "$TMP/err$i" | head -1) && [[ -n $url ]] && break
    sleep 0.1
  done
  [[ -n $url ]] || { echo "instance $i did not start:" >&2; cat "$TMP/err$i" >&2; exit 1; }
  URLS[i]=$url
}
stop_all() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
  URLS=()
}

# load N DURATION WARMUP LABEL [MODE]: one mcp_load per instance 0..N-1 at once; RESULT lines in
# $TMP/load<i>. MODE pairs (default): CONC branch pairs in flight in all; http: HTTP_CONC calls
# of test_simple_text over HTTP_SESSIONS sessions in all.
load() {
  local n=$1 d=$2 w=$3 label=$4 mode=${5:-pairs} i c s
  local lp=() what
  for ((i = 0; i < n; i++)); do
    if [[ $mode == http ]]; then
      c=$((HTTP_CONC / n + (i < HTTP_CONC % n ? 1 : 0)))
      s=$((HTTP_SESSIONS / n + (i < HTTP_SESSIONS % n ? 1 : 0)))
      what=(--tool test_simple_text --args '{}')
    else
      c=$((CONC / n + (i < CONC % n ? 1 : 0)))
      s=$c
      what=(--branch-pairs)
    fi
    "$LOAD" --url "${URLS[i]}" --sessions "$s" --concurrency "$c" --duration "$d" --warmup "$w" \
      "${what[@]}" --label "$label/$i" >"$TMP/load$i" 2>"$TMP/load$i.err" &
    lp+=($!)
  done
  for i in "${lp[@]}"; do wait "$i" || true; done
}
# summary N: "pairs/s p99max errors p50max"
summary() {
  local i
  for ((i = 0; i < $1; i++)); do grep '^RESULT' "$TMP/load$i" || echo "RESULT rps=0 p50_ms=0 p99_ms=0 errors=-1"; done |
    awk '{ for (f = 1; f <= NF; f++) { split($f, kv, "="); v[kv[1]] = kv[2] }
           rps += v["rps"]; err += v["errors"]; if (v["p99_ms"] > p99) p99 = v["p99_ms"];
           if (v["p50_ms"] > p50) p50 = v["p50_ms"]; per = per sprintf(" %s", v["rps"]) }
         END { printf "%.0f %.3f %d %.3f%s\n", rps, p99, err, p50, per }'
}

# bench BACKEND N RUN
bench() {
  local backend=$1 n=$2 cfg i s
  config "$backend"
  cfg=$CFG
  [[ $backend == postgres ]] && "$CONTEXTD" migrate --config "$cfg" >/dev/null
  for ((i = 0; i < n; i++)); do start "$cfg" "$i"; done
  load "$n" "$DURATION" "$WARMUP" "$backend-$n"
  s=$(summary "$n")
  read -r rps p99 err p50 per <<<"$s"
  printf "RESULT run=%d backend=%s instances=%d pairs_per_s=%s p50_max_ms=%s p99_max_ms=%s errors=%s per_instance_pairs_per_s=%s\n" \
    "$3" "$backend" "$n" "$rps" "$p50" "$p99" "$err" "$(tr ' ' , <<<"$per")"
  if [[ $HTTP == 1 ]]; then
    load "$n" "$DURATION" "$WARMUP" "$backend-$n-http" http
    s=$(summary "$n")
    read -r rps p99 err p50 per <<<"$s"
    printf "RESULT run=%d backend=%s instances=%d http_calls_per_s=%s p50_max_ms=%s p99_max_ms=%s errors=%s per_instance_calls_per_s=%s\n" \
      "$3" "$backend" "$n" "$rps" "$p50" "$p99" "$err" "$(tr ' ' , <<<"$per")"
  fi
  stop_all
}

for ((r = 1; r <= RUNS; r++)); do
  bench sqlite 1 "$r"
  bench postgres 1 "$r"
  bench postgres 2 "$r"
  bench postgres 3 "$r"
done

# --- kill -9 under load: 2 instances, one killed KILL_AFTER s into a KILL_DURATION s run with no
# warmup (so mcp_load counts every pair it saw completed).
config postgres
cfg=$CFG
"$CONTEXTD" migrate --config "$cfg" >/dev/null
start "$cfg" 0
start "$cfg" 1
load 2 "$KILL_DURATION" 0 kill &
LOADER=$!
sleep "$KILL_AFTER"
kill -9 "${PIDS[1]}"
wait "${PIDS[1]}" 2>/dev/null || true
echo "kill -9 instance 1 (pid ${PIDS[1]}) at ${KILL_AFTER}s of ${KILL_DURATION}s"
wait "$LOADER"
survivor_completed=$(curl -sf "${URLS[0]%/mcp}/metrics" |
  awk '/^contextd_branches_finished_total\{status="completed"\}/ {print $2}')
for i in 0 1; do
  echo "mcp_load on instance $i: $(grep -v '^RESULT' "$TMP/load$i" | tail -1)"
  head -3 "$TMP/load$i.err" | sed 's/^/  stderr: /'
done
stop_all
by_status=$(sql "$DB" "SELECT status || '=' || count(*) FROM branches GROUP BY status ORDER BY status" | tr '\n' ' ')
db_completed=$(sql "$DB" "SELECT count(*) FROM branches WHERE status = 'completed'")
live=$(sql "$DB" "SELECT count(*) FROM branches WHERE status IN ('created', 'active')")
for i in 0 1; do
  read -r rps err <<<"$(grep '^RESULT' "$TMP/load$i" | awk '{ for (f = 1; f <= NF; f++) { split($f, kv, "="); v[kv[1]] = kv[2] } print v["rps"], v["errors"] }')"
  eval "rps$i=${rps:-0} err$i=${err:-?}"
done
# mcp_load prints pairs/s rounded to a whole number: acknowledged pairs = rps * duration, within
# +-duration/2.
half=$(awk -v d="$KILL_DURATION" 'BEGIN { printf "%d", (d + 1) / 2 }')
ack0=$((rps0 * KILL_DURATION)) ack1=$((rps1 * KILL_DURATION))
killed_in_db=$((db_completed - ${survivor_completed:-0}))
echo "RESULT kill: db branches by status: $by_status"
echo "RESULT kill: survivor (instance 0) acknowledged ~$ack0 pairs (+-$half), its metrics count ${survivor_completed:-?} completed; errors $err0"
echo "RESULT kill: killed (instance 1) acknowledged ~$ack1 pairs (+-$half) before dying; completed in the db from its sessions (db - survivor) $killed_in_db; errors $err1"
verdict=ok
((db_completed >= ack0 + ack1 - 2 * half)) || verdict=LOST
((killed_in_db >= ack1 - half)) || verdict=LOST
echo "RESULT kill: db completed $db_completed >= acknowledged ~$((ack0 + ack1)) (+-$((2 * half))): $verdict; live (unreturned) branches left $live"

# --- kill -9 with session failover (decision 0025): FAILOVER_SESSIONS MCP sessions doing branch
# pairs, half initialized on each of 2 instances (bench/scaleout/failover.mjs); instance 1 is
# killed KILL_AFTER s in, and its sessions move to instance 0 with the same Mcp-Session-Id. The
# client lists every pair it saw acknowledged; each must be completed in the database.
if [[ $FAILOVER == 1 ]]; then
  config postgres
  cfg=$CFG
  "$CONTEXTD" migrate --config "$cfg" >/dev/null
  start "$cfg" 0
  start "$cfg" 1
  node bench/scaleout/failover.mjs --urls "${URLS[0]},${URLS[1]}" --sessions "$FAILOVER_SESSIONS" \
    --duration "$KILL_DURATION" --out "$TMP/failover.json" >"$TMP/failover.out" 2>&1 &
  LOADER=$!
  sleep "$KILL_AFTER"
  kill -9 "${PIDS[1]}"
  wait "${PIDS[1]}" 2>/dev/null || true
  wait "$LOADER" || true
  stop_all
  echo "RESULT failover: client $(cat "$TMP/failover.out")"
  # The acknowledged ids go to PostgreSQL as a file (too many for one command line).
  node -e 'const r = require(process.argv[1]);
    const rows = r.completed.map((i) => `(${JSON.stringify(i).replace(/"/g, "\x27")})`);
    console.log(`SELECT ${r.completed.length}, count(*) FROM branches b JOIN (VALUES ${rows.join(",") || "(NULL)"}) AS a(id) ON a.id = b.id WHERE b.status = \x27completed\x27;`)' \
    "$TMP/failover.json" >"$TMP/failover.sql"
  IFS='|' read -r acked found < <(psql -X -q -At -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d "$DB" -f "$TMP/failover.sql")
  echo "RESULT failover: acknowledged pairs $acked, completed in the database $found, lost $((acked - found))"
  echo "RESULT failover: db branches by status: $(sql "$DB" "SELECT status || '=' || count(*) FROM branches GROUP BY status ORDER BY status" | tr '\n' ' ')"
fi

#!/usr/bin/env bash
# Transport-only throughput of two builds, in alternation: transport_echo_server --http of each
# build under the same mcp_load (the first build's), RUNS times, plain and with 1,000 idle
# connections + 200 SSE streams held.
#
#   bench/http/pair_echo.sh OLD_BUILD_DIR NEW_BUILD_DIR   # RUNS=3 DURATION=8 SESSIONS=16 CONC=32
set -euo pipefail
OLD=${1:?usage: $0 OLD_BUILD_DIR NEW_BUILD_DIR}
NEW=${2:?usage: $0 OLD_BUILD_DIR NEW_BUILD_DIR}
RUNS=${RUNS:-3}
DURATION=${DURATION:-8}
WARMUP=${WARMUP:-2}
SESSIONS=${SESSIONS:-16}
CONC=${CONC:-32}
LOAD=$OLD/bench/http/mcp_load
ulimit -n 8192 2>/dev/null || true
TMP=$(mktemp -d)
PID=
cleanup() { [[ -n $PID ]] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT

one() {  # label build extra-load-args...
  local label=$1 build=$2; shift 2
  "$build/bench/http/transport_echo_server" --http --io-threads 2 2>"$TMP/err" >/dev/null &
  PID=$!
  local url=
  for _ in $(seq 1 200); do
    url=$(grep -o 'http://[^ ]*/mcp' "$TMP/err" | head -1 || true)
    [[ -n $url ]] && break
    sleep 0.05
  done
  local out rps ticks
  out=$("$LOAD" --url "$url" --sessions "$SESSIONS" --concurrency "$CONC" --duration "$DURATION" \
    --warmup "$WARMUP" --tool echo --args '{"message":"hello"}' --label "$label" "$@" |
    grep '^RESULT' || echo "RESULT label=$label failed")
  # Server CPU (user + system, whole run incl. warmup) per request at the measured rate.
  ticks=$(awk '{print $14 + $15}' "/proc/$PID/stat")
  rps=$(sed -n 's/.* rps=\([0-9.]*\).*/\1/p' <<<"$out")
  echo "$out server_cpu_us_per_req=$(awk -v t="$ticks" -v r="${rps:-0}" -v d="$DURATION" \
    -v w="$WARMUP" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { if (r > 0) printf "%.1f", t / hz * 1e6 / (r * (d + w)); else print "n/a" }')"
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
}

for r in $(seq 1 "$RUNS"); do
  one old "$OLD"
  one new "$NEW"
  one old-held "$OLD" --idle-conns 1000 --sse-streams 200
  one new-held "$NEW" --idle-conns 1000 --sse-streams 200
done

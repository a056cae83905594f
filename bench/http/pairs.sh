#!/usr/bin/env bash
# Durable branch_create + branch_return pairs over HTTP (issue 3): for each contextd binary given,
# in alternation, RUNS saturated runs (16 sessions, 16 in flight) and then one paced run per rate
# in RATES. Each run starts a fresh server on a fresh data dir (SQLite WAL, every change committed
# before its reply) and prints pairs/s, p50/p99, commits, and CPU per pair: the engine executor
# (the thread named contextd-exec) and all server threads, read from /proc (steal not counted).
# Beside them, the same load against transport_echo_server (FLOOR=0 to skip): contextd's HTTP
# transport in front of an engine that answers at once on its own thread, with no store, and two
# calls per operation (the same round trips as a pair). Its latency is the floor this machine and
# the load generator put under any engine: what a pair costs above it is contextd's.
#
#   bench/http/pairs.sh [CONTEXTD...]     # default build/release/src/cli/contextd
#   RUNS=3 RATES="500 1000" DURATION=8 WARMUP=1 DATA=/tmp bench/http/pairs.sh OLD NEW
#
# Build first: cmake --preset release && cmake --build build/release --target mcp_load contextd
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/http/lib.sh
RUNS=${RUNS:-3}
RATES=${RATES-"500 1000 2000"}  # RATES="" for saturated runs only
DURATION=${DURATION:-8}
WARMUP=${WARMUP:-1}
DATA=${DATA:-${TMPDIR:-/tmp}}
FLOOR=${FLOOR:-1}
bench_bins "$@"
ECHO=$BUILD/bench/http/transport_echo_server
[[ $FLOOR == 0 || -x $ECHO ]] || { echo "missing $ECHO (build it first, or FLOOR=0)" >&2; exit 1; }

bench_tmp contextd-pairs

# thread_ticks PID: "tid utime+stime is_executor" per thread.
thread_ticks() {
  for t in /proc/"$1"/task/*; do
    local exec=0
    [[ $(cat "$t/comm" 2>/dev/null) == contextd-exec ]] && exec=1
    echo "${t##*/} $(awk '{print $14 + $15}' "$t/stat" 2>/dev/null || echo 0) $exec"
  done | sort
}

# run BIN LABEL [mcp_load args...]
run() {
  local bin=$1 label=$2; shift 2
  rm -rf "$TMP/data"
  "$bin" serve --data-dir "$TMP/data" "${SERVE_ARGS[@]}" 2>"$TMP/err" &
  SERVER=$!
  local url
  url=$(server_url "$TMP/err" 100)
  local metrics=${url%/mcp}/metrics
  thread_ticks "$SERVER" >"$TMP/t0"
  local out
  out=$("$LOAD" --url "$url" --sessions 16 --concurrency 16 --duration "$DURATION" \
    --warmup "$WARMUP" --branch-pairs --label "$label" "$@" 2>&1 | tail -1)
  thread_ticks "$SERVER" >"$TMP/t1"
  local m pairs commits
  m=$(curl -sf "$metrics")
  pairs=$(completed_pairs <<<"$m")
  commits=$(awk '/^contextd_store_group_commits_total\{outcome="ok"\}/ {print $2}' <<<"$m")
  stop_server
  local hz
  hz=$(getconf CLK_TCK)
  join "$TMP/t0" "$TMP/t1" | awk -v n="${pairs:-0}" -v c="${commits:-0}" -v hz="$hz" \
    -v out="$out" '{ d = $4 - $2; all += d; if ($5 == 1) top = d }
    END { if (n == 0) { print out " (no pairs completed)"; exit }
          printf "%s pairs=%d pairs_per_commit=%.1f executor_us_per_pair=%.0f all_threads_us_per_pair=%.0f\n",
                 out, n, (c > 0 ? n / c : 0), top * 1e6 / hz / n, all * 1e6 / hz / n }'
}

# floor LABEL [mcp_load args...]: the echo transport under the same load.
floor() {
  local label=$1; shift
  "$ECHO" --http --io-threads 2 2>"$TMP/echo.err" &
  SERVER=$!
  local url
  url=$(server_url "$TMP/echo.err" 100)
  "$LOAD" --url "$url" --sessions 16 --concurrency 16 --duration "$DURATION" --warmup "$WARMUP" \
    --tool echo --args '{"message":"the parser is in src/parse.c"}' --calls-per-op 2 \
    --label "$label" "$@" 2>&1 | tail -1
  stop_server
}

for ((i = 1; i <= RUNS; i++)); do
  for b in "${BINS[@]}"; do run "$b" "saturated:$b"; done
  [[ $FLOOR == 0 ]] || floor "saturated:floor"
done
for r in $RATES; do
  for b in "${BINS[@]}"; do run "$b" "rate=$r:$b" --rate "$r"; done
  [[ $FLOOR == 0 ]] || floor "rate=$r:floor" --rate "$r"
done

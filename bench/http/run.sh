#!/usr/bin/env bash
# Side-by-side HTTP and stdio benchmark: the TypeScript reference server
# (@modelcontextprotocol/server-everything, tool `echo`), contextd (tool test_simple_text of
# --conformance-fixtures; skipped until build/<dir>/src/cli/contextd-conformance, the test binary
# with the fixtures, exists) and the transports
# alone in front of the test echo engine (transport_echo_server), under the same load tool.
#
#   bench/http/run.sh                   # BUILD=build/release DURATION=10 SESSIONS=16 CONC=32
#
# Build first:  cmake --preset release && cmake --build build/release --target mcp_load \
#               stdio_pipeline transport_echo_server contextd-conformance
# Prints one line per run and the ratios; exits non-zero if a run failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${BUILD:-build/release}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
SESSIONS=${SESSIONS:-16}
CONC=${CONC:-32}
STDIO_COUNT=${STDIO_COUNT:-200000}
CONTEXTD_TOOL=${CONTEXTD_TOOL:-test_simple_text}
CONTEXTD_ARGS=${CONTEXTD_ARGS:-'{}'}
LOAD=$BUILD/bench/http/mcp_load
PIPE=$BUILD/bench/http/stdio_pipeline
ECHO=$BUILD/bench/http/transport_echo_server
CONTEXTD=$BUILD/src/cli/contextd-conformance
PEER_JS=$ROOT/tools/npm/conformance/node_modules/@modelcontextprotocol/server-everything/dist/index.js
for f in "$LOAD" "$PIPE" "$ECHO"; do
  [[ -x $f ]] || { echo "missing $f (build it first)" >&2; exit 1; }
done

ulimit -n 8192 2>/dev/null || true  # 1,000 idle connections + 200 streams + load
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
TMP=$(mktemp -d)

# start_logged NAME CMD... : starts a server, waits for "listening on URL" in its stderr.
start_logged() {
  local name=$1; shift
  "$@" >/dev/null 2>"$TMP/$name.err" &
  local pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 200); do
    if url=$(grep -o 'http://[^ ]*/mcp' "$TMP/$name.err" | head -1) && [[ -n $url ]]; then
      echo "$pid $url"; return 0
    fi
    sleep 0.05
  done
  echo "$name did not start:" >&2; cat "$TMP/$name.err" >&2; return 1
}

rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
field() { sed -n "s/.*$2=\([^ ]*\).*/\1/p" <<<"$1"; }

run_load() {  # label url tool args extra...
  local label=$1 url=$2 tool=$3 args=$4; shift 4
  local out
  out=$("$LOAD" --url "$url" --sessions "$SESSIONS" --concurrency "$CONC" --duration "$DURATION" \
    --warmup "$WARMUP" --tool "$tool" --args "$args" --label "$label" "$@") || true
  grep -v '^RESULT' <<<"$out" >&2
  grep '^RESULT' <<<"$out" || echo "RESULT label=$label rps=0 p50_ms=0 p99_ms=0 errors=failed"
}

echo "== HTTP: $SESSIONS sessions, $CONC requests in flight, ${DURATION}s (after ${WARMUP}s warm-up), $(nproc) cores"

declare -A RPS P99
# Reference server.
if [[ -f $PEER_JS ]]; then
  PEER_PORT=${PEER_PORT:-3901}
  PORT=$PEER_PORT node "$PEER_JS" streamableHttp >/dev/null 2>"$TMP/peer.err" &
  PIDS+=("$!")
  for _ in $(seq 1 200); do grep -q "listening" "$TMP/peer.err" && break; sleep 0.05; done
  r=$(run_load reference "http://127.0.0.1:$PEER_PORT/mcp" echo '{"message":"hello"}')
  RPS[reference]=$(field "$r" rps); P99[reference]=$(field "$r" p99_ms)
else
  echo "reference server not installed ($PEER_JS); run scripts/install-deps.sh" >&2
fi

# Transports alone (echo engine on its own thread, as the real engine).
read -r EPID EURL < <(start_logged echo "$ECHO" --http --io-threads 2)
sleep 0.2
echo "transport_echo_server idle RSS: $(rss_kb "$EPID") kB"
r=$(run_load transport-echo "$EURL" echo '{"message":"hello"}')
RPS[echo]=$(field "$r" rps); P99[echo]=$(field "$r" p99_ms)
r=$(run_load transport-echo-held "$EURL" echo '{"message":"hello"}' --idle-conns 1000 --sse-streams 200)
RPS[echo_held]=$(field "$r" rps); P99[echo_held]=$(field "$r" p99_ms)

# contextd itself.
if [[ -x $CONTEXTD ]]; then
  read -r CPID CURL < <(start_logged contextd "$CONTEXTD" serve --transport http \
    --listen 127.0.0.1:0 --conformance-fixtures --data-dir "$TMP/data" --log-level warn)
  sleep 0.3
  echo "contextd idle RSS: $(rss_kb "$CPID") kB"
  r=$(run_load contextd "$CURL" "$CONTEXTD_TOOL" "$CONTEXTD_ARGS")
  RPS[contextd]=$(field "$r" rps); P99[contextd]=$(field "$r" p99_ms)
  r=$(run_load contextd-held "$CURL" "$CONTEXTD_TOOL" "$CONTEXTD_ARGS" --idle-conns 1000 --sse-streams 200)
  RPS[contextd_held]=$(field "$r" rps); P99[contextd_held]=$(field "$r" p99_ms)
  echo "contextd RSS after load: $(rss_kb "$CPID") kB"
else
  echo "($CONTEXTD not built: contextd runs skipped)"
fi

echo "== stdio: $STDIO_COUNT pipelined ping requests"
"$PIPE" --count "$STDIO_COUNT" -- "$ECHO" --stdio | tee -a "$TMP/out" | grep '^stdio'
if [[ -x $CONTEXTD ]]; then
  "$PIPE" --count "$STDIO_COUNT" -- "$CONTEXTD" serve --transport stdio --data-dir "$TMP/data2" \
    --log-level warn | tee -a "$TMP/out" | grep '^stdio'
fi

echo "== ratios"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "n/a" }'; }
if [[ -n ${RPS[reference]:-} ]]; then
  echo "transport-echo / reference throughput: $(ratio "${RPS[echo]}" "${RPS[reference]}")"
  [[ -n ${RPS[contextd]:-} ]] &&
    echo "contextd / reference throughput: $(ratio "${RPS[contextd]}" "${RPS[reference]}")"
fi
echo "transport-echo p99 with 1000 idle + 200 SSE held / without: $(ratio "${P99[echo_held]}" "${P99[echo]}")"
[[ -n ${P99[contextd]:-} ]] &&
  echo "contextd p99 with 1000 idle + 200 SSE held / without: $(ratio "${P99[contextd_held]}" "${P99[contextd]}")"
exit 0

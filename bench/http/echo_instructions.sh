#!/usr/bin/env bash
# User-space instructions per tools/call of transport_echo_server --http (the HTTP transport in
# front of the test echo engine) under callgrind: steadier than requests/s on a shared VM. For
# each build dir given: starts the server under callgrind with instrumentation off, warms up with
# 3 s of mcp_load, counts DURATION s more (16 sessions, 32 in flight) and prints instructions per
# request (all threads; the kernel's share, such as socket I/O, is not counted).
#
#   bench/http/echo_instructions.sh BUILD_DIR...    # DURATION=10; KEEP=/tmp/cg keeps the
#                                                   # profiles as /tmp/cg.1, /tmp/cg.2, ...
set -euo pipefail
DURATION=${DURATION:-10}
for tool in valgrind callgrind_control; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done
TMP=$(mktemp -d)
PID=
cleanup() { [[ -n $PID ]] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
LOAD=${LOAD:-$1/bench/http/mcp_load}  # the first build's load tool for every build
kept=0
for build in "$@"; do
  rm -f "$TMP"/cg.out*
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$TMP/cg.out" \
    "$build/bench/http/transport_echo_server" --http --io-threads 2 2>"$TMP/err" >/dev/null &
  PID=$!
  url=
  for _ in $(seq 1 600); do
    url=$(grep -o 'http://[^ ]*/mcp' "$TMP/err" | head -1 || true)
    [[ -n $url ]] && break
    sleep 0.05
  done
  load() {
    "$LOAD" --url "$url" --sessions 16 --concurrency 32 --duration "$1" --warmup 0 --tool echo \
      --args '{"message":"hello"}' | grep '^RESULT'
  }
  load 3 >/dev/null
  # The valgrind wrapper may run the tool as a child process: address that one.
  vg=$(pgrep -f -- "--callgrind-out-file=$TMP/cg.out" | tail -1)
  callgrind_control -i on "$vg" >/dev/null
  out=$(load "$DURATION")
  callgrind_control -i off "$vg" >/dev/null
  callgrind_control -d "$vg" >/dev/null
  sleep 1
  rps=$(sed -n 's/.* rps=\([0-9.]*\).*/\1/p' <<<"$out")
  ir=$(cat "$TMP"/cg.out* | awk '/^totals:/ {s += $2} END {print s}')
  [[ -n ${KEEP:-} ]] && cat "$TMP"/cg.out.* >"$KEEP.$((++kept))"
  kill "$vg" "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  PID=
  awk -v ir="$ir" -v r="$rps" -v d="$DURATION" -v b="$build" \
    'BEGIN { printf "%s: %.0f requests, %.0f instructions per request\n", b, r * d, ir / (r * d) }'
done

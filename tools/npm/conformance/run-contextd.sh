#!/usr/bin/env bash
# Runs the MCP conformance suite against the test binary given as $1 (contextd-conformance: contextd
# plus the fixtures, built with the tests; the production contextd has no --conformance-fixtures):
#  1. every server scenario (active and pending) against `serve --conformance-fixtures`;
#  2. dns-rebinding-protection against a plain `serve` (no fixtures).
# Exits non-zero if any check fails or a server does not start.
set -euo pipefail
bin="$(realpath "${1:?usage: $0 path/to/contextd-conformance}")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# start NAME [serve args...] -> sets url. Not run in $(...): the pid must reach this shell's
# pids, or cleanup would leave the server running.
start() {
  local name="$1"; shift
  "$bin" serve --transport http --listen 127.0.0.1:0 --data-dir "$work/$name" "$@" \
    >"$work/$name.out" 2>"$work/$name.err" &
  pids+=("$!")
  for _ in $(seq 1 100); do
    if grep -q 'listening on' "$work/$name.err" 2>/dev/null; then
      url="$(grep -o 'http://[^ ]*/mcp' "$work/$name.err" | head -1)"
      return 0
    fi
    sleep 0.1
  done
  echo "contextd did not start:" >&2; cat "$work/$name.err" >&2; return 1
}

start fixtures --conformance-fixtures
echo "conformance: all server scenarios against $url" >&2
"$here/run.sh" "$url" --suite all | tee "$work/all.out"
grep -qE '^Total: [0-9]+ passed, 0 failed' "$work/all.out"

start plain
plain="$url"
echo "conformance: dns-rebinding-protection without fixtures against $plain" >&2
"$here/run.sh" "$plain" --scenario dns-rebinding-protection

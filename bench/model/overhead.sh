#!/usr/bin/env bash
# Model gateway overhead (bench/model/OVERHEAD.md): one ~100k-token Claude Code request sent to an
# instant provider double directly and through contextd, interleaved; prints p50/p90/p99 of the
# steady state (the conversation grows by one turn per request), cold (a new conversation each
# time) and streaming time to first event, and the added latency against the issue's targets.
#   bench/model/overhead.sh [BUILD_DIR] [--n 200] [--warmup 20] [--lane 10] [--seed 1]
#                           [--modes steady,cold,stream,floor,branch] [--callgrind N]
# `branch` (issue 33: added latency inside an open branch, isolated view and inherited side by
# side with direct) is not in the default modes and needs tools/npm/e2e (the MCP SDK).
# BUILD_DIR defaults to build/release (binary BUILD_DIR/src/cli/contextd; CONTEXTD_BINARY
# overrides). Needs node and tools/npm/tokens (scripts/install-deps.sh). Results:
# $MODEL_OVERHEAD_OUT/model-overhead.json (default $TMPDIR, else /tmp).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="build/release"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build="$1"; shift; fi
case "$build" in /*) ;; *) build="$root/$build" ;; esac
binary="${CONTEXTD_BINARY:-$build/src/cli/contextd}"
out="${MODEL_OVERHEAD_OUT:-${TMPDIR:-/tmp}}"
if [ ! -x "$binary" ]; then
  echo "bench/model/overhead: no contextd binary at $binary (build it, or set CONTEXTD_BINARY)" >&2
  exit 1
fi
if [ ! -d "$root/tools/npm/tokens/node_modules" ]; then
  echo "bench/model/overhead: tools/npm/tokens is not installed: run scripts/install-deps.sh" >&2
  exit 1
fi
case " $* " in *branch*)
  if [ ! -d "$root/tools/npm/e2e/node_modules" ]; then
    echo "bench/model/overhead: --modes branch needs tools/npm/e2e: run scripts/install-deps.sh" >&2
    exit 1
  fi ;;
esac
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg); contextd: $binary"
exec node "$here/overhead.mjs" --binary "$binary" --out "$out" "$@"

#!/usr/bin/env bash
# Replay benchmark (issue 6, "Compression, measured"): plays the recorded agent trajectories of
# ../shared/workloads/*.jsonl through contextd and reports the main-context tokens with and without
# folding, from contextd's own context_view. See bench/replay/README.md. Usage:
#   bench/replay/run.sh [BUILD_DIR] [--limit N] [--only ID_SUBSTRING] [--budget TOKENS]
# BUILD_DIR defaults to build/release (binary BUILD_DIR/src/cli/contextd; CONTEXTD_BINARY overrides).
# Needs scripts/install-deps.sh (node, tools/npm/e2e, tools/npm/tokens). Results go to
# REPLAY_OUT (default $TMPDIR/contextd-replay-bench): results.md and results.json.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="build/release"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build="$1"; shift; fi
case "$build" in /*) ;; *) build="$root/$build" ;; esac
binary="${CONTEXTD_BINARY:-$build/src/cli/contextd}"
workloads="${REPLAY_WORKLOADS:-$root/../shared/workloads}"
out="${REPLAY_OUT:-${TMPDIR:-/tmp}/contextd-replay-bench}"

if ! compgen -G "$workloads/*.jsonl" >/dev/null; then
  echo "bench/replay: skipped: no recorded trajectories ($workloads/*.jsonl not found)"
  exit 0
fi
if [ ! -x "$binary" ]; then
  echo "bench/replay: no contextd binary at $binary (build the release preset, or set CONTEXTD_BINARY)" >&2
  exit 1
fi
for d in e2e tokens; do
  if [ ! -d "$root/tools/npm/$d/node_modules" ]; then
    echo "bench/replay: tools/npm/$d is not installed: run scripts/install-deps.sh" >&2
    exit 1
  fi
done
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); contextd: $binary"
exec node "$here/replay.mjs" --binary "$binary" --workloads "$workloads" --out "$out" "$@"

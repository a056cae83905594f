#!/usr/bin/env bash
# Model benchmark (bench/model): plays the recorded trajectories of ../shared/workloads/*.jsonl as
# Claude Code conversations against a caching Anthropic double (or, with --api chat, as Chat
# Completions against an OpenAI prefix-caching double), directly and through contextd's model
# gateway, and reports tokens and cost with prompt caching. See bench/model/README.md. Usage:
#   bench/model/run.sh [BUILD_DIR] [--variants a,b] [--limit N] [--only ID_SUBSTRING]
#                      [--session-runs 3] [--stream] [--api anthropic|chat]
#                      [--trigger N] [--keep K] [--min-result M] [--clear-at-least C] [--expected-requests N]
#                      [--kinds single,session] [--form minimal|claude-code]
# BUILD_DIR defaults to build/release (binary BUILD_DIR/src/cli/contextd; CONTEXTD_BINARY overrides);
# `--variants direct` needs no contextd. Needs scripts/install-deps.sh (node, tools/npm/tokens, and
# tools/npm/e2e for the contextd variants). Results go to MODEL_BENCH_OUT (default
# $TMPDIR/contextd-model-bench): results.md and results.json.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="build/release"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then build="$1"; shift; fi
case "$build" in /*) ;; *) build="$root/$build" ;; esac
binary="${CONTEXTD_BINARY:-$build/src/cli/contextd}"
workloads="${MODEL_BENCH_WORKLOADS:-$root/../shared/workloads}"
out="${MODEL_BENCH_OUT:-${TMPDIR:-/tmp}/contextd-model-bench}"

if ! compgen -G "$workloads/*.jsonl" >/dev/null; then
  echo "bench/model: skipped: no recorded trajectories ($workloads/*.jsonl not found)"
  exit 0
fi
for d in e2e tokens; do
  if [ ! -d "$root/tools/npm/$d/node_modules" ]; then
    echo "bench/model: tools/npm/$d is not installed: run scripts/install-deps.sh" >&2
    exit 1
  fi
done
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); contextd: $binary"
exec node "$here/run.mjs" --binary "$binary" --workloads "$workloads" --out "$out" "$@"

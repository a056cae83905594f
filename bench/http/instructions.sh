#!/usr/bin/env bash
# Instructions per durable branch_create + branch_return pair over HTTP, per server thread, under
# valgrind's callgrind: steadier than CPU time on a shared VM (user-space instructions only; the
# kernel's share, such as WAL pwrite, is not counted). For each contextd binary given: starts it
# under callgrind with instrumentation off, warms up with 5 s of mcp_load --branch-pairs, counts
# 10 s more (16 sessions, 16 in flight), and prints instructions per completed pair for all
# threads and for each thread by the function it runs (executor, HTTP, checkpointer).
#
#   bench/http/instructions.sh [CONTEXTD...]    # default build/release/src/cli/contextd
#
# Needs valgrind (callgrind_control, callgrind_annotate) and curl. Takes about 30 s per binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/http/lib.sh
bench_bins "$@"
for tool in valgrind callgrind_control callgrind_annotate curl; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done

bench_tmp contextd-instr

completed() {
  curl -sf "$1" | completed_pairs
}

for bin in "${BINS[@]}"; do
  rm -rf "$TMP/data" "$TMP"/cg.out*
  valgrind --tool=callgrind --separate-threads=yes --instr-atstart=no \
    --callgrind-out-file="$TMP/cg.out" "$bin" serve --data-dir "$TMP/data" "${SERVE_ARGS[@]}" \
    2>"$TMP/err" &
  SERVER=$!
  url=$(server_url "$TMP/err" 600)  # valgrind starts slowly
  metrics=${url%/mcp}/metrics
  "$LOAD" --url "$url" --sessions 16 --concurrency 16 --duration 5 --warmup 0 --branch-pairs \
    >/dev/null 2>&1
  sleep 2
  n0=$(completed "$metrics")
  callgrind_control -i on "$SERVER" >/dev/null 2>&1
  "$LOAD" --url "$url" --sessions 16 --concurrency 16 --duration 10 --warmup 0 --branch-pairs \
    >/dev/null 2>&1
  sleep 1
  callgrind_control -i off "$SERVER" >/dev/null 2>&1
  n1=$(completed "$metrics")
  callgrind_control -d "$SERVER" >/dev/null 2>&1
  sleep 1
  stop_server
  pairs=$((n1 - n0))
  [[ $pairs -gt 0 ]] || { echo "$bin: no pairs completed" >&2; exit 1; }
  total=0
  detail=""
  for f in "$TMP"/cg.out*; do
    t=$(awk '/^totals:/ {print $2; exit}' "$f")
    [[ -n $t && $t -gt 1000 ]] || continue
    total=$((total + t))
    callgrind_annotate --inclusive=yes "$f" >"$TMP/annotated" 2>/dev/null || true
    case $(grep -o -m1 'ThreadExecutor::Loop\|scheduler::run\|CheckpointLoop' "$TMP/annotated") in
      ThreadExecutor::Loop) role=executor ;;
      scheduler::run) role=http ;;
      CheckpointLoop) role=checkpointer ;;
      *) role=other ;;
    esac
    detail+=" ${role}=$((t / pairs))"
  done
  echo "RESULT $bin pairs=$pairs instructions_per_pair=$((total / pairs))$detail"
done

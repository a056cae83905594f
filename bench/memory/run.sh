#!/usr/bin/env bash
# The ReasoningBank benchmarks of issue 18, on the recorded runs of ../shared/workloads:
# retrieval_quality (extraction rate and recall/MRR, leave-one-run-out) and memory_bench (Retrieve
# latency and footprint at 100k memories). Builds nothing; prints each program's tables, then a
# summary table.
#   bench/memory/run.sh [BUILD_DIR] [memory_bench flags, e.g. --n 20000 --queries 500]
# BUILD_DIR defaults to build/release; build first with
#   cmake --build BUILD_DIR --target memory_bench retrieval_quality
# Env: CONTEXTD_WORKLOADS (default ../shared/workloads beside the repository), MEMORY_BENCH_OUT
# (default $TMPDIR/contextd-memory-bench: the labelled set and both reports are kept there).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$root/build/release"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
  build="$1"
  shift
fi
workloads="${CONTEXTD_WORKLOADS:-$root/../shared/workloads}"
out="${MEMORY_BENCH_OUT:-${TMPDIR:-/tmp}/contextd-memory-bench}"

if ! compgen -G "$workloads/*.jsonl" >/dev/null; then
  echo "bench/memory: skipped: no *.jsonl in $workloads"
  exit 0
fi
for bin in memory_bench retrieval_quality; do
  if [ ! -x "$build/bench/memory/$bin" ]; then
    echo "bench/memory: $build/bench/memory/$bin is missing; build it with" >&2
    echo "  cmake --build $build --target memory_bench retrieval_quality" >&2
    exit 1
  fi
done
mkdir -p "$out"
export CONTEXTD_WORKLOADS="$workloads"

if command -v node >/dev/null; then
  node "$root/bench/memory/retrieval_quality.mjs" --workloads "$workloads" --out "$out/set.json"
  "$build/bench/memory/retrieval_quality" "$out/set.json" --dir "$out/quality" \
    | tee "$out/retrieval_quality.md"
else
  echo "bench/memory: retrieval_quality skipped: node is needed to write the labelled set" \
    | tee "$out/retrieval_quality.md"
fi
"$build/bench/memory/memory_bench" --workloads "$workloads" --dir "$out/bank" "$@" \
  | tee "$out/memory_bench.md"

# Summary: the numbers issue 18 asks for, picked out of the two reports.
awk '
  function cell(line, n,   f) { split(line, f, "|"); gsub(/^ +| +$/, "", f[n + 1]); return f[n + 1] }
  FNR == 1 { file++ }
  file == 1 && /^## Extraction rate/ { ext = 1 }
  file == 1 && ext && /^\| auto_confirm/ { rates = rates sprintf("| extraction rate, %s | %s of %s (%s) |\n", cell($0, 1), cell($0, 3), cell($0, 2), cell($0, 4)) }
  file == 1 && /^### / { sec = $0; sub(/^### /, "", sec) }
  file == 1 && /^\| Retrieve \(shipped floors\)/ && sec ~ /touched file$/ {
    quality = quality sprintf("| Retrieve recall@5 / MRR@10 / nothing relevant, %s | %s / %s / %s |\n", sec, cell($0, 3), cell($0, 4), cell($0, 5)) }
  file == 2 && /^load:/ { load = $0 }
  file == 2 && /^\| Retrieve \(branch/ { lat = sprintf("p50 %s, p95 %s, p99 %s, max %s (n %s)", cell($0, 3), cell($0, 4), cell($0, 5), cell($0, 6), cell($0, 2)) }
  file == 2 && /^## memory_bench/ { bank = $3 }
  file == 2 && /^footprint/ { foot = $0 }
  file == 2 && /^FTS5 index/ { fts = $0 }
  file == 2 && /^RSS/ { rss = $0 }
  function row(line,   at) {
    if (line == "") return
    at = index(line, ": ")
    printf("| %s | %s |\n", substr(line, 1, at - 1), substr(line, at + 2))
  }
  END {
    print "\n## Summary\n\n| measurement | value |\n|---|---|"
    if (lat != "") printf("| Retrieve latency (ms) at %s memories | %s |\n", bank, lat)
    row(load); row(foot); row(fts); row(rss)
    printf("%s%s", rates, quality)
  }' "$out/retrieval_quality.md" "$out/memory_bench.md"

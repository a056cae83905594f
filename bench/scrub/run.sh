#!/usr/bin/env bash
# Side-by-side scrub benchmark: contextd's scrubber vs secretlint (+ preset-recommend) on the same
# generated, labelled corpus, in one run. Prints recall, false-positive rate and single-thread
# throughput on clean, dense (~1.5 secrets/KB) and very dense text, with ratios.
#   bench/scrub/run.sh [BUILD_DIR]     (default build/scrub-rel; built RelWithDebInfo if missing)
# Env: CORPUS_DIR (default $BUILD_DIR/scrub-corpus), CLEAN_MB (16), DENSE_MB (8), SECRETLINT_MB (4),
#   WORKLOADS_DIR (default ../shared/workloads next to the repository: contextd's throughput and
#   findings on recorded agent tool output, when present).
# Then, when ../shared/compat/gitleaks is there, recall and false positives on gitleaks' own rule
# examples with gitleaks' config alone (scrub_cases_eval).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build/scrub-rel}"
corpus="${CORPUS_DIR:-$build/scrub-corpus}"
if [ ! -x "$build/bench/scrub/scrub_eval" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONTEXTD_ONLY_ROOMS="base;scrub" >/dev/null
fi
cmake --build "$build" --target scrub_eval scrub_cases_eval >/dev/null
if [ ! -d "$root/tools/npm/scrub/node_modules" ]; then
  (cd "$root/tools/npm/scrub" && npm ci --no-audit --no-fund --loglevel=error)
fi
rm -rf "$corpus"
python3 "$root/tests/scrub/gen_corpus.py" "$corpus" --clean-mb "${CLEAN_MB:-16}" \
  --dense-mb "${DENSE_MB:-8}" --very-dense-mb 2
workloads="${WORKLOADS_DIR:-$root/../shared/workloads}"
workload_args=()
if compgen -G "$workloads/*.jsonl" >/dev/null; then workload_args=(--workloads "$workloads"); fi
"$build/bench/scrub/scrub_eval" "$corpus" "$corpus/contextd.json" --min-seconds 3 "${workload_args[@]}"
node "$root/bench/scrub/secretlint_eval.mjs" "$corpus" "$corpus/secretlint.json" \
  --throughput-mb "${SECRETLINT_MB:-4}" "${workload_args[@]}"
python3 "$root/bench/scrub/score.py" "$corpus" "$corpus/contextd.json" "$corpus/secretlint.json"
compat="$root/../shared/compat/gitleaks"
if [ -f "$compat/cases.jsonl" ] && [ -f "$compat/gitleaks.toml" ]; then
  "$build/bench/scrub/scrub_cases_eval" "$compat/cases.jsonl" "$compat/gitleaks.toml" \
    --json "$corpus/gitleaks-cases.json"
fi

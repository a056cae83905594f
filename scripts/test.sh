#!/usr/bin/env bash
# Runs every test of contextd on this machine: installs dependencies, checks the include graph,
# builds and runs the unit/integration/e2e tests (ctest) in the normal build, runs the MCP
# conformance suite against the built server, then repeats ctest under ASan+UBSan and TSan, and
# builds everything with clang 14 (the fuzz preset) to replay the fuzz corpora.
#   scripts/test.sh                 everything
#   scripts/test.sh debug|asan|tsan only that build's ctest
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs="${CONTEXTD_JOBS:-$(nproc)}"
# install-deps.sh installs PostgreSQL: its tests must run here, not skip (docs/postgres.md).
export CONTEXTD_REQUIRE_POSTGRES="${CONTEXTD_REQUIRE_POSTGRES:-1}"

bash scripts/install-deps.sh
python3 scripts/check_includes.py

run_preset() {
  local preset="$1"
  echo "=== build + ctest: $preset ===" >&2
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  # The PostgreSQL suite (label postgres, one real server) runs in every preset: ~10 s debug,
  # ~15 s ASan+UBSan, ~8 s TSan on an idle machine.
  ctest --preset "$preset" -j "$jobs" --timeout 300
}

if [ $# -gt 0 ]; then
  for p in "$@"; do run_preset "$p"; done
  exit 0
fi

run_preset debug
if [ -x tools/npm/conformance/run-contextd.sh ]; then
  echo "=== MCP conformance suite ===" >&2
  tools/npm/conformance/run-contextd.sh build/debug/src/cli/contextd
fi
run_preset asan
run_preset tsan
# clang 14 builds everything too (the fuzz preset: libFuzzer targets, ASan+UBSan), so code that
# only g++ accepts cannot land; its fuzz corpora are replayed (the gcc builds replay them too).
echo "=== build (clang 14) + fuzz corpus replay: fuzz ===" >&2
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs"
ctest --test-dir build/fuzz -R '_corpus$' -j "$jobs" --timeout 300 --output-on-failure

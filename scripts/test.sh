#!/usr/bin/env bash
# Runs every test of contextd on this machine: installs dependencies, checks the include graph
# (and each room README's "Depends on" line), checks every tracked .cc/.h with clang-format, runs
# clang-tidy on the changed .cc files, builds and runs the unit/integration/e2e tests
# (ctest) in the normal build (g++ 12), runs the MCP conformance suite against the built test
# binary, repeats ctest under TSan (g++; in both g++ builds the libraries are a unity build,
# batched as the serve preset's: a file-local name defined twice in one batch fails there), then
# builds everything with clang 14 under ASan+UBSan (the fuzz preset: libFuzzer targets too) and
# repeats ctest there, fuzz corpus replays included. Three builds, not four: the g++ ASan+UBSan
# build (`asan` preset) ran the same tests as the clang one, and a full build costs ~10 minutes on
# CI's 2 cores; it stays available for local use.
#   scripts/test.sh                      everything
#   scripts/test.sh debug|asan|tsan|fuzz only that build's ctest
#   scripts/test.sh serve                only the serve build (scripts/serve.sh's, a unity build:
#                                        cmake/unity.cmake); the full run leaves it to debug
#                                        and tsan
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs="${CONTEXTD_JOBS:-$(nproc)}"
# install-deps.sh installs PostgreSQL: its tests must run here, not skip (docs/postgres.md).
export CONTEXTD_REQUIRE_POSTGRES="${CONTEXTD_REQUIRE_POSTGRES:-1}"

bash scripts/install-deps.sh
python3 scripts/check_includes.py
# ~5 s: clang-format 14 over every tracked .cc/.h (scripts/check_format.sh --fix formats them).
bash scripts/check_format.sh

run_preset() {
  local preset="$1"
  echo "=== build + ctest: $preset ===" >&2
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  # The PostgreSQL suite (label postgres, one real server) runs in every preset: ~10 s debug,
  # ~15 s ASan+UBSan, ~8 s TSan on an idle machine.
  ctest --preset "$preset" -j "$jobs" --timeout 300
}

# The serve preset compiles the server as a unity build (cmake/unity.cmake). The full run does not
# build it: the debug and tsan presets batch the same libraries the same way (~2 minutes saved on
# 2 cores).
build_serve() {
  echo "=== build: serve ===" >&2
  cmake --preset serve >/dev/null
  cmake --build --preset serve -j "$jobs" --target contextd
}

if [ $# -gt 0 ]; then
  for p in "$@"; do
    if [ "$p" = serve ]; then build_serve; else run_preset "$p"; fi
  done
  exit 0
fi

# clang-tidy 14 on the .cc files changed since main (or the previous commit), before the builds.
bash scripts/clang_tidy_changed.sh
run_preset debug
if [ -x tools/npm/conformance/run-contextd.sh ]; then
  echo "=== MCP conformance suite ===" >&2
  tools/npm/conformance/run-contextd.sh build/debug/src/cli/contextd-conformance
fi
run_preset tsan
# clang 14 builds everything (libFuzzer targets, ASan+UBSan), so code that only g++ accepts cannot
# land, and the whole ctest suite (fuzz corpus replays included) runs under ASan+UBSan there. At
# -O1 -g1 (the level ASan's documentation suggests; line tables are enough for its reports): a
# TU compiles ~30% faster than at -O2 -g, and this build was the longest of the three.
run_preset fuzz

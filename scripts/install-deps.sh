#!/usr/bin/env bash
# Installs everything contextd needs to build, test and benchmark on Debian 12 (bookworm), or with
# --run-only just what building and running the server needs (no test tools, no npm packages).
# Idempotent; run as root (or with sudo available). Only Debian packages and pinned npm packages.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# What building and running the server needs (scripts/serve.sh installs only these).
# The compilers themselves, not build-essential: its make, dpkg-dev and perl (13 packages, 13 MB
# to download, 69 MB installed) serve no step of a CMake/Ninja build (docs/decisions/0034).
RUN_PKGS=(
  gcc g++ cmake ninja-build pkg-config ca-certificates g++-12
  nlohmann-json3-dev libboost-dev libboost-system-dev libssl-dev
  libsqlite3-dev libre2-dev libutf8proc-dev libyaml-cpp-dev libcli11-dev
  libspdlog-dev libfmt-dev prometheus-cpp-dev libsodium-dev libabsl-dev libgoogle-perftools-dev
  libtomlplusplus-dev libhnswlib-dev libpq-dev
  # The Snowball stemmers of the memory room's search terms (src/memory/terms.h).
  libstemmer-dev
  # NATS events (events.nats.url, docs/events.md): optional at build time (CMake builds them when
  # libnats is found), installed here so that every build has them.
  libnats-dev
)
# What the tests, fuzzers and benchmarks need on top (scripts/test.sh, CI).
TEST_PKGS=(
  build-essential git clang-14 libclang-rt-14-dev clang-format-14 clang-tidy-14 lld-14
  libgtest-dev libgmock-dev libbenchmark-dev
  sqlite3 wrk curl procps python3
  # The trail viewer's browser tests and bench (tests/ui, bench/ui), driven by playwright-core.
  chromium
  # A real NATS server for the events tests (src/events, tests/e2e/events.test.mjs).
  nats-server
  # A real PostgreSQL server for the PostgreSQL store's tests (started by the tests themselves,
  # as `nobody` when run as root, in a temporary directory: store/testing/pg_test_server.h).
  postgresql
  # mold links the ~60 test and fuzz executables of each CI build 3-4x faster than GNU ld
  # (CMakeLists.txt uses it when it is installed).
  mold
)
only_run=0
if [ "${1:-}" = "--run-only" ]; then only_run=1; fi
PKGS=("${RUN_PKGS[@]}")
if [ "$only_run" -eq 0 ]; then
  PKGS+=("${TEST_PKGS[@]}")
  # Node.js and npm: the machine image may ship them (NodeSource); Debian's own otherwise.
  command -v node >/dev/null 2>&1 || PKGS+=(nodejs)
  command -v npm >/dev/null 2>&1 || PKGS+=(npm)
fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages used by tests, benchmarks and vocabularies: one folder per purpose under tools/npm/,
# each pinned by its package.json and package-lock.json.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "$only_run" -eq 0 ] && [ "${CONTEXTD_SKIP_NPM:-0}" != "1" ]; then
  for pj in "$here"/tools/npm/*/package.json; do
    [ -f "$pj" ] || continue
    d="$(dirname "$pj")"
    if [ -d "$d/node_modules" ] && [ "$d/node_modules/.package-lock.json" -nt "$d/package-lock.json" ]; then
      continue
    fi
    echo "npm: installing $(basename "$d")" >&2
    (cd "$d" && if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; else npm install --no-audit --no-fund --loglevel=error; fi)
  done
fi

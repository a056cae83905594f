#!/usr/bin/env bash
# Installs what building and running contextd needs (no test tools), builds the server binary
# (preset `serve`: -O2 without debug info, a unity build, without tests and benchmarks:
# docs/decisions/0034-first-build.md) and starts it on its embedded defaults
# (Streamable HTTP on 127.0.0.1:9090/mcp, data in the XDG data directory). Extra arguments go to
# `contextd serve`, e.g. `scripts/serve.sh --transport stdio`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install-deps.sh --run-only >&2
cmake --preset serve >/dev/null
cmake --build --preset serve -j "${CONTEXTD_JOBS:-$(nproc)}" --target contextd >&2
exec build/serve/src/cli/contextd serve "$@"

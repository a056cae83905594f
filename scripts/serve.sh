#!/usr/bin/env bash
# Installs what contextd needs, builds the release binary and starts the server on its embedded
# defaults (Streamable HTTP on 127.0.0.1:9090/mcp, data in the XDG data directory). Extra
# arguments go to `contextd serve`, e.g. `scripts/serve.sh --transport stdio`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install-deps.sh >&2
cmake --preset release >/dev/null
cmake --build --preset release -j "${CONTEXTD_JOBS:-$(nproc)}" --target contextd >&2
exec build/release/src/cli/contextd serve "$@"

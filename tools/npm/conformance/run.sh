#!/usr/bin/env bash
# Runs every active server scenario of the MCP conformance suite against URL and exits non-zero if
# any check fails. Usage: tools/npm/conformance/run.sh http://127.0.0.1:PORT/mcp [extra args]
# Extra args go to `conformance server` (e.g. --scenario dns-rebinding-protection, -o DIR).
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: $0 URL [conformance server options]" >&2
  exit 2
fi
url="$1"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [[ ! -f node_modules/@modelcontextprotocol/conformance/dist/index.js ]]; then
  npm ci --no-audit --no-fund >&2
fi
# The --import hook gives the suite fs.globSync on Node 20 (see README.md).
exec node --import ./fs-globsync-register.mjs \
  node_modules/@modelcontextprotocol/conformance/dist/index.js server --url "$url" "$@"

# Shared by the bench/http scripts that run contextd binaries (source it after cd to the repo).
#   bench_bins BIN...     sets BINS (default: $BUILD's contextd) and LOAD (mcp_load); exits if
#                         one is not built
#   bench_tmp NAME        makes the scratch dir TMP under ${DATA:-$TMPDIR}, removed at exit,
#                         with the server whose pid is in SERVER killed first
#   server_url ERRFILE N  prints the MCP URL a starting server logged to ERRFILE, polling N
#                         times every 0.1 s; exits with the log if none appears
#   stop_server           kills SERVER and waits for it
#   completed_pairs       branches completed, read from metrics text on stdin
#   SERVE_ARGS            contextd serve arguments after --data-dir: loopback, port 0, no
#                         branch-creation rate limit
BUILD=${BUILD:-build/release}
LOAD=$BUILD/bench/http/mcp_load
SERVE_ARGS=(--listen 127.0.0.1:0 --set context_folding.branch_creation_rate_limit=1000000/second)

bench_bins() {
  BINS=("$@")
  [[ ${#BINS[@]} -gt 0 ]] || BINS=("$BUILD/src/cli/contextd")
  local f
  for f in "$LOAD" "${BINS[@]}"; do
    [[ -x $f ]] || { echo "missing $f (build it first)" >&2; exit 1; }
  done
}

server_url() {
  local url="" i
  for ((i = 0; i < $2; i++)); do
    url=$(grep -o 'http://[^ ]*/mcp' "$1" | head -1) && [[ -n $url ]] && break
    sleep 0.1
  done
  [[ -n $url ]] || { echo "the server did not start:" >&2; cat "$1" >&2; exit 1; }
  echo "$url"
}

bench_tmp() {
  TMP=$(mktemp -d "${DATA:-${TMPDIR:-/tmp}}/$1.XXXXXX")
  SERVER=""
  trap 'stop_server; rm -rf "$TMP"' EXIT
}

stop_server() {
  [[ -z $SERVER ]] && return 0
  kill "$SERVER" 2>/dev/null || true
  wait "$SERVER" 2>/dev/null || true
  SERVER=""
}

completed_pairs() {
  awk '/^contextd_branches_finished_total\{status="completed"\}/ {print $2}'
}

#!/usr/bin/env bash
# Token-counting benchmark: contextd (C++) next to the npm peers gpt-tokenizer and tiktoken, on the
# same 50 MiB mixed corpus, plus the long-unbroken-string worst case and the memory of both
# vocabularies. Single thread each. Usage:
#   bench/tokens/run.sh [BUILD_DIR]     (default build/tokens-bench; configured Release if missing)
# Needs: scripts/install-deps.sh (node + tools/npm/tokens). Work files go to $TMPDIR/contextd-tokens-bench.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-$root/build/tokens-bench}"
work="${TMPDIR:-/tmp}/contextd-tokens-bench"
peer_timeout="${PEER_TIMEOUT:-60}"
mkdir -p "$work"

if [ ! -d "$root/tools/npm/tokens/node_modules/tiktoken" ]; then
  echo "tools/npm/tokens is not installed: run scripts/install-deps.sh" >&2
  exit 1
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONTEXTD_ONLY_ROOMS="base;tokens" >/dev/null
fi
cmake --build "$build" --target tokens_bench >/dev/null
bench="$build/bench/tokens/tokens_bench"

corpus="$work/corpus.txt"
[ -f "$corpus" ] || python3 "$here/make_corpus.py" "$corpus"
python3 - "$work" <<'PY'
import random, sys
for name, size in (("worst_1m.txt", 1 << 20), ("worst_256k.txt", 1 << 18)):
    r = random.Random(1)
    open(f"{sys.argv[1]}/{name}", "w").write("".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(size)))
PY
echo "corpus: $corpus $(stat -c %s "$corpus") bytes sha256 $(sha256sum "$corpus" | cut -c1-16)"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

results="$work/results.txt"
: >"$results"
"$bench" corpus "$corpus" 3 | tee -a "$results"
node "$here/peers.mjs" corpus "$corpus" 1 | tee -a "$results"
"$bench" worst "$work/worst_1m.txt" | tee -a "$results"
"$bench" worst "$work/worst_256k.txt" | tee -a "$results"
for peer in gpt-tokenizer tiktoken; do
  if ! timeout "$peer_timeout" node "$here/peers.mjs" worst "$work/worst_256k.txt" "$peer" o200k_base | tee -a "$results"; then
    echo "$peer worst o200k_base bytes=262144 tokens=? wall_s=>$peer_timeout (killed by timeout)" | tee -a "$results"
  fi
done
"$bench" rss | tee -a "$results"

python3 - "$results" <<'PY'
import re, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    kv = dict(x.split("=", 1) for x in f if "=" in x)
    if "MBps_cpu" in kv:
        rows[(f[0], f[1])] = kv
print("\nsummary (single thread; MB = 1e6 bytes; cpu = thread/process CPU time, wall = elapsed)")
for enc in ("o200k_base", "cl100k_base"):
    me = rows.get(("contextd", enc))
    if not me:
        continue
    line = f"  {enc}: contextd {me['MBps_wall']} MB/s wall, {me['MBps_cpu']} MB/s cpu"
    for peer in ("gpt-tokenizer", "tiktoken"):
        p = rows.get((peer, enc))
        if p:
            same = "same count" if p["tokens"] == me["tokens"] else f"COUNT DIFFERS ({p['tokens']} vs {me['tokens']})"
            line += (f"; {peer} {p['MBps_wall']} MB/s wall ({float(me['MBps_wall']) / float(p['MBps_wall']):.1f}x),"
                     f" {p['MBps_cpu']} cpu ({float(me['MBps_cpu']) / float(p['MBps_cpu']):.1f}x), {same}")
    print(line)
PY

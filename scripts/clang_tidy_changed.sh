#!/usr/bin/env bash
# Runs clang-tidy 14 (the repo's .clang-tidy) on the .cc files under src/ and bench/ that changed
# since the merge base with origin/main (or main); on main itself, or on a fresh clone where only
# main exists, since the previous commit. Uncommitted changes count. Uses the compile_commands.json
# of the tidy preset (configured here if absent, never built: the debug build batches its
# libraries as a unity build, so its compile commands do not name each file). Fails only on
# what .clang-tidy's WarningsAsErrors makes an error (and on files clang cannot compile); other
# warnings are printed.
#   scripts/clang_tidy_changed.sh [BASE]     BASE: a commit to diff against instead
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tidy="${CLANG_TIDY:-clang-tidy-14}"
if ! command -v "$tidy" >/dev/null; then
  echo "clang-tidy: $tidy not installed, skipped" >&2
  exit 0
fi

base="${1:-}"
if [ -z "$base" ]; then
  head="$(git rev-parse HEAD)"
  for ref in origin/main main; do
    if git rev-parse -q --verify "$ref^{commit}" >/dev/null; then
      mb="$(git merge-base HEAD "$ref")"
      if [ "$mb" != "$head" ]; then base="$mb"; break; fi
    fi
  done
  [ -n "$base" ] || base="$(git rev-parse -q --verify HEAD~1 || true)"
fi
if [ -z "$base" ]; then
  echo "clang-tidy: no previous commit to compare with, skipped" >&2
  exit 0
fi

mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$base" -- 'src/*.cc' 'bench/*.cc')
if [ "${#files[@]}" -eq 0 ]; then
  echo "clang-tidy: no .cc file changed since $(git rev-parse --short "$base")" >&2
  exit 0
fi
if [ ! -f build/tidy/compile_commands.json ]; then
  cmake --preset tidy >/dev/null
fi
# Only files the build compiles (compile_commands.json knows their flags).
mapfile -t files < <(python3 - "${files[@]}" <<'PY'
import json, os, sys
db = {os.path.realpath(e["file"]) for e in json.load(open("build/tidy/compile_commands.json"))}
for f in sys.argv[1:]:
    if os.path.realpath(f) in db:
        print(f)
PY
)
echo "clang-tidy: ${#files[@]} changed .cc file(s) since $(git rev-parse --short "$base")" >&2
[ "${#files[@]}" -eq 0 ] && exit 0
jobs="${CONTEXTD_JOBS:-$(nproc)}"
printf '%s\0' "${files[@]}" | xargs -0 -n 1 -P "$jobs" "$tidy" -p build/tidy --quiet
